import Testing

@testable import VoxServe

/// The turn scheduler's state machine alone, step by step: admission, order per session, and
/// turns withdrawn by a deadline or a departed client.
@Suite struct TurnScheduleTests {
    @Test func turnsRunUpToTheConcurrencyThenWaitThenAreRefused() {
        var schedule = TurnSchedule(concurrency: 2, queueLimit: 1)
        #expect(schedule.arrive(1, session: "a") == .run)
        #expect(schedule.arrive(2, session: "b") == .run)
        #expect(schedule.arrive(3, session: "c") == .wait)
        #expect(schedule.arrive(4, session: "d") == .refuse)
        #expect(schedule.finished(1) == [3])
        #expect(schedule.running.keys.sorted() == [2, 3])
    }

    @Test func aSessionsTurnsRunOneAtATimeInTheOrderTheyCameWhileOthersPass() {
        var schedule = TurnSchedule(concurrency: 2, queueLimit: 8)
        #expect(schedule.arrive(1, session: "a") == .run)
        // A slot is free, but a's first turn runs: its second and third wait, in order.
        #expect(schedule.arrive(2, session: "a") == .wait)
        #expect(schedule.arrive(3, session: "a") == .wait)
        // Another session's turn passes them.
        #expect(schedule.arrive(4, session: "b") == .run)
        #expect(schedule.finished(4) == [])
        #expect(schedule.finished(1) == [2])
        #expect(schedule.arrive(5, session: "c") == .run)
        #expect(schedule.finished(2) == [3])
        #expect(schedule.waiting.isEmpty)
    }

    @Test func aWaitingTurnWithdrawnLeavesTheQueueAndLetsTheNextOfItsSessionStart() {
        var schedule = TurnSchedule(concurrency: 1, queueLimit: 8)
        #expect(schedule.arrive(1, session: "a") == .run)
        #expect(schedule.arrive(2, session: "b") == .wait)
        #expect(schedule.arrive(3, session: "b") == .wait)
        #expect(schedule.withdraw(2) == .removed(start: []))
        #expect(schedule.finished(1) == [3])
        #expect(schedule.withdraw(3) == .cancelRunning)
        #expect(schedule.withdraw(99) == .unknown)
        #expect(schedule.finished(3) == [])
        #expect(schedule.running.isEmpty && schedule.waiting.isEmpty)
    }

    @Test func aRunningTurnKeepsItsSlotUntilItHasStopped() {
        var schedule = TurnSchedule(concurrency: 1, queueLimit: 8)
        #expect(schedule.arrive(1, session: "a") == .run)
        #expect(schedule.arrive(2, session: "b") == .wait)
        #expect(schedule.withdraw(1) == .cancelRunning)
        #expect(schedule.waiting.count == 1, "the next waits until the cancelled turn has stopped")
        #expect(schedule.finished(1) == [2])
    }

    @Test func theFacadeRunsWaitsAndWithdrawsATurnWhoseTaskIsCancelled() async throws {
        let scheduler = TurnScheduler(concurrency: 1, queueLimit: 4)
        let (release, go) = AsyncStream.makeStream(of: Void.self)
        let first = Task {
            try await scheduler.run(session: "a", refused: TutorServer.overloaded) {
                for await _ in release { break }
                return 1
            }
        }
        while scheduler.counts.running == 0 { await Task.yield() }
        let second = Task { try await scheduler.run(session: "a", refused: TutorServer.overloaded) { 2 } }
        let third = Task { try await scheduler.run(session: "b", refused: TutorServer.overloaded) { 3 } }
        while scheduler.counts.waiting < 2 { await Task.yield() }
        second.cancel()
        await #expect(throws: CancellationError.self) { try await second.value }
        go.yield()
        #expect(try await first.value == 1)
        #expect(try await third.value == 3)
        #expect(scheduler.counts.running == 0 && scheduler.counts.waiting == 0)
    }
}
