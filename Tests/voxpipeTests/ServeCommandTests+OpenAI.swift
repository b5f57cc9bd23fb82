import Foundation
import Testing
import VoxTestSupport

/// A batch pipeline using a served one (issue 24, item 6): voxpipe's own `openai` transcribe and
/// synthesize providers against `voxpipe serve` on 127.0.0.1.
extension ServeCommandTests {
    @Test func voxpipesOpenAIProvidersRunAgainstVoxpipeServe() throws {
        let dir = temporaryDirectory()
        try servingTheTutor { port in try providersAgainst(port: port, in: dir) }
    }

    func providersAgainst(port: Int, in dir: URL) throws {
        let clip = germanClip
        let base = "http://127.0.0.1:\(port)/v1"
        func spec(_ transcribe: String) throws -> URL {
            try writeSpec(
                """
                {"stages": [
                  {"id": "decode", "kind": "decode"},
                  {"id": "mono16k", "kind": "resample", "rate": 16000, "channels": 1},
                  {"id": "turns", "kind": "chunk", "mode": "voice", "maxSeconds": 8},
                  {"id": "asr", "kind": "transcribe", "provider": \(transcribe)},
                  {"id": "text", "kind": "write-transcript", "formats": ["txt"]}
                ]}
                """, in: dir, name: "\(UUID().uuidString).json")
        }
        // In-process Whisper as the served pipeline configures it (greedy, packing).
        let served =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: packageRoot.appendingPathComponent("Pipelines/lesson-tutor.json")))
            as? [String: Any]
        let stages = try #require(served?["stages"] as? [[String: Any]])
        let provider = try #require(stages.first { $0["kind"] as? String == "transcribe" }?["provider"])
        let local = try spec(
            String(decoding: try JSONSerialization.data(withJSONObject: provider, options: .sortedKeys), as: UTF8.self))
        // Patient: the server sends nothing while it decodes, and the machine may be busy.
        let remote = try spec(
            #"{"name": "openai", "baseURL": "\#(base)", "maxRetries": 0, "timeout": 900, "lowSpeedSeconds": 900}"#)
        var texts: [String] = []
        for (name, spec) in [("local", local), ("remote", remote)] {
            let out = dir.appendingPathComponent(name)
            let result = try voxpipe(
                ["run", spec.path, clip.path, "-o", out.path], environment: ["OPENAI_API_KEY": "sk-unused"])
            #expect(result.status == 0, "\(name): \(result.stderr)")
            texts.append(
                (try? String(contentsOf: out.appendingPathComponent("speech-de/text.txt"), encoding: .utf8)) ?? "")
        }
        #expect(texts[0].hasPrefix("Guten Morgen"), "\(texts)")
        // The server chunks the uploaded chunk again (Silero VAD), so Whisper hears a slightly
        // different clip: the same words but for one or two (a word heard as two is two errors).
        #expect(!scoringWords(texts[1]).isEmpty, "\(texts)")
        #expect(wordErrorRate(reference: texts[0], hypothesis: texts[1]) <= 0.2, "\(texts)")

        // Speech the other way: the served spec's voice through voxpipe's openai synthesize provider.
        let lines = dir.appendingPathComponent("lines.txt")
        try "Guten Morgen!\n".write(to: lines, atomically: true, encoding: .utf8)
        try #"{"rules": [], "fallback": ["{text}"]}"#.write(
            to: dir.appendingPathComponent("echo-rules.json"), atomically: true, encoding: .utf8)
        let speak = try writeSpec(
            """
            {"stages": [
              {"id": "read", "kind": "read-text", "language": "de"},
              {"id": "echo", "kind": "reply", "provider": {"name": "rules", "rules": "echo-rules.json"}},
              {"id": "say", "kind": "synthesize", "provider": {"name": "openai", "baseURL": "\(base)",
                "maxRetries": 0, "timeout": 900, "lowSpeedSeconds": 900}},
              {"id": "audio", "kind": "write-wav"}
            ]}
            """, in: dir, name: "speak.json")
        let out = dir.appendingPathComponent("speech")
        let result = try voxpipe(
            ["run", speak.path, lines.path, "-o", out.path], environment: ["OPENAI_API_KEY": "sk-unused"])
        #expect(result.status == 0, "\(result.stderr)")
        let wavs = try FileManager.default.subpathsOfDirectory(atPath: out.path).filter { $0.hasSuffix(".wav") }
        #expect(!wavs.isEmpty, "\(wavs)")
    }
}

extension ServeCommandTests {
    /// Whether the official OpenAI Python SDK is installed (`make setup` installs it).
    static let openAISDK = (try? run("/usr/bin/env", ["python3", "-c", "import openai"]))?.status == 0

    @Test(.enabled(if: openAISDK, "needs the openai Python package (make setup installs it)"))
    func theOfficialOpenAISDKGetsTheSameTextAsRunInEveryFormatAndSpeechFFprobeReads() throws {
        let dir = temporaryDirectory()
        let speech = dir.appendingPathComponent("speech.wav")
        let sdk = try servingTheTutor { port in
            try run(
                "/usr/bin/env",
                [
                    "python3", packageRoot.appendingPathComponent("Tests/Fixtures/openai-sdk/client.py").path,
                    "http://127.0.0.1:\(port)/v1", germanClip.path, speech.path,
                ])
        }
        #expect(sdk.status == 0, "\(sdk.stderr)")
        let got = try #require(
            try JSONSerialization.jsonObject(with: Data(sdk.stdout.utf8)) as? [String: Any], "\(sdk.stdout)")

        let text = try #require(try Self.germanTurn.get().transcription)
        #expect(text.hasPrefix("Guten Morgen"))
        #expect(got["json"] as? String == text)
        #expect(got["verbose_json"] as? String == text)
        #expect((got["text"] as? String)?.trimmingCharacters(in: .newlines) == text)
        #expect((got["segments"] as? Int ?? 0) > 0)
        #expect((got["srt"] as? String)?.hasPrefix("1\n00:00:0") == true, "\(got)")
        #expect((got["vtt"] as? String)?.hasPrefix("WEBVTT\n\n00:00:0") == true, "\(got)")
        #expect(got["models"] as? [String] == ["lesson-tutor"])
        let probe = try run(
            "/usr/bin/env",
            ["ffprobe", "-v", "error", "-show_entries", "stream=codec_name", "-of", "default=nw=1:nk=1", speech.path])
        #expect(probe.status == 0 && probe.stdout.contains("pcm_s16le"), "\(probe.stdout)\(probe.stderr)")
    }
}

extension ServeCommandTests {
    @Test func anUnreadableAPIKeyFileIsAUsageErrorBeforeAnythingLoads() throws {
        let result = try voxpipe(["serve", lessonTutor.path, "--api-key-file", "/nonexistent/keys", "--port", "0"])
        #expect(result.status == 64)
        #expect(result.stderr == "voxpipe: error: cannot read the API key file /nonexistent/keys\n")
    }
}
