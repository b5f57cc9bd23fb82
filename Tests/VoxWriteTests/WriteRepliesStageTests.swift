import Foundation
import Testing
import VoxCore
import VoxFormats
import VoxTestSupport
import VoxTesting

@testable import VoxWrite

@Suite struct WriteRepliesStageTests {
    let format = AudioFormat(sampleRate: 22050, channels: 1)

    func reply(_ text: String, index: Int) -> Reply {
        let chunk = AudioChunk(
            format: format, samples: [], start: Double(index), end: Double(index) + 1, index: index, cut: .voice)
        return Reply(
            transcript: Transcript(
                chunk: chunk, text: "heard \(index)", words: [], language: "en", provider: "t", model: nil),
            text: text)
    }

    /// The speech of `reply` in parts of `sizes` samples (a ramp, so order matters).
    func spoken(_ reply: Reply, sizes: [Int]) -> [Speech] {
        var at = 0
        return sizes.enumerated().map { i, size in
            defer { at += size }
            let samples = (at..<at + size).map { Float($0 % 1000) / 2000 }
            let audio = AudioChunk(
                format: format, samples: samples, start: 0, end: 0, index: reply.transcript.chunk.index,
                cut: .synthesized, continues: i < sizes.count - 1)
            return Speech(audio: audio, reply: reply)
        }
    }

    struct Written: Decodable {
        struct Turn: Decodable {
            var turn: Int
            var transcription: String
            var reply: String
            var audio: String?
        }
        var turns: [Turn]
    }

    /// Given a reply spoken in three parts and one spoken whole, then the JSON has two turns, and the
    /// first's embedded audio is the three parts' samples as one WAV.
    @Test func aReplySpokenInPartsIsOneTurnWithAllItsAudio() async throws {
        let out = temporaryDirectory()
        let first = reply("One. Two. Three.", index: 0)
        let parts = spoken(first, sizes: [300, 500, 200])
        let inputs = parts + spoken(reply("Four.", index: 1), sizes: [400])
        let harness = try StageHarness(
            WriteRepliesStage.self, id: "replies", options: ["embedAudio": true], outputDirectory: out)
        _ = try await harness.run(inputs)
        let written = try JSONDecoder().decode(
            Written.self, from: Data(contentsOf: out.appendingPathComponent("item/replies.json")))
        #expect(written.turns.map(\.turn) == [1, 2])
        #expect(written.turns.map(\.reply) == ["One. Two. Three.", "Four."])
        #expect(written.turns.map(\.transcription) == ["heard 0", "heard 1"])
        let whole = WAVData.pcm16(parts.flatMap(\.audio.samples), format: format).base64EncodedString()
        #expect(written.turns[0].audio == whole)
    }
}
