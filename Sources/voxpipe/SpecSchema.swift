import VoxCore

/// The JSON Schema (draft 2020-12) of job specs, generated from the registry's option
/// declarations so it cannot drift from what the loader accepts.
enum SpecSchema {
    static func make(_ registry: StageRegistry) -> JSONValue {
        var defs: [String: JSONValue] = [:]
        for kind in registry.kinds {
            var properties: [String: JSONValue] = [
                "id": [
                    "type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$",
                    "description": "Unique stage id; names the stage's output files.",
                ],
                "kind": ["const": .string(kind.kind)],
                "from": [
                    "description": .string(
                        "The id of the stage this one reads from, or a list of ids whose outputs it takes together; "
                            + "defaults to the stage before."),
                    "oneOf": [["type": "string"], ["type": "array", "items": ["type": "string"], "minItems": 1]],
                ],
            ]
            for option in kind.options { properties[option.name] = schema(option) }
            var def: [String: JSONValue] = [
                "type": "object",
                "description": .string("\(kind.summary) Takes \(kind.inputDescription), gives \(kind.output)."),
                "required": ["id", "kind"],
                "additionalProperties": false,
                "properties": .object(properties),
            ]
            let conditions = applicability(kind.options)
            if conditions.count == 1 {
                def.merge(conditions[0].objectValue ?? [:]) { a, _ in a }
            } else if !conditions.isEmpty {
                def["allOf"] = .array(conditions)
            }
            defs[kind.kind] = .object(def)
        }
        return [
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "voxpipe job spec",
            "type": "object",
            "required": ["stages"],
            "additionalProperties": false,
            "properties": [
                "$schema": ["type": "string"],
                "name": ["type": "string", "description": "The job's name; defaults to the spec file's name."],
                "description": ["type": "string"],
                "strict": [
                    "type": "boolean", "default": false,
                    "description": "Fail an item a stage warns about (a truncated file) instead of finishing it.",
                ],
                "stages": [
                    "type": "array",
                    "minItems": 1,
                    "items": ["oneOf": .array(registry.kinds.map { ["$ref": .string("#/$defs/\($0.kind)")] })],
                ],
            ],
            "$defs": .object(defs),
        ]
    }

    /// Where options apply (`OptionSpec.appliesWhen`), as JSON Schema: for each option others
    /// depend on (a mode, a format), `oneOf` a branch per value it can take, each refusing the
    /// options that do not apply there (a `false` property schema). A value other than the default
    /// must be given (`required`), so a stage that leaves the option out matches the default's branch only.
    static func applicability(_ options: [OptionSpec]) -> [JSONValue] {
        var deciding: [String] = []
        for option in options {
            for condition in option.appliesWhen where !deciding.contains(condition.option) {
                deciding.append(condition.option)
            }
        }
        return deciding.compactMap { name -> JSONValue? in
            guard let decider = options.first(where: { $0.name == name }) else { return nil }
            let values: [JSONValue]
            switch decider.kind {
            case .choice(let choices): values = choices.map { .string($0) }
            case .boolean: values = [false, true]
            default: return nil
            }
            let branches = values.map { value -> JSONValue in
                // An option that does not apply here is refused by the `false` schema.
                var properties: [String: JSONValue] = [name: ["const": value]]
                for option in options
                where option.appliesWhen.contains(where: { $0.option == name && !$0.values.contains(value) }) {
                    properties[option.name] = false
                }
                var branch: [String: JSONValue] = ["properties": .object(properties)]
                if value != decider.defaultValue { branch["required"] = [.string(name)] }
                return .object(branch)
            }
            return ["oneOf": .array(branches)]
        }
    }

    static func schema(_ option: OptionSpec) -> JSONValue {
        var s: [String: JSONValue]
        switch option.kind {
        case .integer(let r):
            s = ["type": "integer", "minimum": .number(Double(r.lowerBound)), "maximum": .number(Double(r.upperBound))]
        case .number(let r): s = ["type": "number", "minimum": .number(r.lowerBound), "maximum": .number(r.upperBound)]
        case .boolean: s = ["type": "boolean"]
        case .string: s = ["type": "string"]
        case .path, .stage: s = ["type": "string", "minLength": 1]
        case .choice(let c): s = ["enum": .array(c.map { .string($0) })]
        case .integerOrChoice(let r, let c):
            s = [
                "oneOf": [
                    [
                        "type": "integer", "minimum": .number(Double(r.lowerBound)),
                        "maximum": .number(Double(r.upperBound)),
                    ], ["enum": .array(c.map { .string($0) })],
                ]
            ]
        case .choices(let c): s = ["type": "array", "minItems": 1, "items": ["enum": .array(c.map { .string($0) })]]
        case .namedPaths:
            s = ["type": "object", "additionalProperties": ["type": "string", "minLength": 1]]
        case .provider(let providers):
            s = [
                "oneOf": .array(
                    providers.map { provider in
                        var properties: [String: JSONValue] = ["name": ["const": .string(provider.name)]]
                        for o in provider.options { properties[o.name] = schema(o) }
                        return [
                            "type": "object", "description": .string(provider.summary), "required": ["name"],
                            "additionalProperties": false, "properties": .object(properties),
                        ]
                    })
            ]
        }
        s["description"] = .string(option.help)
        if let d = option.defaultValue { s["default"] = d }
        return .object(s)
    }
}
