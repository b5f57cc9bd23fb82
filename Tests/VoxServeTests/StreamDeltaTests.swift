import Testing
import VoxCore

@testable import VoxServe

/// `stream=true` transcriptions send a delta a segment the recogniser heard, with that segment's
/// words, and the deltas joined are the chunk's text.
@Suite struct StreamDeltaTests {
    func word(_ text: String, _ start: Double) -> Word {
        Word(text: text, start: start, end: start + 0.3, confidence: 0.9)
    }

    func transcript(_ text: String, segments: [TranscriptSegment], words: [Word]) -> Transcript {
        Transcript(
            chunk: AudioChunk(
                format: AudioFormat(sampleRate: 16000, channels: 1), samples: [], start: 10, end: 20, index: 0,
                cut: .voice), text: text, words: words,
            language: "en", provider: "whisper", model: "base", segments: segments)
    }

    @Test func eachSegmentIsADeltaWithItsOwnWords() {
        let words = [
            word("Good", 10.2), word("morning.", 10.6), word("How", 12.0), word("are", 12.3), word("you?", 12.6),
        ]
        let t = transcript(
            "Good morning. How are you?",
            segments: [
                TranscriptSegment(text: "Good morning.", start: 10.2, end: 10.9),
                TranscriptSegment(text: " How are you? ", start: 12.0, end: 12.9),
            ], words: words)
        let deltas = TutorServer.deltas(t)
        #expect(deltas.map(\.text) == ["Good morning.", "How are you?"])
        #expect(deltas.map { $0.words.map(\.text) } == [["Good", "morning."], ["How", "are", "you?"]])
        #expect(deltas.map(\.text).joined(separator: " ") == t.text)
    }

    @Test func textTheSegmentsDoNotMakeUpIsOneDelta() {
        let words = [word("Hallo", 10.1)]
        // No segments (another provider), one segment, or segments that differ from the text.
        for segments in [
            [], [TranscriptSegment(text: "Hallo", start: 10.1, end: 10.4)],
            [
                TranscriptSegment(text: "Hallo", start: 10.1, end: 10.4),
                TranscriptSegment(text: "du", start: 11, end: 12),
            ],
        ] {
            let deltas = TutorServer.deltas(transcript("Hallo", segments: segments, words: words))
            #expect(deltas.map(\.text) == ["Hallo"])
            #expect(deltas.first?.words == words)
        }
        #expect(TutorServer.deltas(transcript("  ", segments: [], words: [])).isEmpty)
    }
}
