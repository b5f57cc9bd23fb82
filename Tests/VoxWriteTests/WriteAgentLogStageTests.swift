import Foundation
import Testing
import VoxCore
import VoxFieldService
import VoxTestSupport
import VoxTesting

@testable import VoxWrite

/// `write-agent-log` alone: a session's turns in, one JSONL of the client's messages out.
@Suite struct WriteAgentLogStageTests {
    func log(_ out: URL) throws -> String {
        try String(contentsOf: out.appendingPathComponent("item/log.jsonl"), encoding: .utf8)
    }

    @Test func aSessionBecomesItsHeaderThenEachTurnsMessagesInTheClientsOrder() async throws {
        let out = temporaryDirectory()
        let facts = ItemFacts()
        facts[.session] = SessionSidecar(fields: ["type": "field-service", "language": "en"])
        facts[.cutAt] = 5.12349
        let harness = try StageHarness(WriteAgentLogStage.self, id: "log", outputDirectory: out)
        let (artifacts, _) = try await harness.run(agentSession(), facts: facts)
        #expect(artifacts.map(\.path) == ["item/log.jsonl"])
        #expect(try artifactsMatchTheirFiles(artifacts, under: out))
        let expected = [
            #"{"agent":"triage","cutAtSeconds":5.123,"end":0,"session":{"input":"item.wav","language":"en","#
                + #""type":"field-service"},"start":0,"turns":2,"type":"session_update"}"#,
            #"{"agent":"triage","end":2.25,"response":"How can I help?","start":0.5,"transcription":"hi there","#
                + #""turn":1,"type":"agent_response"}"#,
            #"{"agent":"contacts","end":5.125,"previousAgent":"triage","reason":"add","start":3,"turn":2,"#
                + #""type":"session_update"}"#,
            #"{"arguments":{"name":"Ana","phone":"555 0100"},"callId":"c1","end":5.125,"name":"save_contact","#
                + #""recordId":"rec-1","start":3,"status":"saved","turn":2,"type":"function_call_result"}"#,
            #"{"callId":"c2","end":5.125,"error":{"message":"not JSON","path":"$"},"name":"save_contact","#
                + #""rawArguments":"{oops","recordId":"rec-2","start":3,"status":"rejected","turn":2,"#
                + #""type":"function_call_result"}"#,
            #"{"arguments":{"name":5},"callId":"c3","end":5.125,"error":{"message":"expected a string, got a "#
                + #"number","path":"$.name"},"name":"save_contact","recordId":"rec-3","start":3,"#
                + #""status":"rejected","turn":2,"type":"function_call_result"}"#,
            #"{"agent":"contacts","end":5.125,"response":"Saved Ana.","start":3,"transcription":"add Ana 555 0100","#
                + #""turn":2,"type":"agent_response"}"#,
        ]
        #expect(try log(out) == expected.map { $0 + "\n" }.joined())
    }

    @Test func aSessionWithNoTurnsIsItsHeaderAlone() async throws {
        let out = temporaryDirectory()
        _ = try await StageHarness(WriteAgentLogStage.self, id: "log", outputDirectory: out).run([AgentTurn]())
        #expect(
            try log(out)
                == #"{"agent":"triage","end":0,"session":{"input":"item.wav"},"start":0,"turns":0,"#
                + #""type":"session_update"}"# + "\n")
    }

    @Test func aKeyInUseIsRedactedFromTheLog() async throws {
        let out = temporaryDirectory()
        let secrets = Secrets()
        secrets.register("sk-live-0123456789")
        var session = agentSession()
        session[1].reply.transcript.text = "my key is sk-live-0123456789"
        let harness = try StageHarness(WriteAgentLogStage.self, id: "log", outputDirectory: out, secrets: secrets)
        _ = try await harness.run(session)
        let text = try log(out)
        #expect(!text.contains("sk-live-0123456789"))
        #expect(text.contains(#""transcription":"my key is [redacted]""#))
    }
}
