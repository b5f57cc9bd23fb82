import Foundation
import Synchronization

/// Runs blocking work — a C library call that takes seconds, a child process waited for — on a
/// thread of its own, and waits for it without holding a thread of Swift's cooperative pool, so
/// other stages, a server's requests and tests keep moving. Stages get it through
/// `StageContext.blocking`.
///
/// Cancellation-aware: when the waiting task is cancelled, the work's `BlockingJob` runs the stop
/// hooks the work registered (whisper's abort flag, killing a child process), and the work
/// then ends as soon as it can; its result (usually a `CancellationError`) is the caller's.
///
/// Its threads run at the process's priority: serve measured its engines at nice +10 (so that a
/// refusal never waits for a core) and dropped it: 503s came no faster (p99 26 vs 22 ms) and, on
/// a machine shared with other work, turns took twice as long.
public struct BlockingExecutor: Sendable {
    public init() {}

    /// Runs `work` on a thread of its own and returns (or throws) what it does. `work` gets the
    /// job, on which it registers what stops it when the task is cancelled.
    public func run<T: Sendable>(_ work: @escaping @Sendable (BlockingJob) throws -> T) async throws -> T {
        try await Self.perform(on: { Thread.detachNewThread($0) }, work)
    }

    /// A lane of its own for a sequence of blocking calls on state that lives there (a file being
    /// decoded): one queue for the whole sequence, where a thread per call would be a thread per
    /// block.
    public func lane<State>(_ state: State.Type = State.self) -> BlockingLane<State> { BlockingLane() }

    /// Runs `work` as a new job, on the thread `start` gives it, and waits for it without holding
    /// a thread of the cooperative pool; cancelling the waiting task cancels the job.
    static func perform<T: Sendable>(
        on start: (@escaping @Sendable () -> Void) -> Void, _ work: @escaping @Sendable (BlockingJob) throws -> T
    ) async throws -> T {
        let job = BlockingJob()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                start {
                    let result = BlockingJob.$current.withValue(job) {
                        Result {
                            try job.checkCancellation()
                            return try work(job)
                        }
                    }
                    continuation.resume(with: result)
                }
            }
        } onCancel: {
            job.cancel()
        }
    }

    /// Runs `work` on a thread of its own; `onCancel` is its stop hook (called at most once, from
    /// any thread).
    public func run<T: Sendable>(
        onCancel: @escaping @Sendable () -> Void = {}, _ work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await run { job in
            job.onCancel(onCancel)
            return try work()
        }
    }
}

/// A sequence of blocking calls, one at a time and in order, on a serial dispatch queue (whose
/// threads are not the cooperative pool's), each waited for as `BlockingExecutor.run` waits, over
/// state that never leaves the lane: a reader that is not `Sendable` is opened, read and closed
/// there, and only what the calls return (samples, a header) crosses to the caller. The state
/// goes when the lane does.
public final class BlockingLane<State>: Sendable {
    private let queue = DispatchQueue(label: "voxpipe.blocking-lane")
    /// Only the lane's calls touch it, one at a time on its queue; the lock makes that checkable.
    private let state = Mutex<State?>(nil)

    init() {}

    /// Makes the lane's state on its thread and returns what `make` tells the caller about it.
    public func open<T: Sendable>(_ make: @escaping @Sendable (BlockingJob) throws -> (State, T)) async throws -> T {
        try await BlockingExecutor.perform(on: { queue.async(execute: $0) }) { job in
            try self.state.withLock { state in
                let (made, told) = try make(job)
                state = made
                return told
            }
        }
    }

    /// Runs `work` on the lane's thread with its state (which `open` made).
    public func run<T: Sendable>(_ work: @escaping @Sendable (inout State, BlockingJob) throws -> T) async throws -> T {
        try await BlockingExecutor.perform(on: { queue.async(execute: $0) }) { job in
            try self.state.withLock { state in
                guard var current = state.take() else {
                    throw VoxError(.internal, "a blocking lane was used before its state was made")
                }
                defer { state = current }
                return try work(&current, job)
            }
        }
    }
}

/// One piece of blocking work on a `BlockingExecutor`: whether its task was cancelled, and the
/// hooks that stop it. Code deep inside the work (a child process started by an encoder) finds
/// its job as `BlockingJob.current`.
public final class BlockingJob: Sendable {
    private struct State {
        var cancelled = false
        var nextID: UInt64 = 0
        var hooks: [UInt64: @Sendable () -> Void] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// The job the current thread runs for, if any.
    @TaskLocal public static var current: BlockingJob?

    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Throws `CancellationError` once the job's task is cancelled.
    public func checkCancellation() throws {
        if isCancelled { throw CancellationError() }
    }

    /// Calls `hook` when the job's task is cancelled (at once if it already is) for as long as
    /// the job runs. A hook must be quick and may run on any thread.
    public func onCancel(_ hook: @escaping @Sendable () -> Void) { _ = register(hook) }

    /// Runs `body` with `hook` as a stop hook while it runs: a child process is terminated when
    /// the task is cancelled while it runs, never after it has been waited for (its pid may then
    /// be another process's).
    public func whileRunning<T>(onCancel hook: @escaping @Sendable () -> Void, _ body: () throws -> T) rethrows -> T {
        guard let id = register(hook) else { return try body() }
        defer { _ = state.withLock { $0.hooks.removeValue(forKey: id) } }
        return try body()
    }

    /// Adds a hook; nil when the job was already cancelled (the hook then ran at once).
    private func register(_ hook: @escaping @Sendable () -> Void) -> UInt64? {
        let id = state.withLock { state -> UInt64? in
            if state.cancelled { return nil }
            state.nextID += 1
            state.hooks[state.nextID] = hook
            return state.nextID
        }
        if id == nil { hook() }
        return id
    }

    /// Marks the job cancelled and runs its hooks (once each).
    public func cancel() {
        let hooks = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.cancelled else { return [] }
            state.cancelled = true
            defer { state.hooks = [:] }
            return state.hooks.sorted { $0.key < $1.key }.map(\.value)
        }
        for hook in hooks { hook() }
    }
}
