import Foundation

/// A stage declaration's typed key, as `ItemFactKey` is an item fact's: a stage kind declares,
/// from its configuration, what the stages it feeds or the run's records need to know about it
/// (an agent its record types), and they read it typed (VoxFieldService's `declarations[.recordTypes]`
/// is a `[String]?`), never by kind string or from another stage's options.
public typealias StageDeclarationKey<Value: Sendable> = TypedKey<StageDeclarations, Value>

/// A stage declaration named with its type erased: what a stage needs declared by the stages it
/// reads from (`Stage.declarationsUsed`), which the planner checks when the spec loads.
public typealias StageDeclaration = AnyTypedKey<StageDeclarations>

extension StageDeclarationKey where Value == StreamFormat {
    /// That the stage converts the audio's rate or channels, and the format it gives (nil parts
    /// keep the input's): the role evidence records as the run's resamplers.
    public static var resampling: Self { Self("resampling") }
}

/// What one stage declares (`Stage.declarations`), by typed key.
public struct StageDeclarations: Sendable {
    private var values = TypedValues<StageDeclarations>()

    public init() {}

    /// The value declared for `key`, if any.
    public subscript<Value>(_ key: StageDeclarationKey<Value>) -> Value? {
        get { values[key] }
        set { values[key] = newValue }
    }

    /// These declarations with `value` declared for `key`.
    public func declaring<Value>(_ key: StageDeclarationKey<Value>, _ value: Value) -> StageDeclarations {
        var copy = self
        copy[key] = value
        return copy
    }

    /// Whether a value is declared for `declaration`.
    public func declares(_ declaration: StageDeclaration) -> Bool { values.contains(declaration) }
}

/// One stage of a plan as other stages see it: its id and kind, what it declares, and what it
/// contributes to provenance records. The runner hands each stage the ones it reads from
/// (`StageContext.upstream`) and every one of the plan (`Provenance.stages`).
public struct PlannedStage: Sendable {
    public var id: String
    public var kind: String
    public var declarations: StageDeclarations
    /// What the stage contributes to provenance records (`Stage.provenance`); nil for nothing.
    public var provenance: [String: JSONValue]?

    public init(
        id: String, kind: String, declarations: StageDeclarations = StageDeclarations(),
        provenance: [String: JSONValue]? = nil
    ) {
        self.id = id
        self.kind = kind
        self.declarations = declarations
        self.provenance = provenance
    }

    /// The stage's provenance record as evidence keeps it: what it contributes, with its `id` and
    /// `kind`; nil when it contributes nothing.
    public var record: JSONValue? {
        provenance.map { .object($0.merging(["id": .string(id), "kind": .string(kind)]) { _, b in b }) }
    }
}
