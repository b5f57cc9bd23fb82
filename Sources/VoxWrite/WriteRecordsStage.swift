import Foundation
import VoxCore
import VoxFieldService

/// `write-records`: AgentTurn → Artifact. Writes the records an item's agents saved into the
/// folder `<id>/`: one `<type>.json` per record type the stages it reads from declare
/// (`.recordTypes`, which the planner checks they do; a JSON array, empty when none was saved),
/// each record with its stable id, turn and times; and `rejected.json` with every call that
/// failed its schema, the JSON path and the reason. Nothing rejected is ever in a record file.
/// Written whole at end of input.
public struct WriteRecordsStage: Stage {
    public typealias Input = AgentTurn
    public typealias Output = Artifact
    public struct Configuration: Sendable {}

    public static let kind = "write-records"
    public static let summary = "Writes the saved records as one JSON file per record type, plus rejected.json."
    public static let options: [OptionSpec] = []
    /// A file per record type, so the stages it reads from must say which there are.
    public static let declarationsUsed = StageDeclaration.list(.recordTypes)
    public static func configure(_ options: StageOptions) throws -> Configuration { Configuration() }
    public static func plannedOutputs(_ configuration: Configuration, id: String, input: PayloadType) -> [String] {
        ["\(id)/<type>.json", "\(id)/rejected.json"]
    }

    public let id: String
    /// Redacts every key in use from what this writer writes.
    let secrets: Secrets
    /// The record types the stages it reads from declare.
    let recordTypes: [String]

    public init(id: String, configuration: Configuration, context: StageContext) {
        self.id = id
        secrets = context.secrets
        recordTypes = context.upstream.flatMap { $0.declarations[.recordTypes] ?? [] }
    }

    public func run(_ input: Inbox<AgentTurn>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        // Two agents read from may share a type: one file for it.
        var records: [String: [JSONValue]] = Dictionary(recordTypes.map { ($0, []) }) { a, _ in a }
        var rejected: [JSONValue] = []
        for try await turn in input {
            let chunk = turn.reply.transcript.chunk
            let at: [String: JSONValue] = [
                "turn": .number(Double(turn.turn + 1)), "start": WriteAgentLogStage.seconds(chunk.start),
                "end": WriteAgentLogStage.seconds(chunk.end),
            ]
            for call in turn.calls {
                var entry = at
                entry["callId"] = .string(call.callID)
                if let rejection = call.rejection {
                    entry["name"] = .string(call.name)
                    entry["recordId"] = .string(call.recordID)
                    entry["path"] = .string(rejection.path)
                    entry["error"] = .string(rejection.message)
                    if let arguments = call.arguments { entry["arguments"] = arguments }
                    if let raw = call.rawArguments { entry["rawArguments"] = .string(raw) }
                    rejected.append(.object(entry))
                } else if let type = call.recordType, let record = call.arguments {
                    entry["id"] = .string(call.recordID)
                    entry["record"] = record
                    records[type, default: []].append(.object(entry))
                }
            }
        }
        let folder = try item.outputs.reserve(name: id)
        let files = (records.map { ("\($0.key).json", $0.value) } + [("rejected.json", rejected)]).map {
            (name: $0.0, data: secrets.redact(JSONValue.array($0.1).prettyData() + Data("\n".utf8)))
        }
        for artifact in try await item.outputs.write(files, inFolder: folder) { try await output.send(artifact) }
    }
}
