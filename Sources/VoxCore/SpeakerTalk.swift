import Foundation

/// How long one speaker of an item talked, and in how many turns: a line of the item's
/// `speakers` in the run's report (`{"speaker": "Speaker 1", "seconds": 12.34, "turns": 5}`) and
/// its manifest.
public struct SpeakerTalk: Codable, Sendable, Equatable {
    /// The speaker's label: an enrolled voice's name, else `Speaker N`.
    public var speaker: String
    /// Seconds of the speaker's turns (the turns as diarized, without the padding their chunks get).
    public var seconds: Double
    /// How many turns the speaker took.
    public var turns: Int

    public init(speaker: String, seconds: Double, turns: Int) {
        self.speaker = speaker
        self.seconds = seconds
        self.turns = turns
    }
}

/// The talk time and turns of an item's speakers, counted turn by turn as a speaker chunker
/// labels them (`ItemFacts[.speakerTalk]`), for the report. A turn of the speaker who spoke last
/// that starts within `joinGap` of where their last turn ended goes on that turn (a turn that a
/// diarized block's end cut in two is one turn).
public struct SpeakerTally: Sendable {
    /// Each speaker's total so far, in order of first appearance (seconds not rounded).
    public private(set) var talk: [SpeakerTalk] = []
    /// Where the last turn ended, and whose it was.
    private var last: (speaker: String, end: Double)?
    public let joinGap: Double

    public init(joinGap: Double) { self.joinGap = joinGap }

    /// Counts a turn of `speaker` from `start` to `end` (seconds in the item's time; turns come
    /// in order of time).
    public mutating func add(_ speaker: String, start: Double, end: Double) {
        guard end > start else { return }
        let continues = last.map { $0.speaker == speaker && start - $0.end <= joinGap } ?? false
        last = (speaker, end)
        guard let i = talk.firstIndex(where: { $0.speaker == speaker }) else {
            talk.append(SpeakerTalk(speaker: speaker, seconds: end - start, turns: 1))
            return
        }
        talk[i].seconds += end - start
        if !continues { talk[i].turns += 1 }
    }

    /// The totals as the report gives them: seconds to the millisecond.
    public var report: [SpeakerTalk] {
        talk.map { SpeakerTalk(speaker: $0.speaker, seconds: ($0.seconds * 1000).rounded() / 1000, turns: $0.turns) }
    }
}

extension ItemFactKey where Value == SpeakerTally {
    /// Each speaker's talk time and turns, as a speaker chunker counted them; whole once the
    /// chunker's input has ended. The runner puts it in the item's report line and manifest.
    public static var speakerTalk: Self { Self("speakerTalk") }
}
