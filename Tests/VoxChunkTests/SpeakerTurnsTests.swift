import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxChunk

/// Mode `speakers` without its models: its options, and the steps from a diarizer's segments to
/// labelled turns.
@Suite struct SpeakerTurnsTests {
    func turn(_ start: Double, _ end: Double, _ speaker: Int) -> SpeakerTurn {
        SpeakerTurn(start: start, end: end, speaker: speaker)
    }

    @Test func aSpeakerCountOutOfRangeFailsAtLoadNamingItsPath() {
        for count in [0, 100] {
            let error = #expect(throws: VoxError.self) {
                try StageHarness(ChunkStage.self, options: ["mode": "speakers", "speakers": .number(Double(count))])
            }
            #expect(error?.category == .invalidSpec)
            #expect(error?.message == "stages[0].speakers: \(count) is out of range 1…20")
        }
    }

    @Test func speakerOptionsOnAnotherModeFailAtLoad() {
        for (name, value) in [("minTurn", JSONValue.number(1)), ("overlapSpeech", "drop"), ("speakers", 2)] {
            let error = #expect(throws: VoxError.self) {
                try StageHarness(ChunkStage.self, options: ["mode": "voice", name: value])
            }
            #expect(error?.message == "stages[0].\(name): applies only where mode is speakers (here: voice)")
        }
        let both = #expect(throws: VoxError.self) {
            try StageHarness(ChunkStage.self, options: ["mode": "speakers", "speakers": 2, "speakerThreshold": 0.7])
        }
        #expect(both?.message == "stages[0].speakerThreshold: applies only when speakers (the count) is not set")
        let overlap = #expect(throws: VoxError.self) {
            try StageHarness(ChunkStage.self, options: ["mode": "speakers", "overlapSpeech": "both"])
        }
        #expect(overlap?.message == "stages[0].overlapSpeech: \"both\" is not one of \"first\" | \"drop\"")
    }

    @Test func aMissingVoiceClipFailsAtLoadAsMissingInput() {
        let dir = URL(fileURLWithPath: temporaryDirectory().path, isDirectory: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let error = #expect(throws: VoxError.self) {
            try StageHarness(
                ChunkStage.self, options: ["mode": "speakers", "voices": ["Tutor": "voices/anna.wav"]],
                baseDirectory: dir)
        }
        #expect(error?.category == .noInput)
        #expect(error?.message == "stages[0].voices.Tutor: no such file: \(dir.path)/voices/anna.wav")
        let notPath = #expect(throws: VoxError.self) {
            try StageHarness(ChunkStage.self, options: ["mode": "speakers", "voices": ["Tutor": 3]])
        }
        #expect(notPath?.message == "stages[0].voices.Tutor: expected a path")
    }

    @Test func overlappedSpeechStaysWithTheFirstSpeakerOrIsDropped() {
        // 0 speaks 0-5, 1 speaks 4-8, and 0 says something at 6-7 inside it.
        let segments = [turn(0, 5, 0), turn(4, 8, 1), turn(6, 7, 0)]
        #expect(SpeakerTurns.resolveOverlaps(segments, policy: .first) == [turn(0, 5, 0), turn(5, 8, 1)])
        #expect(
            SpeakerTurns.resolveOverlaps(segments, policy: .drop) == [turn(0, 4, 0), turn(5, 6, 1), turn(7, 8, 1)])
    }

    @Test func shortTurnsGoToTheNearerNeighbourAndOneSpeakersTurnsJoin() {
        // A 0.2-s turn of 1 between two of 0: it becomes 0's, and the three are one turn.
        let merged = SpeakerTurns.mergeShort(
            [turn(0, 3, 0), turn(3.1, 3.3, 1), turn(3.4, 6, 0), turn(6.2, 9, 1)], minTurn: 0.3, joinGap: 0.5)
        #expect(merged == [turn(0, 6, 0), turn(6.2, 9, 1)])
        // A short turn with nobody near stays.
        let alone = [turn(0, 3, 0), turn(5, 5.2, 1), turn(8, 9, 0)]
        #expect(SpeakerTurns.mergeShort(alone, minTurn: 0.3, joinGap: 0.5) == alone)
    }

    @Test func turnsArePaddedIntoTheSilenceAroundThemButNotIntoAnotherTurn() {
        let turns = [turn(0.1, 3, 0), turn(3.2, 5, 1), turn(8, 9.9, 0)]
        let padded = SpeakerCutter.padded(turns, by: 0.2, end: 10)
        #expect(padded == [turn(0.05, 3.1, 0), turn(3.1, 5.2, 1), turn(7.8, 9.95, 0)])
    }

    @Test func blockSpeakersMatchEarlierOnesByVoiceAndNewOnesAreNumbered() {
        let a: [Float] = [1, 0, 0], b: [Float] = [0, 1, 0], c: [Float] = [0, 0, 1]
        var book = SpeakerBook(threshold: 0.5, limit: nil, voices: [.init(name: "Tutor", embedding: c)])
        #expect(book.assign([(a, 10), (b, 5)]) == [0, 1])
        // The next block has b first, then a voice like a, then the enrolled one.
        #expect(book.assign([(b, 3), ([0.9, 0.1, 0], 4), (c, 2)]) == [1, 0, 2])
        #expect(book.speakers.map(\.label) == ["Speaker 1", "Speaker 2", "Tutor"])
        // With a count, a speaker past it goes to the nearest.
        var two = SpeakerBook(threshold: 0.5, limit: 2, voices: [])
        #expect(two.assign([(a, 1), (b, 1)]) == [0, 1])
        #expect(two.assign([([0, 0.6, 0.8], 1), ([0.2, 0.9, 0.3], 1)]) == [1, 1])
        #expect(two.speakers.count == 2)
    }

    @Test func aTurnIsCheckedOnItsOwnVoiceAgainstTheEnrolledOnes() {
        let tutor: [Float] = [0, 0, 1], learner: [Float] = [1, 0, 0]
        var book = SpeakerBook(threshold: 0.5, limit: 2, voices: [.init(name: "Tutor", embedding: tutor)])
        // The clustering put a tutor's turn with the learner's: their cluster's mean is the learner's more.
        #expect(book.assign([([0.9, 0, 0.3], 10), ([0, 0.1, 1], 5)]) == [0, 1])
        #expect(book.speakers.map(\.label) == ["Speaker 1", "Tutor"])
        // A turn of Speaker 1 in the tutor's voice goes to the tutor; the learner's own stay.
        #expect(book.checked([0, 0.2, 0.98], current: 0) == 1)
        #expect(book.checked(learner, current: 0) == 0)
        // A turn of the tutor that is not in the tutor's voice goes to the speaker it is more like.
        #expect(book.checked([0.95, 0.3, 0.1], current: 1) == 0)
        #expect(book.checked([0.1, 0.3, 0.95], current: 1) == 1)
        // Not like the enrolled voice, nor like anyone more: it stays.
        #expect(book.checked([0, 1, 0], current: 0) == 0)
        // Without enrolled voices, turns keep their cluster's speaker.
        var plain = SpeakerBook(threshold: 0.5, limit: nil, voices: [])
        #expect(plain.assign([(learner, 1), (tutor, 1)]) == [0, 1])
        #expect(plain.checked(tutor, current: 0) == 0)
    }

    @Test func completeLinkageJoinsToTheCountOrWhileCloserThanTheThreshold() {
        // Two tight pairs and an item farther from both than they are from each other (complete
        // linkage: two clusters are as far apart as their farthest members).
        let items: [[Float]] = [[1, 0, 0], [0.99, 0.14, 0], [0, 1, 0], [0.1, 0.99, 0], [0, -0.2, 1]]
        #expect(Diarizer.cluster(items, count: 3, threshold: 0) == [0, 0, 1, 1, 2])
        // Two speakers: the odd item alone is a small cluster (under 2 items), so it does not take
        // a counted speaker's place; it goes to the nearer of the two pairs.
        #expect(Diarizer.cluster(items, count: 2, threshold: 0) == [0, 0, 1, 1, 0])
        #expect(Diarizer.cluster(items, count: 9, threshold: 0) == [0, 1, 2, 3, 4])
        #expect(Diarizer.cluster(items, count: nil, threshold: 0.05) == [0, 0, 1, 1, 2])
        #expect(Diarizer.cluster(items, count: nil, threshold: 0.001) == [0, 1, 2, 3, 4])
        #expect(Diarizer.cluster(items, count: nil, threshold: 2) == [0, 0, 0, 0, 0])
        #expect(Diarizer.cluster([[1, 0]], count: 2, threshold: 0.5) == [0])
    }

    @Test func clusteredItemsMoveToTheirNearestCentre() {
        // At 8°, 19°, 34°, 57°, 59° and 84°: complete linkage joins 34° to 57° and 59° (25° to
        // the farther of them, 26° to 8°), then 84°; but 34° is nearer the centre of 8° and 19°
        // (13.5°) than that of its own cluster (58.5°), and the refinement moves it there.
        let items: [[Float]] = [
            [0.99, 0.14], [0.94, 0.33], [0.83, 0.56], [0.54, 0.84], [0.52, 0.86], [0.1, 0.99],
        ]
        #expect(Diarizer.cluster(items, count: 2, threshold: 0) == [0, 0, 0, 1, 1, 1])
        #expect(Diarizer.minClusterSize(10) == 2 && Diarizer.minClusterSize(41) == 3)
    }

    @Test func segmentsOfOneSpeakerThatOverlapOrTouchBecomeOne() {
        let segments = [
            Diarizer.Segment(start: 0, end: 2, speaker: 0), .init(start: 1.5, end: 3, speaker: 1),
            .init(start: 2, end: 4, speaker: 0), .init(start: 5, end: 6, speaker: 0),
        ]
        #expect(
            Diarizer.joined(segments) == [
                .init(start: 0, end: 4, speaker: 0), .init(start: 1.5, end: 3, speaker: 1),
                .init(start: 5, end: 6, speaker: 0),
            ])
    }

    @Test func localSpeakersOfAWindowGoToDifferentSpeakersWhereThereAreEnough() {
        // Both prefer speaker 0; the one that agrees less takes its next best.
        #expect(Diarizer.bestAssignment([[0.9, 0.1], [0.8, 0.7]], clusters: 2) == [0, 1])
        #expect(Diarizer.bestAssignment([[0.6, 0.5], [0.95, 0.2]], clusters: 2) == [1, 0])
        // More local speakers than speakers: each its own best.
        #expect(Diarizer.bestAssignment([[0.9, 0.1], [0.8, 0.7], [0.2, 0.3]], clusters: 2) == [0, 0, 1])
    }

    @Test func aBlockIsCutBeforeTheTurnsRunningIntoItsEndWithoutAPause() {
        // The last turn runs into the last second; the turn before it ends as it starts: both go.
        #expect(SpeakerCutter.cut([turn(1, 12, 0), turn(22, 27.1, 1), turn(27.1, 29.9, 0)], seconds: 30) == 22)
        // After a pause, only the last.
        #expect(SpeakerCutter.cut([turn(1, 12, 0), turn(22, 26, 1), turn(27.1, 29.9, 0)], seconds: 30) == 27.1)
        // Never before the block's second half; a turn ending early: a second before the end.
        #expect(SpeakerCutter.cut([turn(1, 16, 0), turn(16, 29.9, 1)], seconds: 30) == 16)
        #expect(SpeakerCutter.cut([turn(1, 14, 0), turn(14, 29.9, 1)], seconds: 30) == 29)
        #expect(SpeakerCutter.cut([turn(1, 12, 0)], seconds: 30) == 29)
    }
}
