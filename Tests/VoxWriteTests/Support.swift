import Foundation
import VoxCore
import VoxDecode
import VoxFieldService
import VoxTestSupport

/// A two-turn voice-agent session: triage answers, then hands over to contacts, which saves one
/// contact and has two calls rejected (arguments that are not JSON; a field of the wrong type).
func agentSession() -> [AgentTurn] {
    func transcript(_ text: String, start: Double, end: Double, index: Int) -> Transcript {
        let chunk = AudioChunk(
            format: AudioFormat(sampleRate: 16000, channels: 1), samples: [], start: start, end: end, index: index,
            cut: .voice)
        return Transcript(chunk: chunk, text: text, words: [], language: "en", provider: "test", model: nil)
    }
    let greeting = Reply(transcript: transcript("hi there", start: 0.5, end: 2.25, index: 0), text: "How can I help?")
    let request = Reply(
        transcript: transcript("add Ana 555 0100", start: 3, end: 5.1254, index: 1), text: "Saved Ana.")
    let calls = [
        FunctionCall(
            callID: "c1", name: "save_contact", recordType: "contact",
            arguments: ["name": "Ana", "phone": "555 0100"], recordID: "rec-1", rejection: nil),
        FunctionCall(
            callID: "c2", name: "save_contact", recordType: "contact", arguments: nil, rawArguments: "{oops",
            recordID: "rec-2", rejection: FunctionCall.Rejection(path: "$", message: "not JSON")),
        FunctionCall(
            callID: "c3", name: "save_contact", recordType: "contact", arguments: ["name": 5], recordID: "rec-3",
            rejection: FunctionCall.Rejection(path: "$.name", message: "expected a string, got a number")),
    ]
    return [
        AgentTurn(reply: greeting, agent: "triage", turn: 0, calls: []),
        AgentTurn(
            reply: request, agent: "contacts", turn: 1, calls: calls,
            handoff: AgentTurn.Handoff(from: "triage", to: "contacts", reason: "add")),
    ]
}

/// Each artifact's size and SHA-256 against the file now at its path under `root`.
func artifactsMatchTheirFiles(_ artifacts: [Artifact], under root: URL) throws -> Bool {
    try artifacts.allSatisfy { artifact in
        let data = try Data(contentsOf: root.appendingPathComponent(artifact.path))
        return artifact.bytes == Int64(data.count) && artifact.sha256 == Digest.hex(data)
    }
}
