import Foundation
import Testing
import VoxCore
import VoxTestSupport

/// A key never leaves voxpipe except in the Authorization header it is meant for: not when a
/// server echoes it (an HTML error page, a transcript, a reply, an audio body), and a key that
/// would inject a header is refused before anything is sent (issue 27, finding 3).
@Suite(.serialized, .startsProcess("the voxpipe binary")) struct SecretLeakTests {
    let spec = packageRoot.appendingPathComponent("Pipelines/lesson-tutor-openai.json").path
    let input = packageRoot.appendingPathComponent("Samples/speech-de.m4a").path

    func environment(_ server: FakeOpenAIServer, key: String) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["OPENAI_BASE_URL"] = server.baseURL
        env["OPENAI_API_KEY"] = key
        env["VOXPIPE_LOG_LEVEL"] = "trace"
        return env
    }

    /// Every byte under `dir` (recordings' base64 bodies decoded too), stdout and stderr: none
    /// holds the key, nor its first 16 characters (a message cut short must not show part of it).
    func expectNoKey(_ whole: String, under dir: URL, _ result: Invocation) throws {
        let key = String(whole.prefix(16))
        let needle = Data(key.utf8)
        for path in files(under: dir) {
            let data = try Data(contentsOf: dir.appendingPathComponent(path))
            #expect(data.range(of: needle) == nil, "\(path) holds the key")
            if path.hasSuffix(".json"), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let response = object["response"] as? [String: Any], let body = response["body"] as? String
            {
                let decoded = Data(base64Encoded: body) ?? Data()
                #expect(decoded.range(of: needle) == nil, "\(path): the recorded body holds the key")
            }
        }
        #expect(!result.stdout.contains(key), "stdout holds the key")
        #expect(!result.stderr.contains(key), "stderr holds the key: \(result.stderr)")
    }

    /// The tutor over `input` with a recording, every report and debug logs; all in a new folder.
    func runWithEveryReport(_ server: FakeOpenAIServer, key: String) throws -> (URL, Invocation) {
        let dir = temporaryDirectory()
        let result = try voxpipe(
            [
                "run", spec, input, "-o", dir.appendingPathComponent("out").path, "--http-record",
                dir.appendingPathComponent("recording").path, "--report", dir.appendingPathComponent("r.jsonl").path,
                "--junit", dir.appendingPathComponent("j.xml").path, "--metrics",
                dir.appendingPathComponent("m.prom").path, "--verbose",
            ],
            environment: environment(server, key: key))
        return (dir, result)
    }

    @Test func aServerEchoingTheKeyInTextAndAudioGetsItIntoNoOutputOrRecording() throws {
        let canary = "sk-canary-\(UUID().uuidString)"
        let server = try FakeOpenAIServer(key: canary)
        try server.inject(
            ["/v1/audio/transcriptions", "/v1/chat/completions", "/v1/audio/speech"].map {
                ["path": $0, "kind": "echo", "count": 1000]
            })
        let (dir, result) = try runWithEveryReport(server, key: canary)
        #expect(result.status == 0, "\(result.stderr)")
        // The echo arrived (so the test tests something), redacted.
        let replies = try String(contentsOf: dir.appendingPathComponent("out/speech-de/replies.json"), encoding: .utf8)
        #expect(replies.contains("Bearer [redacted]"), "\(replies)")
        try expectNoKey(canary, under: dir, result)
    }

    @Test func anHTMLPageEchoingTheRequestHeadersPutsTheKeyInNoErrorReportOrJUnit() throws {
        let canary = "sk-canary-\(UUID().uuidString)"
        let server = try FakeOpenAIServer(key: canary)
        try server.inject([["path": "/v1/audio/transcriptions", "kind": "echo-html", "count": 1000]])
        let (dir, result) = try runWithEveryReport(server, key: canary)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("Authorization: Bearer [redacted]"), "\(result.stderr)")
        try expectNoKey(canary, under: dir, result)
    }

    @Test func aKeyWithALineBreakInTheEnvironmentExits65NamingTheVariableNotTheKey() throws {
        let server = try FakeOpenAIServer(key: "sk-right")
        let dir = temporaryDirectory()
        let key = "sk-right\r\nX-Injected: canary-header"
        let result = try voxpipe(
            ["run", spec, input, "-o", dir.appendingPathComponent("out").path],
            environment: environment(server, key: key))
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr.contains("the API key in $OPENAI_API_KEY holds a control character"), "\(result.stderr)")
        #expect(!result.stderr.contains("canary-header") && !result.stderr.contains("sk-right"))
        #expect(try server.log().filter { ($0["path"] as? String)?.hasPrefix("/v1/") == true }.isEmpty)
    }

    @Test func aKeyFileWithALineBreakInsideExits65NamingTheFile() throws {
        let server = try FakeOpenAIServer(key: "sk-right")
        let dir = temporaryDirectory()
        try Data("sk-right\r\nX-Injected: canary-header\n".utf8).write(to: dir.appendingPathComponent("key.txt"))
        let spec = try writeSpec(
            """
            {"stages": [
              {"id": "decode", "kind": "decode"},
              {"id": "mono16k", "kind": "resample", "rate": 16000, "channels": 1},
              {"id": "turns", "kind": "chunk", "mode": "voice", "maxSeconds": 8},
              {"id": "asr", "kind": "transcribe", "provider": {"name": "openai", "apiKeyFile": "key.txt"}},
              {"id": "subs", "kind": "write-transcript", "formats": ["json"]}
            ]}
            """, in: dir)
        let result = try voxpipe(
            ["run", spec.path, input, "-o", dir.appendingPathComponent("out").path],
            environment: environment(server, key: ""))
        #expect(result.status == 65, "\(result.stderr)")
        #expect(
            result.stderr.contains("the API key in \(dir.appendingPathComponent("key.txt").path) holds a control"),
            "\(result.stderr)")
        #expect(!result.stderr.contains("canary-header") && !result.stderr.contains("sk-right"))
        #expect(try server.log().filter { ($0["path"] as? String)?.hasPrefix("/v1/") == true }.isEmpty)
    }
}
