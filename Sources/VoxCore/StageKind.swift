import Foundation

/// A stage kind with its types erased, so a registry can hold them all in one array and the
/// planner can work from a spec's strings: what the kind is (its name, types, options, facts),
/// and `configure`, which reads a spec's options into a `ConfiguredStage`.
public struct StageKind: Sendable {
    public let kind: String
    public let summary: String
    public let inputs: [PayloadType]
    public let output: PayloadType
    public let options: [OptionSpec]
    public let factsGiven: [ItemFact]
    /// What a first stage of this kind reads, by extension.
    public let inputExtensions: Set<String>
    public let factsUsed: [ItemFact]
    /// What a stage of this kind needs declared by every stage it reads from.
    public let declarationsUsed: [StageDeclaration]
    /// Reads validated options into the stage as configured (`Stage.configure`).
    public let configure: @Sendable (StageOptions) throws -> ConfiguredStage

    public init<S: Stage>(_ type: S.Type) {
        kind = S.kind
        summary = S.summary
        inputs = S.Input.accepted
        output = S.Output.payloadType
        options = S.options
        factsGiven = S.factsGiven
        inputExtensions = S.inputExtensions
        factsUsed = S.factsUsed
        declarationsUsed = S.declarationsUsed
        configure = { ConfiguredStage(S.self, try S.configure($0)) }
    }

    /// The input types as people read them: "AudioBlock | AudioChunk".
    public var inputDescription: String { inputs.map(\.rawValue).joined(separator: " | ") }

    /// Whether a stage of this kind can be fed a value of type `type`.
    public func accepts(_ type: PayloadType) -> Bool { inputs.contains { type.carries($0) } }
}

/// One stage as its spec configured it, what a plan node holds: its kind, and what the kind says
/// of this configuration (`Stage.declarations`, `provenance`, `demand`, `identityFiles`), read
/// once from the typed configuration. What depends on more than the configuration (the format
/// fed, the stage's id) is asked of closures that hold the configuration typed: nothing is cast
/// back from `any Sendable`.
public struct ConfiguredStage: Sendable {
    public let kind: StageKind
    /// The configuration `configure` gave, for code that knows the kind (tests read it by type).
    public let configuration: any Sendable
    public let declarations: StageDeclarations
    public let provenance: [String: JSONValue]?
    public let demand: StreamDemand
    public let identityFiles: [URL]
    private let formatGiven: @Sendable (StreamFormat) throws -> StreamFormat
    private let outputs: @Sendable (String, PayloadType) -> [String]
    private let make: @Sendable (String, StageContext) throws -> any StageRunner
    private let turn: @Sendable (Double) -> ConfiguredStage
    private let translated: @Sendable () -> ConfiguredStage?

    public init<S: Stage>(_ type: S.Type, _ configuration: S.Configuration) {
        kind = StageKind(S.self)
        self.configuration = configuration
        declarations = S.declarations(configuration)
        provenance = S.provenance(configuration)
        demand = S.demand(configuration)
        identityFiles = S.identityFiles(configuration)
        formatGiven = { try S.outputFormat(configuration, input: $0) }
        outputs = { S.plannedOutputs(configuration, id: $0, input: $1) }
        make = { id, context in StageBox(stage: try S(id: id, configuration: configuration, context: context)) }
        turn = { ConfiguredStage(S.self, S.oneTurn(configuration, maxSeconds: $0)) }
        // Translating is a capability a configuration may have (`Translatable`), asked of it here.
        translated = {
            ((configuration as? any Translatable)?.translating() as? S.Configuration).map {
                ConfiguredStage(S.self, $0)
            }
        }
    }

    /// The format of the stream the stage gives when fed `input` (`Stage.outputFormat`).
    public func outputFormat(input: StreamFormat) throws -> StreamFormat { try formatGiven(input) }

    /// The files a stage with `id` writes in an item's folder (`Stage.plannedOutputs`).
    public func plannedOutputs(id: String, input: PayloadType) -> [String] { outputs(id, input) }

    /// A stage instance for a run (`Stage.init`).
    public func instantiate(id: String, context: StageContext) throws -> any StageRunner { try make(id, context) }

    /// The stage taking one request of up to `maxSeconds` as one turn (`Stage.oneTurn`).
    public func oneTurn(maxSeconds: Double) -> ConfiguredStage { turn(maxSeconds) }

    /// The stage translating into English (`Translatable`); nil when it cannot.
    public func translating() -> ConfiguredStage? { translated() }
}

/// A stage instance with its types erased: what the runner drives.
public protocol StageRunner: Sendable {
    func prepare() async throws
    func run(input: PayloadChannel, output: [PayloadChannel], sink: (any OutputSink)?, item: ItemContext) async throws
}

struct StageBox<S: Stage>: StageRunner {
    let stage: S

    func prepare() async throws { try await stage.prepare() }

    func run(input: PayloadChannel, output: [PayloadChannel], sink: (any OutputSink)?, item: ItemContext) async throws {
        try await stage.run(Inbox<S.Input>(input), Outbox<S.Output>(channels: output, sink: sink), item)
    }
}

/// Every stage kind the executable knows, by `kind` string.
public struct StageRegistry: Sendable {
    public let kinds: [StageKind]

    public init(_ kinds: [StageKind]) { self.kinds = kinds }

    public subscript(kind: String) -> StageKind? { kinds.first { $0.kind == kind } }
}
