import Foundation
import VoxCore
import VoxFieldService

/// `write-agent-log`: AgentTurn → Artifact. Writes an item's voice-agent session as `<id>.jsonl`,
/// one data-channel message a line, in the client's type names: a `session_update` header with
/// the session sidecar's fields (type, language, device, `maxDurationMinutes`, and where the
/// recording was cut), then per turn a `session_update` when the agent changed, one
/// `function_call_result` per call (saved with its record id, or rejected with the JSON path),
/// and the `agent_response`, each with its start and end in the recording. Written whole at end
/// of input.
public struct WriteAgentLogStage: Stage {
    public typealias Input = AgentTurn
    public typealias Output = Artifact
    public struct Configuration: Sendable {}

    public static let kind = "write-agent-log"
    public static let summary =
        "Writes a session's agent messages as JSONL (session_update, function_call_result, agent_response)."
    public static let options: [OptionSpec] = []
    public static func configure(_ options: StageOptions) throws -> Configuration { Configuration() }
    public static func plannedOutputs(_ configuration: Configuration, id: String, input: PayloadType) -> [String] {
        ["\(id).jsonl"]
    }
    /// The sidecar's fields go into the header.
    public static let factsUsed = ItemFact.list(.session)

    public let id: String
    /// Redacts every key in use from what this writer writes.
    let secrets: Secrets

    public init(id: String, configuration: Configuration, context: StageContext) {
        self.id = id
        secrets = context.secrets
    }

    static func seconds(_ x: Double) -> JSONValue { .number((x * 1000).rounded() / 1000) }

    /// The messages of one turn, in the order the client receives them.
    static func messages(_ turn: AgentTurn) -> [JSONValue] {
        let chunk = turn.reply.transcript.chunk
        let times: [String: JSONValue] = [
            "turn": .number(Double(turn.turn + 1)), "start": seconds(chunk.start), "end": seconds(chunk.end),
        ]
        func message(_ type: String, _ fields: [String: JSONValue]) -> JSONValue {
            .object(fields.merging(times) { a, _ in a }.merging(["type": .string(type)]) { _, b in b })
        }
        var out: [JSONValue] = []
        if let handoff = turn.handoff {
            out.append(
                message(
                    "session_update",
                    [
                        "agent": .string(handoff.to), "previousAgent": .string(handoff.from),
                        "reason": .string(handoff.reason),
                    ]))
        }
        for call in turn.calls {
            var fields: [String: JSONValue] = [
                "callId": .string(call.callID), "name": .string(call.name), "recordId": .string(call.recordID),
                "status": .string(call.accepted ? "saved" : "rejected"),
            ]
            if let arguments = call.arguments { fields["arguments"] = arguments }
            if let raw = call.rawArguments { fields["rawArguments"] = .string(raw) }
            if let rejection = call.rejection {
                fields["error"] = ["path": .string(rejection.path), "message": .string(rejection.message)]
            }
            out.append(message("function_call_result", fields))
        }
        out.append(
            message(
                "agent_response",
                [
                    "agent": .string(turn.agent), "transcription": .string(turn.reply.transcript.text),
                    "response": .string(turn.reply.text),
                ]))
        return out
    }

    public func run(_ input: Inbox<AgentTurn>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        var lines: [JSONValue] = []
        var first: String?
        for try await turn in input {
            first = first ?? turn.handoff?.from ?? turn.agent
            lines += Self.messages(turn)
        }
        var session = item.facts[.session]?.fields ?? [:]
        session["input"] = .string(item.item.displayName)
        var header: [String: JSONValue] = [
            "type": "session_update", "session": .object(session), "agent": .string(first ?? "triage"),
            "start": 0, "end": 0,
            "turns": .number(Double(lines.filter { $0.objectValue?["type"] == "agent_response" }.count)),
        ]
        if let cut = item.facts[.cutAt] { header["cutAtSeconds"] = Self.seconds(cut) }
        var data = Data()
        for line in [.object(header)] + lines {
            data.append(line.canonicalData())
            data.append(0x0A)
        }
        let temp = try item.outputs.reserve(stageID: id, ext: "jsonl")
        try await output.send(try await item.outputs.write(secrets.redact(data), to: temp))
    }
}
