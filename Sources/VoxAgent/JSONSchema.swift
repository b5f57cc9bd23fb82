import Foundation
import VoxCore

/// A JSON Schema (the draft 2020-12 keywords record schemas use) that checks values and names
/// the JSON path of the first violation. Supported: `type` (one or a list), `enum`, `const`,
/// `properties`, `required`, `additionalProperties` (false or a schema), `items`, `minItems`,
/// `maxItems`, `minLength`, `maxLength`, `pattern`, `format` (`email`, `date`, `time`,
/// `date-time`), `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`,
/// `anyOf`, `allOf`, `oneOf`, `not`, and `$ref` into the same document (`#/$defs/…`).
/// A schema using any other validation keyword is refused when it loads, so nothing a schema
/// says is silently unchecked.
public struct JSONSchema: Sendable {
    public let root: JSONValue

    /// A violation: where (`$`, `$.name`, `$.lineItems[1].quantity`) and what.
    public struct Violation: Error, Sendable, Equatable, CustomStringConvertible {
        public var path: String
        public var message: String
        public var description: String { "\(path): \(message)" }
    }

    static let known: Set<String> = [
        "$schema", "$id", "$defs", "$ref", "$comment", "title", "description", "examples", "default", "type", "enum",
        "const", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "minLength",
        "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "anyOf", "allOf", "oneOf", "not",
    ]

    /// Checks the schema's own shape; throws naming the schema path of the first problem.
    public init(_ root: JSONValue) throws {
        self.root = root
        try Self.check(root, at: "#")
    }

    static func check(_ schema: JSONValue, at path: String) throws {
        if schema.boolValue != nil { return }
        guard let object = schema.objectValue else {
            throw Violation(path: path, message: "a schema must be an object or a boolean")
        }
        for key in object.keys.sorted() where !known.contains(key) {
            throw Violation(path: "\(path)/\(key)", message: "unsupported keyword \"\(key)\"")
        }
        if let pattern = object["pattern"] {
            guard let text = pattern.stringValue, (try? Regex(text)) != nil else {
                throw Violation(path: "\(path)/pattern", message: "not a valid regular expression")
            }
        }
        for key in ["properties", "$defs"] {
            for (name, sub) in object[key]?.objectValue ?? [:] { try check(sub, at: "\(path)/\(key)/\(name)") }
        }
        for key in ["items", "additionalProperties", "not"] {
            if let sub = object[key] { try check(sub, at: "\(path)/\(key)") }
        }
        for key in ["anyOf", "allOf", "oneOf"] {
            for (i, sub) in (object[key]?.arrayValue ?? []).enumerated() { try check(sub, at: "\(path)/\(key)/\(i)") }
        }
    }

    /// Throws the first violation of `value`, with its JSON path.
    public func validate(_ value: JSONValue) throws {
        try validate(value, against: root, path: "$", depth: 0)
    }

    func resolve(_ ref: String, path: String) throws -> JSONValue {
        guard ref.hasPrefix("#") else { throw Violation(path: path, message: "cannot follow $ref \(ref)") }
        var node = root
        for part in ref.dropFirst().split(separator: "/") {
            let key = part.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            guard let next = node.objectValue?[key] else {
                throw Violation(path: path, message: "cannot follow $ref \(ref)")
            }
            node = next
        }
        return node
    }

    func validate(_ value: JSONValue, against schema: JSONValue, path: String, depth: Int) throws {
        func fail(_ message: String) -> Violation { Violation(path: path, message: message) }
        guard depth < 64 else { throw fail("schema nests too deeply ($ref loop?)") }
        if let allowed = schema.boolValue {
            if !allowed { throw fail("no value is allowed here") }
            return
        }
        guard let s = schema.objectValue else { return }
        if let ref = s["$ref"]?.stringValue {
            try validate(value, against: try resolve(ref, path: path), path: path, depth: depth + 1)
        }
        if let type = s["type"] {
            let types = type.arrayValue?.compactMap(\.stringValue) ?? [type.stringValue].compactMap { $0 }
            guard types.contains(where: { Self.matches(value, type: $0) }) else {
                throw fail("expected \(types.joined(separator: " or ")), got \(value.typeDescription)")
            }
        }
        if let options = s["enum"]?.arrayValue, !options.contains(value) {
            let listed = options.map { String(decoding: $0.canonicalData(), as: UTF8.self) }.joined(separator: ", ")
            throw fail("must be one of \(listed)")
        }
        if let constant = s["const"], constant != value {
            throw fail("must be \(String(decoding: constant.canonicalData(), as: UTF8.self))")
        }
        switch value {
        case .object(let object): try validateObject(object, s, path: path, depth: depth)
        case .array(let array): try validateArray(array, s, path: path, depth: depth)
        case .string(let text): try validateString(text, s, fail: fail)
        case .number(let number): try validateNumber(number, s, fail: fail)
        default: break
        }
        for sub in s["allOf"]?.arrayValue ?? [] { try validate(value, against: sub, path: path, depth: depth + 1) }
        if let options = s["anyOf"]?.arrayValue {
            var first: Violation?
            for sub in options {
                do {
                    try validate(value, against: sub, path: path, depth: depth + 1)
                    first = nil
                    break
                } catch let violation as Violation {
                    first = first ?? violation
                }
            }
            if let first { throw first }
        }
        if let options = s["oneOf"]?.arrayValue {
            let passing = options.filter { (try? validate(value, against: $0, path: path, depth: depth + 1)) != nil }
            guard passing.count == 1 else {
                throw fail("must match exactly one of \(options.count) schemas (matches \(passing.count))")
            }
        }
        if let not = s["not"], (try? validate(value, against: not, path: path, depth: depth + 1)) != nil {
            throw fail("must not match the schema under \"not\"")
        }
    }

    static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null),
            ("number", .number):
            return true
        case ("integer", .number(let n)): return n.isFinite && n.rounded() == n
        default: return false
        }
    }

    /// Appends a property name to a JSON path: `$.name`, or `$["odd key"]` where it needs quoting.
    static func member(_ path: String, _ key: String) -> String {
        let plain =
            key.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" } && key.first.map { !$0.isNumber } == true
        return plain
            ? "\(path).\(key)" : "\(path)[\(String(decoding: JSONValue.string(key).canonicalData(), as: UTF8.self))]"
    }

    func validateObject(_ object: [String: JSONValue], _ s: [String: JSONValue], path: String, depth: Int) throws {
        for key in s["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where object[key] == nil {
            throw Violation(path: Self.member(path, key), message: "required property is missing")
        }
        let properties = s["properties"]?.objectValue ?? [:]
        for (key, value) in object.sorted(by: { $0.key < $1.key }) {
            if let sub = properties[key] {
                try validate(value, against: sub, path: Self.member(path, key), depth: depth + 1)
            } else if let extra = s["additionalProperties"] {
                if extra.boolValue == false {
                    throw Violation(path: Self.member(path, key), message: "property is not allowed")
                }
                try validate(value, against: extra, path: Self.member(path, key), depth: depth + 1)
            }
        }
    }

    func validateArray(_ array: [JSONValue], _ s: [String: JSONValue], path: String, depth: Int) throws {
        if let min = s["minItems"]?.numberValue, Double(array.count) < min {
            throw Violation(path: path, message: "needs at least \(Int(min)) item\(min == 1 ? "" : "s")")
        }
        if let max = s["maxItems"]?.numberValue, Double(array.count) > max {
            throw Violation(path: path, message: "allows at most \(Int(max)) items")
        }
        if let items = s["items"] {
            for (i, element) in array.enumerated() {
                try validate(element, against: items, path: "\(path)[\(i)]", depth: depth + 1)
            }
        }
    }

    func validateString(_ text: String, _ s: [String: JSONValue], fail: (String) -> Violation) throws {
        if let min = s["minLength"]?.numberValue, Double(text.count) < min {
            throw fail(min == 1 ? "must not be empty" : "needs at least \(Int(min)) characters")
        }
        if let max = s["maxLength"]?.numberValue, Double(text.count) > max {
            throw fail("allows at most \(Int(max)) characters")
        }
        if let pattern = s["pattern"]?.stringValue, let regex = try? Regex(pattern),
            (try? regex.firstMatch(in: text)) == nil
        {
            throw fail("\"\(text)\" does not match \(pattern)")
        }
        if let format = s["format"]?.stringValue, let check = Self.formats[format], !check(text) {
            throw fail("\"\(text)\" is not a valid \(format)")
        }
    }

    func validateNumber(_ n: Double, _ s: [String: JSONValue], fail: (String) -> Violation) throws {
        func text(_ x: Double) -> String { x.rounded() == x && abs(x) < 1e15 ? String(Int64(x)) : String(x) }
        if let min = s["minimum"]?.numberValue, n < min { throw fail("must be at least \(text(min))") }
        if let max = s["maximum"]?.numberValue, n > max { throw fail("must be at most \(text(max))") }
        if let min = s["exclusiveMinimum"]?.numberValue, n <= min { throw fail("must be more than \(text(min))") }
        if let max = s["exclusiveMaximum"]?.numberValue, n >= max { throw fail("must be less than \(text(max))") }
        if let step = s["multipleOf"]?.numberValue, step > 0 {
            let q = n / step
            if abs(q - q.rounded()) > 1e-9 { throw fail("must be a multiple of \(text(step))") }
        }
    }

    /// The formats checked (others are annotations only, as the draft allows).
    static let formats: [String: @Sendable (String) -> Bool] = [
        "email": { $0.wholeMatch(of: /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+/) != nil },
        "date": { text in
            guard let m = text.wholeMatch(of: /(\d{4})-(\d{2})-(\d{2})/), let month = Int(m.2), let day = Int(m.3),
                let year = Int(m.1)
            else { return false }
            var c = DateComponents(year: year, month: month, day: day)
            c.calendar = Calendar(identifier: .gregorian)
            return (1...12).contains(month) && day >= 1 && c.isValidDate
        },
        "time": { $0.wholeMatch(of: /([01]\d|2[0-3]):[0-5]\d(:[0-5]\d)?/) != nil },
        "date-time": { ISO8601DateFormatter().date(from: $0) != nil },
    ]
}
