import Foundation
import Testing
import VoxCore
import VoxFormats
import VoxResample
import VoxTestSupport
import VoxTesting

@testable import VoxChunk
@testable import VoxSynthesize

/// Two voices the segmentation model hears as one local speaker: the LibriVox reader and the
/// Piper voice (en_US-joe-medium) answering her after short pauses. Told apart only by the check
/// of each turn's own embedding (the diarizer's step 6); without it, whole answers took the
/// reader's label (bench/diarization.sh: 12.5% and 17.7% DER on two such conversations).
@Suite(.needs(.piperVoices), .needs(.diarizationModels), .needs(.librivox))
struct SpeakersAlikeTests {
    static let answers = [
        "That is a fine start. The family lived at Norland Park for many generations.",
        "Yes, and the old gentleman had a sister who kept his house for many years.",
        "Good. Now tell me, who inherited the estate when the old gentleman died?",
        "Exactly right. Read the next lines for me, and take your time with them.",
    ]

    @Test func twoVoicesTheSegmentationHearsAsOneAreToldApart() async throws {
        let speech = wholeReplies(
            try await StageHarness(
                SynthesizeStage.self, options: ["provider": ["name": "piper"]], rateConversion: SoxrRateConversion(),
                engines: testEngines
            ).run(Self.answers.enumerated().map { testReply($1, index: $0) }, commit: false).outputs)
        let joe = try speech.map { s in
            try SoxrRateConversion().converter(channels: 1, from: s.audio.format.sampleRate, to: 16000)
                .convertAll(s.audio.samples)
        }
        var samples = [Float](repeating: 0, count: 8000)
        var turns: [(start: Double, end: Double, who: String)] = []
        func say(_ line: [Float], _ who: String) {
            turns.append((Double(samples.count) / 16000, Double(samples.count + line.count) / 16000, who))
            samples += line + [Float](repeating: 0, count: 4800)
        }
        for (line, answer) in zip(["0870", "0880", "0890", "0920"], joe) {
            let url = InstalledFixture.librivox.url.appendingPathComponent(
                "sense_and_sensibility_01_austen_64kb-\(line).wav")
            say(try #require(WAVData.decodePCM16(try Data(contentsOf: url))).samples, "reader")
            say(answer, "joe")
        }
        let chunks = try await StageHarness(
            ChunkStage.self, options: ["mode": "speakers", "speakers": 2], engines: testEngines
        ).run(blocks(samples, format: AudioFormat(sampleRate: 16000, channels: 1), blockFrames: 4000), commit: false)
            .outputs
        // Each turn's label: the one most of its time carries.
        let labels = turns.map { turn -> String? in
            var time: [String: Double] = [:]
            for chunk in chunks where chunk.end > turn.start && chunk.start < turn.end {
                time[chunk.speaker ?? "-", default: 0] += min(chunk.end, turn.end) - max(chunk.start, turn.start)
            }
            return time.max { $0.value < $1.value }?.key
        }
        let reader = Set(zip(turns, labels).filter { $0.0.who == "reader" }.map(\.1))
        let piper = Set(zip(turns, labels).filter { $0.0.who == "joe" }.map(\.1))
        #expect(reader == ["Speaker 1"], "the reader's turns: \(labels)")
        #expect(piper == ["Speaker 2"], "Piper's turns: \(labels)")
    }
}
