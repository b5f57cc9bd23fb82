import Foundation
import Testing
import VoxCore
import VoxReports
import VoxTestSupport

/// Field-service sessions end to end: the sample recordings through the offline pipeline, and a
/// text session through the openai agent against the loopback server, then replayed.
@Suite(.serialized, .startsProcess("the voxpipe binary")) struct AgentPipelineTests {
    let samples = packageRoot.appendingPathComponent("Samples/field-service")

    /// The `record` of every entry in each record file of an item's `records/` folder, by type.
    func records(_ folder: URL) throws -> [String: [[String: Any]]] {
        var out: [String: [[String: Any]]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasSuffix(".json") {
            let list = try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent(name)))
            out[String(name.dropLast(5))] = list as? [[String: Any]] ?? []
        }
        return out
    }

    func canonical(_ value: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test(.needs(.whisperModels), .needs(.diarizationModels))
    func theSampleSessionsYieldExactlyTheirRecordsAndARerunWritesNothing() throws {
        let out = temporaryDirectory().appendingPathComponent("out")
        let report = out.deletingLastPathComponent().appendingPathComponent("report.jsonl")
        let spec = packageRoot.appendingPathComponent("Pipelines/field-service-agents.json").path
        let first = try voxpipe(["run", spec, samples.path, "-o", out.path, "--report", report.path])
        #expect(first.status == 0, "\(first.stderr)")
        // On the speakerphone the agent's voice is heard too: named Agent (enrolled), and not read.
        let lines = try ReportLine.parse(Data(contentsOf: report), file: "report.jsonl")
        #expect(
            lines.map { "\($0.output): \(($0.speakers ?? []).map { "\($0.speaker) \($0.turns)" })" } == [
                "add-contact: [\"Speaker 1 3\"]", "book-job-speakerphone: [\"Speaker 1 3\", \"Agent 3\"]",
                "book-job: [\"Speaker 1 3\"]", "estimate: [\"Speaker 1 4\"]",
                "termin-de: [\"Speaker 1 3\"]",
            ])
        for session in ["add-contact", "book-job", "book-job-speakerphone", "estimate", "termin-de"] {
            let expected =
                try JSONSerialization.jsonObject(
                    with: Data(contentsOf: samples.appendingPathComponent("expected/\(session).json")))
                as? [String: Any]
                ?? [:]
            let got = try records(out.appendingPathComponent("\(session)/records"))
            #expect(Set(got.keys) == ["contact", "job", "estimate", "appointment", "rejected"], "\(session)")
            for type in ["contact", "job", "estimate", "appointment"] {
                let want = expected[type] as? [[String: Any]] ?? []
                #expect(
                    try canonical(got[type]?.map { $0["record"] ?? [:] } ?? []) == canonical(want),
                    "\(session): \(type)")
            }
            #expect(got["rejected"]?.isEmpty == true, "\(session)")
            // The log's header carries the session sidecar.
            let log = try String(contentsOf: out.appendingPathComponent("\(session)/log.jsonl"), encoding: .utf8)
            let header = try JSONSerialization.jsonObject(with: Data(log.prefix { $0 != "\n" }.utf8)) as? [String: Any]
            let sidecar = header?["session"] as? [String: Any]
            #expect(header?["type"] as? String == "session_update")
            #expect(sidecar?["sessionId"] as? String == "fs-\(session)")
            #expect((sidecar?["device"] as? [String: Any])?["model"] as? String == "Pixel 8")
            #expect(log.contains(#""type":"agent_response""#) && log.contains(#""type":"function_call_result""#))
            if session == "book-job-speakerphone" {
                // Only the caller's three turns are answered, not the agent's voice between them.
                let responses = log.split(separator: "\n").filter { $0.contains(#""type":"agent_response""#) }
                #expect(responses.count == 3 && !log.contains("Bob at the"), "\(log)")
            }
        }
        let before = try outputHashes(out)
        let second = try voxpipe(["run", spec, samples.path, "-o", out.path])
        #expect(second.status == 0 && second.stderr.contains("5 skipped"), "\(second.stderr)")
        #expect(try outputHashes(out) == before)
    }

    @Test func aSessionOverItsMaxDurationIsCutThereWithAWarning() throws {
        let dir = temporaryDirectory()
        let input = dir.appendingPathComponent("long.wav")
        try runTool("sox", ["-n", "-r", "16000", "-c", "1", "-b", "16", input.path, "synth", "90", "sine", "300"])
        try Data(#"{"sessionType": "jobs", "maxDurationMinutes": 1}"#.utf8).write(
            to: dir.appendingPathComponent("long.json"))
        let spec = try writeSpec(
            """
            {"stages": [{"id": "decode", "kind": "decode"},
              {"id": "c", "kind": "chunk", "mode": "window", "seconds": 30},
              {"id": "w", "kind": "write-wav"}]}
            """, in: dir)
        let out = dir.appendingPathComponent("out")
        let result = try voxpipe([
            "run", spec.path, input.path, "-o", out.path, "--report", dir.appendingPathComponent("r.jsonl").path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("long.wav: decode: the session runs past its maxDurationMinutes; cut at 60 s"))
        #expect(files(under: out.appendingPathComponent("long")).filter { $0.hasSuffix(".wav") }.count == 2)
    }

    var job: [String: Any] {
        [
            "customerName": "John Miller", "address": "42 Main Street", "priority": "normal",
            "description": "The heating is broken at 42 Main Street.",
        ]
    }
    var appointment: [String: Any] {
        [
            "contactName": "John Miller", "date": "2026-03-05", "time": "09:00", "address": "42 Main Street",
        ]
    }

    func arguments(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test func theOpenAIAgentGivesTheRulesRecordsFromRealToolCallsAndReplaysByteIdentically() throws {
        let dir = temporaryDirectory()
        let session = dir.appendingPathComponent("sessions/book-job.txt")
        try FileManager.default.createDirectory(
            at: session.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(
            ("Hello, this is John Miller.\nThe heating is broken at 42 Main Street.\n"
                + "Can you send someone on Thursday at 9am?\n").utf8
        ).write(to: session)
        try Data(#"{"sessionType": "field-service", "language": "en", "startedAt": "2026-03-02T09:15:00Z"}"#.utf8)
            .write(
                to: session.deletingPathExtension().appendingPathExtension("json"))
        let records = packageRoot.appendingPathComponent("Pipelines/field-service").path
        func spec(_ provider: String) throws -> URL {
            try writeSpec(
                """
                {"stages": [{"id": "text", "kind": "read-text"},
                  {"id": "agents", "kind": "agent", "records": "\(records)", "provider": \(provider)},
                  {"id": "log", "kind": "write-agent-log"},
                  {"id": "records", "kind": "write-records", "from": "agents"}]}
                """, in: dir, name: "\(provider.count).json")
        }
        let rules = dir.appendingPathComponent("rules")
        #expect(try voxpipe(["run", spec(#"{"name": "rules"}"#).path, session.path, "-o", rules.path]).status == 0)

        let key = "sk-agent-\(UUID().uuidString)"
        let server = try FakeOpenAIServer(key: key)
        try server.script([
            ["content": "Hello John, how can I help?"],
            [
                "tool_calls": [
                    [
                        "id": "call_job", "type": "function",
                        "function": ["name": "save_job", "arguments": try arguments(job)],
                    ]
                ]
            ],
            ["content": "I booked the job."],
            [
                "tool_calls": [
                    [
                        "id": "call_visit", "type": "function",
                        "function": ["name": "save_appointment", "arguments": try arguments(appointment)],
                    ],
                    [
                        "id": "call_contact", "type": "function",
                        "function": ["name": "save_contact", "arguments": #"{"name": "John Miller", "phone": "#],
                    ],
                    [
                        "id": "call_bad", "type": "function",
                        "function": [
                            "name": "save_contact", "arguments": #"{"name": "John Miller", "phone": 5550199}"#,
                        ],
                    ],
                ]
            ],
            ["content": "Someone will come on Thursday at nine."],
        ])
        var env = ProcessInfo.processInfo.environment
        env["OPENAI_BASE_URL"] = server.baseURL
        env["OPENAI_API_KEY"] = key
        let live = dir.appendingPathComponent("live"), recording = dir.appendingPathComponent("recording")
        let openai = try spec(#"{"name": "openai", "model": "gpt-4o-mini"}"#)
        let run = try voxpipe(
            ["run", openai.path, session.path, "-o", live.path, "--http-record", recording.path], environment: env)
        #expect(run.status == 0, "\(run.stderr)")

        // The same records, with the same ids, as the rules agents gave.
        let got = try self.records(live.appendingPathComponent("book-job/records"))
        let want = try self.records(rules.appendingPathComponent("book-job/records"))
        for type in ["contact", "job", "estimate", "appointment"] {
            #expect(
                try canonical(got[type]?.map { [$0["id"] ?? "", $0["record"] ?? ""] } ?? [])
                    == canonical(want[type]?.map { [$0["id"] ?? "", $0["record"] ?? ""] } ?? []), "\(type)")
        }
        #expect(got["job"]?.count == 1 && got["appointment"]?.count == 1 && got["contact"]?.isEmpty == true)
        // The malformed and the wrongly typed call are kept, rejected, with the JSON path.
        let rejected = got["rejected"] ?? []
        #expect(rejected.map { $0["callId"] as? String } == ["call_contact", "call_bad"])
        #expect(rejected.map { $0["path"] as? String } == ["$", "$.phone"])
        #expect(rejected.first?["rawArguments"] as? String == #"{"name": "John Miller", "phone": "#)
        #expect(rejected.last?["error"] as? String == "expected string, got a number")

        // The wire: tools offered with the record schemas; each call answered by a tool message.
        let chats = try server.log().filter { $0["path"] as? String == "/v1/chat/completions" }
        #expect(chats.count == 5)
        let afterCalls = chats[4]["messages"] as? [[String: Any]] ?? []
        let toolMessages = afterCalls.filter { $0["role"] as? String == "tool" }
        #expect(
            toolMessages.compactMap { $0["tool_call_id"] as? String }.suffix(3) == [
                "call_visit", "call_contact", "call_bad",
            ])
        #expect((toolMessages.last?["content"] as? String)?.contains(#""path":"$.phone""#) == true)
        let log = try String(contentsOf: live.appendingPathComponent("book-job/log.jsonl"), encoding: .utf8)
        #expect(log.contains(#""response":"Someone will come on Thursday at nine.""#))
        #expect(!log.contains(key))

        server.stop()
        let replayed = dir.appendingPathComponent("replayed")
        let replay = try voxpipe([
            "run", openai.path, session.path, "-o", replayed.path, "--http-replay", recording.path,
        ])
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(try outputHashes(replayed) == outputHashes(live))
        // A rerun writes nothing new.
        let again = try voxpipe([
            "run", openai.path, session.path, "-o", replayed.path, "--http-replay", recording.path,
        ])
        #expect(again.status == 0 && again.stderr.contains("1 skipped"), "\(again.stderr)")
        #expect(try outputHashes(replayed) == outputHashes(live))
    }
}
