import Testing

@testable import VoxServe

/// A live session transcribes a turn ahead (a guess) only with CPU to spare: a dropped guess
/// costs a decode that every session's committed turns would have had.
@Suite struct LiveGuessTests {
    @Test func aTurnIsGuessedOnlyWithAFreeSlotNoQueueAndNoCPUPressure() {
        #expect(LiveSession.mayGuess(running: 0, waiting: 0, slots: 2, coresToLeave: 0))
        #expect(LiveSession.mayGuess(running: 1, waiting: 0, slots: 2, coresToLeave: 0))
        // Every slot taken, a turn waiting, or the server's cgroup short of CPU: no guess.
        #expect(!LiveSession.mayGuess(running: 2, waiting: 0, slots: 2, coresToLeave: 0))
        #expect(!LiveSession.mayGuess(running: 1, waiting: 1, slots: 2, coresToLeave: 0))
        #expect(!LiveSession.mayGuess(running: 0, waiting: 0, slots: 2, coresToLeave: 1))
    }
}
