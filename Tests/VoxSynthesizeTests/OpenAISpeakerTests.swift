import Foundation
import Testing
import VoxCore
import VoxFormats
import VoxHTTP
import VoxTestSupport
import VoxTesting

@testable import VoxSynthesize

/// The OpenAI speaker's requests and how it reads answers (raw PCM and WAV), over a scripted
/// transport.
@Suite struct OpenAISpeakerTests {
    func speaker(_ answers: [HTTPResponse], format: String) throws -> (OpenAISpeaker, ScriptedTransport) {
        let clock = ManualClock()
        let transport = ScriptedTransport(answers.map { .respond($0) }, clock: clock)
        let values: [String: JSONValue] = [
            "baseURL": "http://127.0.0.1:9/v1", "apiKeyEnv": "VOXPIPE_TEST_UNSET_KEY", "format": .string(format),
            "voice": "nova",
        ]
        let settings = OpenAISpeaker.settings(
            StageOptions(
                stageID: "tts", path: "p", baseDirectory: URL(fileURLWithPath: "/"), values: values,
                specs: OpenAISpeaker.options))
        return (
            try OpenAISpeaker(settings: settings, context: testContext(transport: transport, clock: clock)), transport
        )
    }

    func audio(_ body: Data) -> HTTPResponse {
        HTTPResponse(status: 200, headers: ["content-type": "audio/wav"], body: body)
    }

    @Test func rawPCMIsTwentyFourKilohertzMonoLittleEndian() async throws {
        var pcm = Data()
        for value: Int16 in [0, 16384, -16384, 32767] {
            withUnsafeBytes(of: value.littleEndian) { pcm.append(contentsOf: $0) }
        }
        let (tts, transport) = try speaker([audio(pcm)], format: "pcm")
        let (format, samples) = try await tts.synthesize("Hallo.")
        #expect(format == AudioFormat(sampleRate: 24000, channels: 1))
        #expect(samples == [0, 0.5, -0.5, Float(32767) / 32768])
        let body = try #require(
            JSONSerialization.jsonObject(with: transport.requests[0].request.body) as? [String: Any])
        #expect(
            body["input"] as? String == "Hallo." && body["voice"] as? String == "nova"
                && body["response_format"] as? String == "pcm")
    }

    @Test func aWAVAnswerKeepsTheServersRateAndLongTextGoesInPieces() async throws {
        let wav = WAVData.pcm16([0.25, -0.25], format: AudioFormat(sampleRate: 22050, channels: 1))
        let text = String(repeating: "Ein ganzer Satz. ", count: 400)
        let (tts, transport) = try speaker([audio(wav), audio(wav)], format: "wav")
        let (format, samples) = try await tts.synthesize(text)
        #expect(format.sampleRate == 22050 && samples.count == 4)
        #expect(transport.requests.count == 2)
    }

    @Test func anAnswerThatIsNotWAVIsAnError() async throws {
        let (tts, _) = try speaker([audio(Data("<html>oops</html>".utf8))], format: "wav")
        await #expect(throws: HTTPError(.invalidResponse, "the speech answer is not a 16-bit PCM WAV (17 bytes)")) {
            _ = try await tts.synthesize("Hallo.")
        }
    }

    /// The synthesize stage alone with this provider, as the fast tier runs it: no espeak-ng process,
    /// no server. Each reply with words is spoken, in its place; one without is passed over.
    @Test func theStageSpeaksEachReplyWithWordsInItsPlace() async throws {
        let clock = ManualClock()
        let wav = WAVData.pcm16([0.25, -0.25, 0.5], format: AudioFormat(sampleRate: 22050, channels: 1))
        let transport = ScriptedTransport([.respond(ScriptedTransport.models), .respond(audio(wav))], clock: clock)
        let harness = try StageHarness(
            SynthesizeStage.self, id: "voice",
            options: [
                "provider": [
                    "name": "openai", "baseURL": "http://127.0.0.1:9/v1", "apiKeyEnv": "VOXPIPE_TEST_UNSET_KEY",
                    "format": "wav",
                ]
            ], httpTransport: transport, clock: clock)
        let speech = try await harness.run(
            [testReply("", index: 1, start: 1), testReply("Hallo.", index: 2, start: 3)], commit: false
        ).outputs
        #expect(speech.map(\.reply.text) == ["Hallo."])
        #expect(speech.map(\.audio.index) == [2] && speech.map(\.audio.start) == [3])
        #expect(speech.first?.audio.format == AudioFormat(sampleRate: 22050, channels: 1))
        #expect(speech.first?.audio.samples.count == 3)
        #expect(transport.requests.count == 2)
    }
}
