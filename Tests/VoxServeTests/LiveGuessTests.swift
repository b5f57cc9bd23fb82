import Testing

@testable import VoxServe

/// A live session transcribes a turn ahead (a guess) only with CPU to spare: a dropped guess
/// costs a decode that every session's committed turns would have had.
@Suite struct LiveGuessTests {
    @Test func aTurnIsGuessedOnlyWithAFreeSlotNoQueueAndNoCPUPressure() {
        func may(running: Int = 0, waiting: Int = 0, sessions: Int = 4, pressure: Int = 0) -> Bool {
            LiveSession.mayGuess(
                running: running, waiting: waiting, slots: 2, liveSessions: sessions, coresToLeave: pressure)
        }
        #expect(may() && may(running: 1))
        // Every slot taken, a turn waiting, or, with other sessions, the server's cgroup short of
        // CPU: no guess.
        #expect(!may(running: 2))
        #expect(!may(running: 1, waiting: 1))
        #expect(!may(pressure: 1))
        // A session alone guesses under its own pressure (it starves no other), not with a queue.
        #expect(may(sessions: 1, pressure: 1))
        #expect(!may(waiting: 1, sessions: 1))
    }
}
