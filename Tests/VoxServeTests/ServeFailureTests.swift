import Foundation
import Testing
import VoxCore
import VoxFormats
import VoxTestSupport

@testable import VoxServe

/// Failures that need a provider to misbehave: the fake OpenAI server answers the reply stage.
@Suite(.needs(.whisperModels), .startsProcess("the fake OpenAI server (Python)"))
struct ServeFailureTests {
    let api = "/api/agora"

    /// A tutor spec whose replies come from `fake` (English whisper tiny, espeak-ng); with
    /// `fakeTranscriber`, the fake transcribes too and Silero cuts the turns.
    func spec(_ fake: FakeOpenAIServer, fakeTranscriber: Bool = false) throws -> URL {
        let dir = temporaryDirectory()
        try Data(fake.key.utf8).write(to: dir.appendingPathComponent("key.txt"))
        let url = dir.appendingPathComponent("tutor.json")
        let openAI = #""name": "openai", "baseURL": "\#(fake.baseURL)", "apiKeyFile": "key.txt", "maxRetries": 0"#
        let detector = fakeTranscriber ? #", "detector": "silero""# : ""
        let asr = fakeTranscriber ? openAI : #""name": "whisper", "model": "tiny.en""#
        try Data(
            """
            {"stages": [
              {"id": "decode", "kind": "decode"},
              {"id": "mono16k", "kind": "resample", "rate": 16000, "channels": 1},
              {"id": "turns", "kind": "chunk", "mode": "voice", "maxSeconds": 8\(detector)},
              {"id": "asr", "kind": "transcribe", "provider": {\(asr)}},
              {"id": "tutor", "kind": "reply", "provider": {\(openAI)}},
              {"id": "voice", "kind": "synthesize", "provider": {"name": "espeak-ng", "voice": "en"}},
              {"id": "speech", "kind": "write-audio", "format": "mp3"}
            ]}
            """.utf8
        ).write(to: url)
        return url
    }

    /// Waits until the fake has seen a chat request: the reply stage is then busy. It yields its
    /// thread between looks: a loop that held it could starve the very turn it waits for (the
    /// test process has as many pool threads as cores). The turn it waits for is held by the fake
    /// (a "hold" fault) and the server's timeout is long, so it arrives however slow the machine;
    /// `limit` only ends a test whose turn never comes.
    func chatArrived(_ fake: FakeOpenAIServer, limit: Duration = .seconds(900)) async throws {
        let deadline = ContinuousClock.now + limit
        while try !fake.log().contains(where: { ($0["path"] as? String) == "/v1/chat/completions" }) {
            guard ContinuousClock.now < deadline else {
                Issue.record("no chat request reached the fake server within \(limit)")
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func aProvidersBrokenAnswerIs502WithItsReasonAndAClientKeyIsUsedOnlyWhenAllowed() async throws {
        let fake = try FakeOpenAIServer(key: "sk-server")
        let server = try await ServerFixture.start(spec: try spec(fake)) { $0.allowClientKeys = true }
        try fake.inject([["path": "/v1/chat/completions", "kind": "invalid-json", "count": 1]])
        let failed = try await server.post("\(api)/process-text", ["text": "Hello there"])
        // Not the client's fault (4xx), nor a provider that is down (503): the answer broke the API.
        #expect(failed.status == 502)
        #expect(failed.json["success"] as? Bool == false)
        let error = try #require(failed.json["error"] as? String)
        #expect(error.hasPrefix("tutor (reply): "), "\(error)")

        let ok = try await server.post("\(api)/process-text", ["text": "Hello there"])
        #expect(ok.status == 200, "\(ok.json)")
        #expect((ok.json["reply"] as? String)?.isEmpty == false)

        // The client's key goes to the provider in place of the server's: the fake refuses it, and
        // a provider that refuses the key it is given will not serve (503).
        let withKey = try await server.post("\(api)/process-text", ["text": "Hello there", "apiKey": "sk-client"])
        #expect(withKey.status == 503)
        #expect(!(withKey.json["error"] as? String ?? "").contains("sk-client"))
        let chats = try fake.log().filter { ($0["path"] as? String) == "/v1/chat/completions" }
        #expect(chats.map { $0["authorized"] as? Bool } == [true, true, false])
    }

    @Test func beyondTheQueueIs503WithRetryAfterAndHealthzStillAnswers() async throws {
        let fake = try FakeOpenAIServer(key: "sk-server")
        // One turn at a time, none queued; the fake holds the first turn's chat request until
        // released, so the second request comes while the first is surely running.
        let server = try await ServerFixture.start(spec: try spec(fake)) {
            $0.concurrency = 1
            $0.queue = 0
        }
        try fake.inject([["path": "/v1/chat/completions", "kind": "hold", "count": 1]])
        let slow = Task { try await server.post("\(api)/process-text", ["text": "Hello there"]).status }
        try await chatArrived(fake)

        let refused = try await server.post("\(api)/process-text", ["text": "Hello again"])
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "1")
        #expect(refused.json["error"] as? String == "the server is busy; try again shortly")
        let health = try await server.call("GET", "/healthz")
        #expect(health.status == 200)

        try fake.release()
        #expect(try await slow.value == 503)  // the held chat request ends in the fake's 500: it will not serve
        let metrics = try await server.text("/metrics")
        #expect(metrics.contains("voxpipe_serve_failures_total{reason=\"overloaded\"} 1"))
        let admitted = try await server.post("\(api)/process-text", ["text": "Hello again"])
        #expect(admitted.status == 200, "a freed slot admits the next turn")
    }

    @Test func aChatServerThatIsDownIs503WithRetryAfterNotTheClientsFault() async throws {
        let fake = try FakeOpenAIServer(key: "sk-server")
        let server = try await ServerFixture.start(spec: try spec(fake))
        // Up while the server prepared (it probed the provider), down when the turn comes.
        fake.stop()
        let failed = try await server.post("\(api)/process-text", ["text": "Hello there"])
        #expect(failed.status == 503, "\(failed.json)")
        #expect(failed.headers["retry-after"] == "1")
        let error = try #require(failed.json["error"] as? String)
        #expect(error.hasPrefix("tutor (reply): "), "\(error)")
        let metrics = try await server.text("/metrics")
        #expect(metrics.contains("voxpipe_serve_failures_total{reason=\"unavailable\"} 1"), "\(metrics)")
    }

    @Test func aTurnPastTheTimeoutIs504() async throws {
        let fake = try FakeOpenAIServer(key: "sk-server")
        let server = try await ServerFixture.start(spec: try spec(fake)) { $0.timeout = 2 }
        // Held until the test ends: past any timeout, on any machine.
        try fake.inject([["path": "/v1/chat/completions", "kind": "hold", "count": 1]])
        let timedOut = try await server.post("\(api)/process-text", ["text": "Hello there"])
        try fake.release()
        #expect(timedOut.status == 504)
        #expect(timedOut.json["error"] as? String == "the pipeline did not answer within 2 s")
        let metrics = try await server.text("/metrics")
        #expect(metrics.contains("voxpipe_serve_failures_total{reason=\"timeout\"} 1"))
    }

    @Test func aClipOverMaxClipIs422FromItsHeaderBeforeAnyDecoding() async throws {
        let fake = try FakeOpenAIServer(key: "sk-server")
        let server = try await ServerFixture.start(spec: try spec(fake)) { $0.maxClipSeconds = 2 }
        // 5 s of a 440 Hz tone at 16 kHz: the WAV header says 80000 frames.
        let tone = (0..<80000).map { Float(0.3 * sin(2 * Double.pi * 440 * Double($0) / 16000)) }
        let wav = WAVData.pcm16(tone, format: AudioFormat(sampleRate: 16000, channels: 1))
        let refused = try await server.post("\(api)/process-audio", ["audio": wav.base64EncodedString()])
        #expect(refused.status == 422)
        #expect(
            refused.json["error"] as? String
                == "audio: the clip is 5.0 s long, over the 2 s this server takes (--max-clip)")
        // Refused before the pipeline: no turn ran, so nothing reached the chat provider.
        #expect(try fake.log().filter { ($0["path"] as? String) == "/v1/chat/completions" }.isEmpty)
        let metrics = try await server.text("/metrics")
        #expect(metrics.contains("voxpipe_serve_failures_total{reason=\"too_long\"} 1"), "\(metrics)")
    }

    /// The tutor app sends every 8-s interval, the learner thinking in silence too. With the spec's
    /// turns cut by Silero, a clip in which it hears no speech (noise, a tune) is an empty turn
    /// answered at once: the transcriber is never asked (here the fake, which hears "Guten Morgen
    /// Lehrer" in anything). A spoken clip is transcribed whole.
    @Test func aClipSileroHearsNoSpeechInIsNeverTranscribed() async throws {
        let fake = try FakeOpenAIServer(key: "sk-server")
        let dir = temporaryDirectory()
        let server = try await ServerFixture.start(spec: try spec(fake, fakeTranscriber: true))
        var state: UInt32 = 5
        let noise = (0..<96000).map { _ -> Float in
            state = state &* 1_664_525 &+ 1_013_904_223
            return Float(Int32(bitPattern: state)) / Float(Int32.max) * 0.3
        }
        let tune = (0..<96000).map { i -> Float in
            let t = Double(i) / 16000
            let f = [262.0, 330, 392, 523][Int(t / 0.5) % 4]
            return Float(0.3 * sin(2 * .pi * f * t) + 0.1 * sin(4 * .pi * f * t))
        }
        let mono16k = AudioFormat(sampleRate: 16000, channels: 1)
        for (name, samples) in [("noise", noise), ("tune", tune)] {
            let answer = try await server.post(
                "\(api)/process-audio", ["audio": WAVData.pcm16(samples, format: mono16k).base64EncodedString()])
            #expect(answer.status == 200, "\(name): \(answer.json)")
            #expect(answer.json["transcription"] as? String == "", "\(name): \(answer.json)")
        }
        let transcriptions = { try fake.log().filter { ($0["path"] as? String) == "/v1/audio/transcriptions" }.count }
        #expect(try transcriptions() == 0)
        let speech = try espeak("Guten Morgen, wie geht es dir heute?", voice: "de", into: dir)
        let spoken = try await server.post(
            "\(api)/process-audio", ["audio": try Data(contentsOf: speech).base64EncodedString()])
        #expect(spoken.json["transcription"] as? String == "Guten Morgen Lehrer", "\(spoken.json)")
        #expect(try transcriptions() == 1)
    }

    /// The tutor app uploads M4A, which libsndfile cannot open: its length comes from the MP4
    /// boxes, so it too is refused before it is queued or decoded.
    @Test func anM4AOverMaxClipIs422FromItsHeaderToo() async throws {
        let fake = try FakeOpenAIServer(key: "sk-server")
        let server = try await ServerFixture.start(spec: try spec(fake)) { $0.maxClipSeconds = 2 }
        let dir = temporaryDirectory()
        let wav = dir.appendingPathComponent("tone.wav"), m4a = dir.appendingPathComponent("tone.m4a")
        let tone = (0..<80000).map { Float(0.3 * sin(2 * Double.pi * 440 * Double($0) / 16000)) }
        try WAVData.pcm16(tone, format: AudioFormat(sampleRate: 16000, channels: 1)).write(to: wav)
        try runTool("ffmpeg", ["-v", "error", "-y", "-i", wav.path, "-c:a", "aac", "-b:a", "48k", m4a.path])
        let refused = try await server.post(
            "\(api)/process-audio", ["audio": try Data(contentsOf: m4a).base64EncodedString(), "mimeType": "audio/m4a"])
        #expect(refused.status == 422, "\(refused.json)")
        #expect(
            refused.json["error"] as? String
                == "audio: the clip is 5.0 s long, over the 2 s this server takes (--max-clip)")
        #expect(try fake.log().filter { ($0["path"] as? String) == "/v1/chat/completions" }.isEmpty)
    }
}
