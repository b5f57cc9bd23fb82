import Foundation

/// An option declared once, typed: its name, JSON kind, default and help (the `OptionSpec` that
/// validates specs and fills `voxpipe stages`, the schema and the docs), and the Swift type its
/// value reads as. A stage keeps its options as static members and reads them by declaration,
/// never by string and never with its default given again:
///
/// ```swift
/// static let minSilence = StageOption<Double>(
///     "minSilence", .number(0.01...60), default: 0.5, help: "voice: a pause this long ends a segment.")
/// static let options = [minSilence.spec, …]
/// …
/// let seconds = options[Self.minSilence]        // Double: the spec's value, else 0.5
/// ```
///
/// An option whose default depends on other options (a mode's) is a `StageOption<Value?>`
/// declared without a default: it reads as nil when the spec leaves it out.
public struct StageOption<Value: OptionValue>: Sendable {
    public private(set) var spec: OptionSpec
    /// The value when the spec leaves the option out.
    public let fallback: Value

    public var name: String { spec.name }

    public init(_ name: String, _ kind: OptionSpec.Kind, default fallback: Value, help: String) {
        self.fallback = fallback
        spec = OptionSpec(name, kind, default: fallback.json, help: help)
    }
}

extension StageOption {
    /// This option, applying only where `option` (a mode, a format: a choice or a boolean of the
    /// same block) is one of `values`: declared here, checked at load for every stage alike and
    /// emitted to the schema.
    ///
    /// ```swift
    /// static let minSilence = StageOption<Double>(…).only(where: mode, is: .voice)
    /// ```
    public func only<Other>(where option: StageOption<Other>, is values: Other...) -> StageOption {
        var copy = self
        copy.spec.appliesWhen.append(OptionCondition(option: option.name, values: values.compactMap(\.json)))
        return copy
    }
}

extension StageOption where Value: CaseIterable & RawRepresentable, Value.RawValue == String {
    /// A choice among an enum's cases (`mode`: window, voice, …), its kind generated from them.
    public init(_ name: String, default fallback: Value, help: String) {
        self.init(name, .choice(Value.allCases.map(\.rawValue)), default: fallback, help: help)
    }
}

/// What an option's value can be read as.
public protocol OptionValue: Sendable {
    /// The value of this JSON, nil when it is not one (a spec is validated before it is read).
    init?(json: JSONValue)
    /// As the schema and `voxpipe stages` show the default; null for none.
    var json: JSONValue? { get }
}

extension Double: OptionValue {
    public init?(json: JSONValue) {
        guard let value = json.numberValue else { return nil }
        self = value
    }
    public var json: JSONValue? { .number(self) }
}

extension Int: OptionValue {
    public init?(json: JSONValue) {
        guard let value = json.numberValue.flatMap({ Int(exactly: $0) }) else { return nil }
        self = value
    }
    public var json: JSONValue? { .number(Double(self)) }
}

extension Bool: OptionValue {
    public init?(json: JSONValue) {
        guard let value = json.boolValue else { return nil }
        self = value
    }
    public var json: JSONValue? { .bool(self) }
}

extension String: OptionValue {
    public init?(json: JSONValue) {
        guard let value = json.stringValue else { return nil }
        self = value
    }
    public var json: JSONValue? { .string(self) }
}

extension Array: OptionValue where Element: OptionValue {
    public init?(json: JSONValue) {
        guard let values = json.arrayValue else { return nil }
        self = values.compactMap { Element(json: $0) }
    }
    public var json: JSONValue? { .array(compactMap(\.json)) }
}

extension Dictionary: OptionValue where Key == String, Value: OptionValue {
    public init?(json: JSONValue) {
        guard let object = json.objectValue else { return nil }
        self = object.compactMapValues { Value(json: $0) }
    }
    public var json: JSONValue? { .object(compactMapValues(\.json)) }
}

extension Optional: OptionValue where Wrapped: OptionValue {
    /// Always a value: a JSON that is not the wrapped type reads as nil.
    public init?(json: JSONValue) { self = Wrapped(json: json) }
    public var json: JSONValue? { self?.json }
}

extension OptionValue where Self: RawRepresentable, RawValue == String {
    public init?(json: JSONValue) {
        guard let value = json.stringValue.flatMap(Self.init(rawValue:)) else { return nil }
        self = value
    }
    public var json: JSONValue? { .string(rawValue) }
}

extension StageOption where Value: ExpressibleByNilLiteral {
    /// An option with no default of its own: nil when the spec leaves it out.
    public init(_ name: String, _ kind: OptionSpec.Kind, help: String) {
        self.init(name, kind, default: nil, help: help)
    }
}

extension StageOptions {
    /// The option's value in the spec, else its declared default.
    public subscript<Value>(_ option: StageOption<Value>) -> Value {
        values[option.name].flatMap { Value(json: $0) } ?? option.fallback
    }

    /// Whether the spec set the option.
    public func isSet<Value>(_ option: StageOption<Value>) -> Bool { isSet(option.name) }

    /// A path option resolved against the spec's folder; nil when the spec leaves it out.
    public func url(_ option: StageOption<String?>) -> URL? {
        self[option].map { URL(fileURLWithPath: $0, relativeTo: baseDirectory).standardizedFileURL }
    }

    /// A path option with a default, resolved against the spec's folder (an absolute default
    /// stays as it is).
    public func url(_ option: StageOption<String>) -> URL {
        URL(fileURLWithPath: self[option], relativeTo: baseDirectory).standardizedFileURL
    }

    /// A `namedPaths` option: each name with its path resolved against the spec's folder, in
    /// the order of the names.
    public func urls(_ option: StageOption<[String: String]>) -> [(name: String, url: URL)] {
        self[option].sorted { $0.key < $1.key }.map {
            ($0.key, URL(fileURLWithPath: $0.value, relativeTo: baseDirectory).standardizedFileURL)
        }
    }

    /// An invalid-spec error about the option, naming its JSON path.
    public func error<Value>(_ option: StageOption<Value>, _ message: String) -> VoxError {
        error(option.name, message)
    }
}
