import Foundation
import VoxCore

/// The record types agents save, each with its JSON Schema: every `<type>.schema.json` in the
/// spec's `records` folder (contact, job, estimate, appointment). An agent saves a record by
/// calling the function `save_<type>` with the record as arguments; nothing is saved unless the
/// arguments pass the schema (and, for records with line items, their totals add up).
public struct RecordCatalog: Sendable {
    public struct RecordType: Sendable {
        public var name: String
        public var schema: JSONSchema
        public var description: String
        public var file: URL

        /// The function an agent calls to save one.
        public var function: String { "save_\(name)" }
    }

    public let types: [RecordType]

    public init(types: [RecordType]) { self.types = types }

    /// Loads every `*.schema.json` in `folder`; errors name the file and the schema path.
    public init(folder: URL) throws {
        let files: [URL]
        do {
            files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
                .filter { $0.lastPathComponent.hasSuffix(".schema.json") }
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
        } catch {
            throw AgentError(.invalidRecords, "records folder \(folder.path) cannot be read: \(describe(error))")
        }
        guard !files.isEmpty else {
            throw AgentError(.invalidRecords, "records folder \(folder.path) has no <type>.schema.json files")
        }
        types = try files.map { file in
            let name = String(file.lastPathComponent.dropLast(".schema.json".count))
            guard let data = FileManager.default.contents(atPath: file.path), let value = try? JSONValue.parse(data)
            else {
                throw AgentError(.invalidRecords, "\(file.path): not valid JSON")
            }
            let schema: JSONSchema
            do {
                schema = try JSONSchema(value)
            } catch let violation as JSONSchema.Violation {
                throw AgentError(.invalidRecords, "\(file.path): \(violation.path): \(violation.message)")
            }
            guard value.objectValue?["type"]?.stringValue == "object" else {
                throw AgentError(.invalidRecords, "\(file.path): a record schema must have \"type\": \"object\"")
            }
            return RecordType(
                name: name, schema: schema,
                description: value.objectValue?["description"]?.stringValue ?? "Saves a \(name) record.", file: file)
        }
    }

    public func type(named name: String) -> RecordType? { types.first { $0.name == name } }
    public func type(forFunction function: String) -> RecordType? { types.first { $0.function == function } }

    /// Checks a record: its schema first, then that line items, subtotal, tax and total agree
    /// (to the cent). Throws the first violation with its JSON path.
    public func validate(_ arguments: JSONValue, as type: RecordType) throws {
        try type.schema.validate(arguments)
        try Self.checkTotals(arguments)
    }

    static func cents(_ x: Double) -> Int64 { Int64((x * 100).rounded()) }

    static func checkTotals(_ record: JSONValue) throws {
        guard let object = record.objectValue, let items = object["lineItems"]?.arrayValue else { return }
        var sum: Int64 = 0
        for (i, item) in items.enumerated() {
            guard let fields = item.objectValue, let q = fields["quantity"]?.numberValue,
                let price = fields["unitPrice"]?.numberValue
            else { continue }
            let line = cents(q * price)
            if let total = fields["total"]?.numberValue, cents(total) != line {
                throw JSONSchema.Violation(
                    path: "$.lineItems[\(i)].total",
                    message: "is \(money(total)) but quantity × unitPrice is \(money(line))")
            }
            sum += line
        }
        var expected = sum
        if let subtotal = object["subtotal"]?.numberValue {
            guard cents(subtotal) == sum else {
                throw JSONSchema.Violation(
                    path: "$.subtotal", message: "is \(money(subtotal)) but the line items add up to \(money(sum))")
            }
        }
        if let tax = object["tax"]?.numberValue { expected += cents(tax) }
        if let total = object["total"]?.numberValue, cents(total) != expected {
            throw JSONSchema.Violation(
                path: "$.total", message: "is \(money(total)) but line items and tax add up to \(money(expected))")
        }
    }

    static func money(_ x: Double) -> String { String(format: "%.2f", x) }
    static func money(_ cents: Int64) -> String { String(format: "%.2f", Double(cents) / 100) }
}
