import Foundation

/// A key that names a value and fixes its type, in the idiom of swift-nio's `ChannelOption`: what
/// item facts (`ItemFactKey`) and stage declarations (`StageDeclarationKey`) are read and written
/// by, so no stage reads another's value by string. `Domain` (the container the values live in)
/// keeps keys of one kind from being used for another. Keys are static members of constrained
/// extensions:
///
/// ```swift
/// extension ItemFactKey where Value == AudioFormat {
///     public static var sourceFormat: Self { Self("sourceFormat") }
/// }
/// ```
public struct TypedKey<Domain, Value: Sendable>: Sendable {
    /// The key with its value's type erased, for lists of keys.
    public let erased: AnyTypedKey<Domain>

    public init(_ name: String) { erased = AnyTypedKey(name: name) }
}

/// A typed key with its value's type erased: what a stage lists (`Stage.factsUsed`,
/// `Stage.declarationsUsed`) and the planner checks.
public struct AnyTypedKey<Domain>: Hashable, Sendable, CustomStringConvertible {
    /// The key's name, as the planner's errors say it (`sourceFormat`).
    public let name: String

    public var description: String { name }

    /// The keys given, erased, for a stage's lists: `ItemFact.list(.sourceFormat, .audioSeconds)`.
    public static func list<each Value>(_ keys: repeat TypedKey<Domain, each Value>) -> [AnyTypedKey] {
        var erased: [AnyTypedKey] = []
        for key in repeat each keys { erased.append(key.erased) }
        return erased
    }
}

/// Values by typed key, each of its key's type: the storage of item facts and stage declarations.
public struct TypedValues<Domain>: Sendable {
    private var values: [AnyTypedKey<Domain>: any Sendable] = [:]

    public init() {}

    /// The value set for `key`, if any.
    public subscript<Value>(_ key: TypedKey<Domain, Value>) -> Value? {
        get { values[key.erased] as? Value }
        set { values[key.erased] = newValue }
    }

    /// Whether a value is set for `key`.
    public func contains(_ key: AnyTypedKey<Domain>) -> Bool { values[key] != nil }
}
