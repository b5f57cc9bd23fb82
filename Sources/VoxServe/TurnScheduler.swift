import Foundation
import Synchronization

/// Which turns run: a pure state machine, driven step by step by its facade (`TurnScheduler`) and
/// by tests, with no threads or clocks of its own.
///
/// - `concurrency` turns run at once; up to `queueLimit` more wait, first come first served;
///   beyond them a turn is refused.
/// - Turns of one session run one at a time, in the order they came: a turn waits while an earlier
///   turn of its session runs or waits, even when a slot is free (a later session's turn may pass
///   it).
/// - A turn is withdrawn when its deadline passes or its client goes away: waiting, it leaves the
///   queue; running, its work is to be cancelled (it keeps its slot until it has stopped).
struct TurnSchedule: Sendable {
    typealias Turn = Int

    let concurrency: Int
    let queueLimit: Int
    private(set) var running: [Turn: String] = [:]
    private(set) var waiting: [(turn: Turn, session: String)] = []

    init(concurrency: Int, queueLimit: Int) {
        self.concurrency = max(1, concurrency)
        self.queueLimit = max(0, queueLimit)
    }

    enum Arrival: Equatable {
        /// Run it now.
        case run
        /// It waits; a later `finished` starts it.
        case wait
        /// Every slot and queue place is taken.
        case refuse
    }

    enum Withdrawal: Equatable {
        /// It was waiting and has left the queue (and may have let turns behind it start).
        case removed(start: [Turn])
        /// It is running: cancel its work; it ends with `finished`.
        case cancelRunning
        /// Not known (it finished already).
        case unknown
    }

    mutating func arrive(_ turn: Turn, session: String) -> Arrival {
        let sessionBusy = running.values.contains(session) || waiting.contains { $0.session == session }
        if !sessionBusy && running.count < concurrency {
            running[turn] = session
            return .run
        }
        guard waiting.count < queueLimit else { return .refuse }
        waiting.append((turn, session))
        return .wait
    }

    /// A running turn ended (answered, failed or cancelled): the turns that start in its place.
    mutating func finished(_ turn: Turn) -> [Turn] {
        guard running.removeValue(forKey: turn) != nil else { return [] }
        return startWaiting()
    }

    /// Its deadline passed or its client went away.
    mutating func withdraw(_ turn: Turn) -> Withdrawal {
        if running[turn] != nil { return .cancelRunning }
        guard let index = waiting.firstIndex(where: { $0.turn == turn }) else { return .unknown }
        waiting.remove(at: index)
        return .removed(start: startWaiting())
    }

    /// Starts waiting turns in order while slots are free, skipping a session whose earlier turn
    /// still runs or waits.
    private mutating func startWaiting() -> [Turn] {
        var started: [Turn] = []
        var blocked = Set(running.values)
        var index = 0
        while index < waiting.count && running.count < concurrency {
            let (turn, session) = waiting[index]
            if blocked.contains(session) {
                index += 1
                continue
            }
            waiting.remove(at: index)
            running[turn] = session
            blocked.insert(session)
            started.append(turn)
        }
        return started
    }
}

/// The facade over `TurnSchedule` that a request's turn goes through: it waits for its slot,
/// runs, and gives the slot back; a deadline or a departed client withdraws it.
final class TurnScheduler: Sendable {
    private struct State {
        var schedule: TurnSchedule
        var next = 0
        /// Waiting turns' continuations.
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
    }

    private let state: Mutex<State>

    init(concurrency: Int, queueLimit: Int) {
        state = Mutex(State(schedule: TurnSchedule(concurrency: concurrency, queueLimit: queueLimit)))
    }

    /// Turns running and waiting now.
    var counts: (running: Int, waiting: Int) {
        state.withLock { ($0.schedule.running.count, $0.schedule.waiting.count) }
    }

    /// Waiting turns of `session`.
    func waiting(in session: String) -> Int {
        state.withLock { $0.schedule.waiting.count { $0.session == session } }
    }

    /// Runs `work` as a turn of `session` once the schedule lets it: throws `refused` when every
    /// place is taken, `CancellationError` when the task is cancelled while it waits (a deadline,
    /// a departed client).
    func run<T: Sendable>(
        session: String, refused: any Error, _ work: () async throws -> T
    ) async throws -> T {
        let (turn, arrival) = state.withLock { s in
            s.next += 1
            return (s.next, s.schedule.arrive(s.next, session: session))
        }
        switch arrival {
        case .refuse: throw refused
        case .run: break
        case .wait:
            let started = await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    // Started (or withdrawn) before the continuation was here: answer at once.
                    let ready: Bool? = state.withLock { s in
                        if s.schedule.running[turn] != nil { return true }
                        guard s.schedule.waiting.contains(where: { $0.turn == turn }) else { return false }
                        s.waiters[turn] = continuation
                        return nil
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            } onCancel: {
                withdraw(turn)
            }
            guard started else { throw CancellationError() }
        }
        defer { finish(turn) }
        try Task.checkCancellation()
        return try await work()
    }

    private func finish(_ turn: Int) {
        let resumed = state.withLock { s in s.schedule.finished(turn).compactMap { s.waiters.removeValue(forKey: $0) } }
        for continuation in resumed { continuation.resume(returning: true) }
    }

    private func withdraw(_ turn: Int) {
        let (withdrawn, started) = state.withLock {
            s -> (CheckedContinuation<Bool, Never>?, [CheckedContinuation<Bool, Never>]) in
            guard case .removed(let start) = s.schedule.withdraw(turn) else { return (nil, []) }
            return (s.waiters.removeValue(forKey: turn), start.compactMap { s.waiters.removeValue(forKey: $0) })
        }
        withdrawn?.resume(returning: false)
        for continuation in started { continuation.resume(returning: true) }
    }
}
