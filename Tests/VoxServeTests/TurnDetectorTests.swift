import Testing

@testable import VoxServe

/// Server VAD's turns from speech probabilities alone (the Silero network is not needed here):
/// where a turn starts (padding included), when silence ends it, and what does not.
@Suite struct TurnDetectorTests {
    /// Feeds one probability a window; returns each change with the window it came at.
    func turns(_ probabilities: [Double], _ settings: TurnDetector.Settings = .init()) -> [TurnDetector.Change] {
        var detector = TurnDetector(settings: settings)
        return probabilities.enumerated().compactMap { i, p in
            detector.window(probability: p, endingAt: (i + 1) * TurnDetector.window)
        }
    }

    @Test func aTurnStartsAtItsFirstSpeechWindowLessThePaddingAndEndsAfterTheSilence() {
        // 10 quiet windows, 20 of speech, then quiet: 500 ms of silence is 15.6 windows (16).
        let probabilities =
            Array(repeating: 0.05, count: 10) + Array(repeating: 0.9, count: 20)
            + Array(repeating: 0.05, count: 30)
        let changes = turns(probabilities)
        // Speech from sample 5120; 300 ms of padding is 4800 samples.
        #expect(changes.first == .started(sample: 5120 - 4800))
        // The last speech window ends at 30 * 512; silence ends the turn 8000 samples later, at
        // the first window end from there.
        #expect(changes.last == .stopped(sample: 46 * 512, speechEnd: 30 * 512))
        // 200 ms after the speech (3200 samples: 7 windows), the pause is announced.
        #expect(changes.dropFirst().first == .paused(speechEnd: 30 * 512))
        #expect(changes.count == 3)
    }

    @Test func aShortPauseInsideATurnDoesNotEndItAndHysteresisKeepsWeakSpeech() {
        // Speech, 10 windows (320 ms) of quiet, speech at 0.4 (under the threshold, above 0.35).
        let probabilities =
            Array(repeating: 0.9, count: 10) + Array(repeating: 0.0, count: 10)
            + Array(repeating: 0.4, count: 10) + Array(repeating: 0.0, count: 20)
        #expect(
            turns(probabilities) == [
                .started(sample: 0), .paused(speechEnd: 10 * 512), .resumed, .paused(speechEnd: 30 * 512),
                .stopped(sample: 46 * 512, speechEnd: 30 * 512),
            ])
    }

    @Test func theSettingsChangeWhereTurnsStartAndEnd() {
        let probabilities =
            Array(repeating: 0.0, count: 40) + Array(repeating: 0.7, count: 5)
            + Array(repeating: 0.0, count: 40)
        // A threshold above the speech: no turn at all.
        #expect(turns(probabilities, .init(threshold: 0.8)).isEmpty)
        // No padding, 200 ms of silence (7 windows, 3200 samples: the turn ends 7 windows on).
        let tight = turns(probabilities, .init(threshold: 0.5, prefixPaddingMs: 0, silenceDurationMs: 200))
        #expect(
            tight == [
                .started(sample: 40 * 512), .paused(speechEnd: 45 * 512),
                .stopped(sample: 52 * 512, speechEnd: 45 * 512),
            ])
        // Padding is cut at the session's start.
        #expect(turns([0.9, 0.0], .init(prefixPaddingMs: 1000)).first == .started(sample: 0))
    }

    @Test func turnsAlternateStartAndStopWithOnePerStretchOfSpeech() {
        // Four stretches of 800 ms of speech with 800 ms of quiet before each and after the last.
        let probabilities = (0..<225).map { i in (i / 25) % 2 == 1 ? 0.9 : 0.1 }
        let whole = turns(probabilities)
        #expect(whole.count == 12)
        #expect(
            whole.enumerated().allSatisfy { i, change in
                switch change {
                case .started: i % 3 == 0
                case .paused: i % 3 == 1
                case .stopped: i % 3 == 2
                case .resumed: false
                }
            })
    }
}
