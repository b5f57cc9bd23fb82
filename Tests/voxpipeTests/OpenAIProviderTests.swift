import Foundation
import Testing
import VoxTestSupport

/// The lesson tutor against an OpenAI-compatible server on 127.0.0.1, then replayed offline.
@Suite(.serialized, .startsProcess("the voxpipe binary")) struct OpenAIProviderTests {
    let spec = packageRoot.appendingPathComponent("Pipelines/lesson-tutor-openai.json").path

    func environment(_ server: FakeOpenAIServer?, key: String?) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["OPENAI_BASE_URL"] = server?.baseURL ?? "http://127.0.0.1:9/v1"
        env["OPENAI_API_KEY"] = key
        return env
    }

    @Test func theTutorRunsAgainstTheServerThenReplaysOfflineIdenticallyAndTheKeyIsNowhere() throws {
        let canary = "sk-canary-\(UUID().uuidString)"
        let server = try FakeOpenAIServer(key: canary)
        let dir = temporaryDirectory()
        let input = packageRoot.appendingPathComponent("Samples/speech-de.m4a").path
        let out = dir.appendingPathComponent("live"), rec = dir.appendingPathComponent("recording")
        let report = dir.appendingPathComponent("report.jsonl"), metrics = dir.appendingPathComponent("m.prom")
        let live = try voxpipe(
            [
                "run", spec, input, "-o", out.path, "--http-record", rec.path, "--report", report.path, "--metrics",
                metrics.path,
            ],
            environment: environment(server, key: canary))
        #expect(live.status == 0, "\(live.stderr)")
        let replies =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: out.appendingPathComponent("speech-de/replies.json"))) as? [String: Any]
        let turn = (replies?["turns"] as? [[String: Any]])?.first
        #expect(turn?["transcription"] as? String == "Guten Morgen Lehrer")
        #expect((turn?["reply"] as? String)?.hasPrefix("Turn 1: Sehr gut!") == true)
        #expect(
            try server.log().filter { ($0["path"] as? String)?.hasPrefix("/v1/") == true }.allSatisfy {
                $0["authorized"] as? Bool == true
            })

        // Not one byte voxpipe wrote, printed or recorded holds the key.
        var written = files(under: dir).map { dir.appendingPathComponent($0) }
        written.append(contentsOf: [report, metrics])
        for file in written {
            let data = try Data(contentsOf: file)
            #expect(data.range(of: Data(canary.utf8)) == nil, "\(file.path) holds the key")
        }
        #expect(!live.stdout.contains(canary) && !live.stderr.contains(canary))

        server.stop()
        let replayed = dir.appendingPathComponent("replayed")
        let replay = try voxpipe(
            ["run", spec, input, "-o", replayed.path, "--http-replay", rec.path],
            environment: environment(nil, key: nil))
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(try outputHashes(replayed) == outputHashes(out))
    }

    @Test func aRequestTheRecordingHasNotSeenFailsItsItem() throws {
        let server = try FakeOpenAIServer(key: "sk-a")
        let dir = temporaryDirectory()
        let rec = dir.appendingPathComponent("recording")
        #expect(
            try voxpipe(
                [
                    "run", spec, packageRoot.appendingPathComponent("Samples/speech-de.m4a").path, "-o",
                    dir.appendingPathComponent("a").path, "--http-record", rec.path,
                ],
                environment: environment(server, key: "sk-a")
            ).status == 0)
        server.stop()
        let other = try voxpipe(
            [
                "run", spec, packageRoot.appendingPathComponent("Samples/speech-en-22k-mono.wav").path, "-o",
                dir.appendingPathComponent("b").path, "--http-replay", rec.path,
            ],
            environment: environment(nil, key: nil))
        #expect(other.status == 1)
        #expect(
            other.stderr.contains(
                "asr (transcribe): --http-replay: no recorded exchange for POST /audio/transcriptions"))
    }

    @Test func aRefusedKeyExits69AtPrepareWithTheReason() throws {
        let server = try FakeOpenAIServer(key: "sk-right")
        let dir = temporaryDirectory()
        let result = try voxpipe(
            [
                "run", spec, packageRoot.appendingPathComponent("Samples/speech-de.m4a").path, "-o",
                dir.appendingPathComponent("out").path,
            ],
            environment: environment(server, key: "sk-wrong-canary"))
        #expect(result.status == 69)
        #expect(
            result.stderr.hasPrefix(
                "voxpipe: error: stage 'asr' (transcribe): openai transcription at \(server.baseURL): the server "
                    + "answered 401: Incorrect API key provided"
            ))
        #expect(result.stderr.contains("set OPENAI_API_KEY (or apiKeyFile) to a valid key"))
        #expect(!result.stderr.contains("sk-wrong-canary"))
    }
}
