import Foundation
import Testing
import VoxCore
import VoxHTTP
import VoxSynthesize
import VoxTestSupport

@testable import VoxServe

/// `voxpipe serve` of the English tutor (`Pipelines/lesson-tutor-en.json`): OpenAI's speech route
/// answers with the Piper voice.
@Suite(
    .serialized,
    .needs(.piperVoices),
    .needs(.whisperModels)
) struct PiperServeTests {
    static let englishTutor = packageRoot.appendingPathComponent("Pipelines/lesson-tutor-en.json")

    func pcm(_ server: ServerFixture, _ object: [String: Any]) async throws -> Data {
        var request = HTTPRequest(
            method: "POST", url: "http://127.0.0.1:\(server.port)/v1/audio/speech",
            headers: [("Content-Type", "application/json")],
            body: try JSONSerialization.data(withJSONObject: object.merging(["response_format": "pcm"]) { $1 }))
        request.timeout = 1200
        let response = try await server.client.perform(request)
        #expect(response.status == 200, "\(object): \(String(decoding: response.body, as: UTF8.self))")
        return response.body
    }

    /// Given the English tutor served, then `/v1/audio/speech` speaks with Piper: the same text gives
    /// the same bytes (Piper is reproducible, espeak-ng's process-per-piece speech differs from it),
    /// and `speed` 2 gives under 0.8 of the length (the pauses between sentences keep their length).
    @Test func theEnglishTutorSpeaksWithPiperAndHonoursSpeed() async throws {
        let server = try await ServerFixture.start(spec: Self.englishTutor) { $0.timeout = 900 }
        let text = "Hello! It is nice to see you. How are you today?"
        let first = try await pcm(server, ["input": text])
        let again = try await pcm(server, ["input": text, "voice": "alloy"])
        #expect(first == again && first.count > 48000)
        let piper = try await PiperProvider(settings: try PiperProvider.settings(piperOptions), engines: testEngines)
            .synthesize(text)
        // 16-bit mono at 24 kHz from Piper's 22.05 kHz: as long as Piper's speech, within the resampler's edges.
        let seconds = Double(first.count) / 48000
        #expect(abs(seconds - Double(piper.samples.count) / 22050) < 0.05, "\(seconds) s")
        let fast = try await pcm(server, ["input": text, "speed": 2.0])
        #expect(Double(fast.count) < Double(first.count) * 0.8, "\(fast.count) vs \(first.count)")
    }

    var piperOptions: StageOptions {
        StageOptions(
            stageID: "voice", path: "stages[5].provider", baseDirectory: URL(fileURLWithPath: "/"), values: [:],
            specs: PiperProvider.options)
    }
}
