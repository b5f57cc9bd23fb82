import Foundation
import Testing
import VoxCore
import VoxHTTP
import VoxTestSupport
import VoxTesting

@testable import VoxTranscribe

/// The OpenAI transcriber's requests and how it reads answers, over a scripted transport (the
/// wire itself is tested against the loopback server in voxpipeTests).
@Suite struct OpenAITranscriberTests {
    func transcriber(
        _ answers: [HTTPResponse], options: [String: JSONValue] = [:]
    ) throws -> (OpenAITranscriber, ScriptedTransport) {
        let clock = ManualClock()
        let transport = ScriptedTransport(answers.map { .respond($0) }, clock: clock)
        var values: [String: JSONValue] = ["baseURL": "http://127.0.0.1:9/v1", "apiKeyEnv": "VOXPIPE_TEST_UNSET_KEY"]
        values.merge(options) { $1 }
        let settings = OpenAITranscriber.settings(
            StageOptions(
                stageID: "asr", path: "p", baseDirectory: URL(fileURLWithPath: "/"), values: values,
                specs: OpenAITranscriber.options))
        return (
            try OpenAITranscriber(settings: settings, context: testContext(transport: transport, clock: clock)),
            transport
        )
    }

    /// One second of 16 kHz mono starting 12.5 s into the file.
    let chunk = AudioChunk(
        format: AudioFormat(sampleRate: 16000, channels: 1), samples: [Float](repeating: 0.1, count: 16000),
        start: 12.5, end: 13.5, index: 3, cut: .voice)

    @Test func aServerWithoutAModelsRoutePassesPrepareAndARefusedKeyDoesNot() async throws {
        // faster-whisper-server and whisper.cpp's server have no /models: 404 or 405 is fine.
        for status in [404, 405] {
            let (asr, transport) = try transcriber([ScriptedTransport.json(status, #"{"detail":"Not Found"}"#)])
            try await asr.prepare()
            #expect(transport.requests.map(\.request.url) == ["http://127.0.0.1:9/v1/models"])
        }
        let (refused, _) = try transcriber([ScriptedTransport.json(401, #"{"error":{"message":"bad key"}}"#)])
        let error = await #expect(throws: VoxError.self) { try await refused.prepare() }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("set VOXPIPE_TEST_UNSET_KEY (or apiKeyFile) to a valid key") == true)
        // A server with its own health route, and one probed by nothing at all.
        let (health, healthTransport) = try transcriber(
            [ScriptedTransport.json(200, "{}")], options: ["probe": "/health"])
        try await health.prepare()
        #expect(healthTransport.requests.map(\.request.url) == ["http://127.0.0.1:9/v1/health"])
        let (none, noneTransport) = try transcriber([], options: ["probe": ""])
        try await none.prepare()
        #expect(noneTransport.requests.isEmpty)
    }

    @Test func aChunkGoesUpAsWAVAndWordTimesComeBackInTheFile() async throws {
        let answer = ScriptedTransport.json(
            200,
            #"{"text":" Guten Morgen. ","language":"german","words":[{"word":"Guten","start":0.1,"end":0.4},"#
                + #"{"word":" Morgen.","start":0.5,"end":0.9,"probability":0.8}]}"#
        )
        let (asr, transport) = try transcriber(
            [answer], options: ["model": "whisper-large", "prompt": "Deutschstunde"])
        let transcript = try await asr.transcribe(chunk)
        #expect(transcript.text == "Guten Morgen.")
        #expect(transcript.words.map(\.text) == ["Guten", "Morgen."])
        #expect(transcript.words.map(\.start) == [12.6, 13.0] && transcript.words.map(\.end) == [12.9, 13.4])
        #expect(
            transcript.words[1].confidence == 0.8 && transcript.language == "german"
                && transcript.model == "whisper-large")

        let request = try #require(transport.requests.first).request
        #expect(request.url == "http://127.0.0.1:9/v1/audio/transcriptions" && request.method == "POST")
        let body = String(decoding: request.body, as: UTF8.self)
        for field in [
            "model\"\r\n\r\nwhisper-large", "response_format\"\r\n\r\nverbose_json", "prompt\"\r\n\r\nDeutschstunde",
            "filename=\"chunk.wav\"",
        ] {
            #expect(body.contains(field), "missing \(field)")
        }
        // The file part is the chunk as 16-bit WAV: 44-byte header, 2 bytes a sample.
        #expect(request.body.count > 32_044 && body.contains("RIFF"))
    }

    @Test func anEmptyChunkSendsNothing() async throws {
        let (asr, transport) = try transcriber([])
        let empty = AudioChunk(format: chunk.format, samples: [], start: 1, end: 1, index: 0, cut: .voice)
        #expect(try await asr.transcribe(empty).text == "")
        #expect(transport.requests.isEmpty)
    }

    @Test func anAnswerWithoutTextIsAnErrorOfTheItem() async throws {
        let (asr, _) = try transcriber([ScriptedTransport.json(200, #"{"words":[]}"#)])
        await #expect(throws: HTTPError(.invalidResponse, "the transcription has no \"text\"")) {
            _ = try await asr.transcribe(chunk)
        }
        #expect(HTTPFailure.invalidResponse.category == .upstream)
    }

    /// The transcribe stage alone with this provider, as the fast tier runs it: no model, no server.
    @Test func theStageProbesAtPrepareThenTranscribesEachChunkInItsPlace() async throws {
        let clock = ManualClock()
        let answer = ScriptedTransport.json(200, #"{"text":" Guten Morgen. ","language":"german"}"#)
        let transport = ScriptedTransport([.respond(ScriptedTransport.models), .respond(answer)], clock: clock)
        let harness = try StageHarness(
            TranscribeStage.self, id: "asr",
            options: [
                "provider": [
                    "name": "openai", "baseURL": "http://127.0.0.1:9/v1", "apiKeyEnv": "VOXPIPE_TEST_UNSET_KEY",
                ]
            ], httpTransport: transport, clock: clock)
        let transcripts = try await harness.run([chunk], commit: false).outputs
        #expect(transcripts.map(\.text) == ["Guten Morgen."])
        #expect(transcripts.map(\.chunk.index) == [3] && transcripts.map(\.chunk.start) == [12.5])
        #expect(transcripts.map(\.provider) == ["openai"])
        #expect(
            transport.requests.map(\.request.url) == [
                "http://127.0.0.1:9/v1/models", "http://127.0.0.1:9/v1/audio/transcriptions",
            ])
    }
}
