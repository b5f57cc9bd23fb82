import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxChunk

/// Each speaker's talk time and turns (`facts[.speakerTalk]`, the report's `speakers`) on real
/// diarization.
extension SpeakerChunkTests {
    /// The chunks and the speakers' talk time of mode speakers over `samples`.
    func speakersAndTalk(
        _ samples: [Float], _ options: [String: JSONValue] = [:], baseDirectory: URL? = nil
    ) async throws -> (chunks: [AudioChunk], talk: [SpeakerTalk]?) {
        var all: [String: JSONValue] = ["mode": "speakers"]
        for (k, v) in options { all[k] = v }
        let (chunks, facts) = try await StageHarness(
            ChunkStage.self, options: all, baseDirectory: baseDirectory, engines: testEngines
        ).run(blocks(samples, format: Self.mono16k, blockFrames: 4000), commit: false)
        return (chunks, facts[.speakerTalk]?.report)
    }

    @Test func eachSpeakersTalkTimeAndTurnsAreCountedFromTheirTurns() async throws {
        let (c, chunks, talk) = try await Self.twoSpeakers.value
        let got = try #require(talk)
        #expect(got.map(\.speaker) == ["Speaker 1", "Speaker 2"])
        #expect(got.map(\.turns) == [3, 3], "\(got)")
        for (who, label) in [("reader", "Speaker 1"), ("espeak", "Speaker 2")] {
            let truth = c.turns.filter { $0.who == who }.map { $0.end - $0.start }.reduce(0, +)
            let seconds = got.first { $0.speaker == label }?.seconds ?? 0
            // The turns as diarized, not the padded chunks: the clips' length less the silence at
            // their ends (up to 0.6 s a clip).
            #expect(seconds <= truth && seconds > truth - 0.6 * 3, "\(label): \(seconds) s, clips \(truth) s")
            let padded = chunks.filter { $0.speaker == label }.map { $0.end - $0.start }.reduce(0, +)
            #expect(seconds < padded, "\(label): \(seconds) s of turns, \(padded) s of chunks")
        }
        // Rounded to the millisecond.
        #expect(got.allSatisfy { ($0.seconds * 1000).rounded() / 1000 == $0.seconds })
    }

    @Test func aTurnCutByABlocksEndIsCountedOnce() async throws {
        // One reader turn of 22 s (four lines in a row) from 10 s into a 38-s stream diarized 30 s
        // at a time: the first block is cut inside it (it started in the block's first half), and
        // the rest is diarized with the next block. One turn, as in one block.
        var c = Conversation()
        c.pause(10)
        c.say(try ["0870", "0890", "0920", "0930"].flatMap(Self.reader), "reader")
        c.pause(6)
        let blocked = try await speakersAndTalk(c.samples, ["blockSeconds": 30])
        let whole = try await speakersAndTalk(c.samples).talk
        #expect(Set(blocked.chunks.map(\.speaker)) == ["Speaker 1"])
        #expect(blocked.chunks.contains { $0.start < 29 && $0.end > 29 } == false, "cut at the block's end")
        #expect(blocked.talk?.map(\.turns) == [1] && whole?.map(\.turns) == [1], "\(String(describing: blocked.talk))")
    }
}
