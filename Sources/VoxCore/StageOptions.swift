import Foundation

/// One option a stage kind accepts in a spec: its name, JSON type, default and help. The same
/// declaration validates specs, fills `voxpipe stages` and generates the JSON Schema.
public struct OptionSpec: Sendable {
    /// The JSON shapes an option can take.
    public enum Kind: Sendable {
        case integer(ClosedRange<Int>)
        case number(ClosedRange<Double>)
        case boolean
        case string
        /// A path, resolved against the spec's folder.
        case path
        /// One of a closed set of strings.
        case choice([String])
        /// An integer in a range, or one of a closed set of strings ("channels": 1 or "keep").
        case integerOrChoice(ClosedRange<Int>, [String])
        /// An array of strings from a closed set.
        case choices([String])
        /// An object of names to paths (`{"Tutor": "voices/anna.wav"}`), each path resolved against
        /// the spec's folder.
        case namedPaths
        /// A provider block: `{"name": …, …}` with options that depend on the provider.
        case provider([ProviderSpec])
        /// The id of another stage of the spec, of one of these kinds (any kind when empty): a
        /// reference the planner resolves and checks at load, like `from`.
        case stage([String])
    }

    public var name: String
    public var kind: Kind
    public var defaultValue: JSONValue?
    public var help: String
    /// Where the option applies: each condition names another option of the same block and the
    /// values it must have (set, or by its default); empty: everywhere. Set by `StageOption.only`.
    /// Checked when a spec loads (an option set where it does not apply is an error naming its
    /// JSON path) and emitted to the JSON Schema as one `oneOf` branch per value of the option
    /// named, so an editor refuses it too.
    public var appliesWhen: [OptionCondition] = []

    public init(_ name: String, _ kind: Kind, default defaultValue: JSONValue? = nil, help: String) {
        self.name = name
        self.kind = kind
        self.defaultValue = defaultValue
        self.help = help
    }

    /// A short description of the accepted values, for `voxpipe stages` and error messages.
    public var typeDescription: String {
        switch kind {
        case .integer(let r): "integer \(r.lowerBound)…\(r.upperBound)"
        case .number(let r): "number \(format(r.lowerBound))…\(format(r.upperBound))"
        case .boolean: "boolean"
        case .string: "string"
        case .path: "path"
        case .choice(let c): c.map { "\"\($0)\"" }.joined(separator: " | ")
        case .integerOrChoice(let r, let c):
            "integer \(r.lowerBound)…\(r.upperBound) | " + c.map { "\"\($0)\"" }.joined(separator: " | ")
        case .choices(let c): "[" + c.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
        case .namedPaths: "{name: path}"
        case .provider(let p): "provider: " + p.map(\.name).joined(separator: " | ")
        case .stage(let kinds): kinds.isEmpty ? "stage id" : "id of a " + kinds.joined(separator: " | ") + " stage"
        }
    }

    /// Checks one value against this option; the error names the JSON path.
    public func validate(_ value: JSONValue, path: String) throws {
        func fail(_ why: String) -> VoxError { VoxError(.invalidSpec, "\(path): \(why)") }
        switch kind {
        case .integer(let range):
            guard let n = value.numberValue, n.rounded() == n, let i = Int(exactly: n) else {
                throw fail("expected an integer, got \(value.typeDescription)")
            }
            guard range.contains(i) else { throw fail("\(i) is out of range \(range.lowerBound)…\(range.upperBound)") }
        case .number(let range):
            guard let n = value.numberValue else { throw fail("expected a number, got \(value.typeDescription)") }
            guard range.contains(n) else {
                throw fail("\(format(n)) is out of range \(format(range.lowerBound))…\(format(range.upperBound))")
            }
        case .boolean:
            guard value.boolValue != nil else { throw fail("expected a boolean, got \(value.typeDescription)") }
        case .string, .path:
            guard let s = value.stringValue else { throw fail("expected a string, got \(value.typeDescription)") }
            if case .path = kind, s.isEmpty { throw fail("expected a path, got an empty string") }
        case .stage:
            guard value.stringValue != nil else {
                throw fail("expected a stage id, got \(value.typeDescription)")
            }
        case .choice(let choices):
            guard let s = value.stringValue else {
                throw fail("expected one of \(typeDescription), got \(value.typeDescription)")
            }
            guard choices.contains(s) else { throw fail("\"\(s)\" is not one of \(typeDescription)") }
        case .integerOrChoice(let range, let choices):
            if let s = value.stringValue {
                guard choices.contains(s) else { throw fail("\"\(s)\" is not one of \(typeDescription)") }
            } else if let n = value.numberValue, let i = Int(exactly: n) {
                guard range.contains(i) else {
                    throw fail("\(i) is out of range \(range.lowerBound)…\(range.upperBound)")
                }
            } else {
                throw fail("expected \(typeDescription), got \(value.typeDescription)")
            }
        case .choices(let choices):
            guard let array = value.arrayValue else {
                throw fail("expected an array of strings, got \(value.typeDescription)")
            }
            if array.isEmpty {
                throw fail("expected at least one of \(choices.map { "\"\($0)\"" }.joined(separator: ", "))")
            }
            for (i, element) in array.enumerated() {
                guard let s = element.stringValue, choices.contains(s) else {
                    throw VoxError(
                        .invalidSpec,
                        "\(path)[\(i)]: expected one of \(choices.map { "\"\($0)\"" }.joined(separator: " | "))")
                }
            }
        case .namedPaths:
            guard let object = value.objectValue else {
                throw fail("expected an object of names to paths, got \(value.typeDescription)")
            }
            for name in object.keys.sorted() {
                guard !name.trimmingCharacters(in: .whitespaces).isEmpty else { throw fail("a name is empty") }
                guard let file = object[name]?.stringValue, !file.isEmpty else {
                    throw VoxError(.invalidSpec, "\(path).\(name): expected a path")
                }
            }
        case .provider(let providers):
            guard let object = value.objectValue else {
                throw fail("expected an object with a \"name\", got \(value.typeDescription)")
            }
            guard let name = object["name"]?.stringValue else {
                throw VoxError(
                    .invalidSpec,
                    "\(path).name: expected a provider name: \(providers.map(\.name).joined(separator: ", "))")
            }
            guard let provider = providers.first(where: { $0.name == name }) else {
                throw VoxError(
                    .invalidSpec,
                    "\(path).name: unknown provider \"\(name)\" (known: "
                        + "\(providers.map(\.name).joined(separator: ", ")))"
                )
            }
            try validateOptions(
                object.filter { $0.key != "name" }, against: provider.options, path: path, owner: "provider \(name)")
        }
    }
}

/// That an option applies only where another option (a mode, a format) has one of `values`.
public struct OptionCondition: Sendable, Equatable {
    public var option: String
    public var values: [JSONValue]

    public init(option: String, values: [JSONValue]) {
        self.option = option
        self.values = values
    }

    /// The values as a message lists them: `window, tail or whole`.
    var valuesDescription: String {
        let names = values.map(\.conditionText)
        return names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + " or " + names.last!
    }
}

extension JSONValue {
    /// A string as it is, anything else as JSON: how a condition's value is named in messages.
    fileprivate var conditionText: String { stringValue ?? String(decoding: canonicalData(), as: UTF8.self) }
}

/// A provider of a stage (pocketsphinx, openai, …) and the options its block takes.
public struct ProviderSpec: Sendable {
    public var name: String
    public var summary: String
    public var options: [OptionSpec]

    public init(name: String, summary: String, options: [OptionSpec]) {
        self.name = name
        self.summary = summary
        self.options = options
    }
}

/// Checks an options object against declared options: unknown names first, then each value.
func validateOptions(_ values: [String: JSONValue], against specs: [OptionSpec], path: String, owner: String) throws {
    for key in values.keys.sorted() where !specs.contains(where: { $0.name == key }) {
        let known = specs.map(\.name).joined(separator: ", ")
        throw VoxError(
            .invalidSpec,
            "\(path).\(key): unknown option for \(owner)" + (known.isEmpty ? " (it takes none)" : " (known: \(known))"))
    }
    for spec in specs {
        if let value = values[spec.name] { try spec.validate(value, path: "\(path).\(spec.name)") }
    }
    for spec in specs where values[spec.name] != nil {
        // A block that does not declare the deciding option (write-wav, without a format) is not bound by it.
        for condition in spec.appliesWhen {
            guard let decider = specs.first(where: { $0.name == condition.option }) else { continue }
            let actual = values[condition.option] ?? decider.defaultValue
            if let actual, condition.values.contains(actual) { continue }
            throw VoxError(
                .invalidSpec,
                "\(path).\(spec.name): applies only where \(condition.option) is \(condition.valuesDescription) (here: "
                    + "\(actual?.conditionText ?? "unset"))")
        }
    }
}

private func format(_ x: Double) -> String {
    x.rounded() == x && abs(x) < 1e15 ? String(Int64(x)) : String(x)
}

/// The validated options of one stage (or one provider block), with defaults filled in. A
/// stage's `configure` reads its typed configuration from here.
public struct StageOptions: Sendable {
    /// The stage's id and JSON path (`stages[2]`), for messages.
    public let stageID: String
    public let path: String
    /// The folder relative paths resolve against (the spec's folder).
    public let baseDirectory: URL
    let values: [String: JSONValue]
    let specs: [OptionSpec]

    public init(stageID: String, path: String, baseDirectory: URL, values: [String: JSONValue], specs: [OptionSpec]) {
        self.stageID = stageID
        self.path = path
        self.baseDirectory = baseDirectory
        self.values = values
        self.specs = specs
    }

    /// Checks `values` against the declared options as a spec's stage is checked (unknown names
    /// first, then each value; messages name `path` and `owner`) and returns them as the options
    /// a stage's `configure` reads. The planner configures every stage through here; so does the
    /// stage harness (VoxTesting).
    public static func validated(
        _ values: [String: JSONValue], against specs: [OptionSpec], stageID: String, path: String, owner: String,
        baseDirectory: URL
    ) throws -> StageOptions {
        try validateOptions(values, against: specs, path: path, owner: owner)
        return StageOptions(stageID: stageID, path: path, baseDirectory: baseDirectory, values: values, specs: specs)
    }

    /// The value given in the spec, else the declared default.
    public func value(_ name: String) -> JSONValue? {
        values[name] ?? specs.first(where: { $0.name == name })?.defaultValue
    }

    /// Whether the spec set this option explicitly.
    public func isSet(_ name: String) -> Bool { values[name] != nil }

    public func int(_ name: String) -> Int? { value(name)?.numberValue.flatMap { Int(exactly: $0) } }
    public func double(_ name: String) -> Double? { value(name)?.numberValue }
    public func bool(_ name: String) -> Bool? { value(name)?.boolValue }
    public func string(_ name: String) -> String? { value(name)?.stringValue }
    public func strings(_ name: String) -> [String]? { value(name)?.arrayValue?.compactMap(\.stringValue) }

    /// A path option resolved against the spec's folder.
    public func url(_ name: String) -> URL? {
        guard let s = string(name) else { return nil }
        return URL(fileURLWithPath: s, relativeTo: baseDirectory).standardizedFileURL
    }

    /// A choice option as an enum of the stage's own.
    public func choice<E: RawRepresentable>(_ name: String, as type: E.Type) -> E? where E.RawValue == String {
        string(name).flatMap(E.init(rawValue:))
    }

    /// The options of a provider block, validated against the provider's declarations.
    public func provider(_ name: String = "provider") -> (name: String, options: StageOptions)? {
        guard let object = value(name)?.objectValue, let providerName = object["name"]?.stringValue,
            let spec = specs.first(where: { $0.name == name }), case .provider(let providers) = spec.kind,
            let provider = providers.first(where: { $0.name == providerName })
        else { return nil }
        return (
            providerName,
            StageOptions(
                stageID: stageID, path: "\(path).\(name)", baseDirectory: baseDirectory,
                values: object.filter { $0.key != "name" }, specs: provider.options)
        )
    }

    /// An invalid-spec error about one option, naming its JSON path.
    public func error(_ name: String, _ message: String) -> VoxError {
        VoxError(.invalidSpec, "\(path).\(name): \(message)")
    }
}
