import Foundation

/// Permits for async work, the one semaphore voxpipe's waits share (serve's admission, the HTTP
/// providers' requests in flight): `acquire` takes a permit, or waits for one without holding a
/// thread; `release` hands a freed permit straight to the first waiter, so a newcomer can never
/// take it in between and the permits in use never exceed `permits`. A waiter whose task is
/// cancelled leaves the queue at once and gets no permit.
public actor AsyncSemaphore {
    public nonisolated let permits: Int
    private var taken = 0
    private var waiting: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)] = []
    private var nextID: UInt64 = 0

    public init(permits: Int) { self.permits = max(1, permits) }

    /// Takes a permit, waiting for one when all are taken. Without waiting, false when `queueLimit`
    /// tasks already wait; false too when the task is cancelled while it waits. True: the caller
    /// holds a permit and must `release()` it.
    public func acquire(queueLimit: Int = .max) async -> Bool {
        if taken < permits {
            taken += 1
            return true
        }
        guard waiting.count < queueLimit, !Task.isCancelled else { return false }
        nextID += 1
        let id = nextID
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in waiting.append((id, continuation)) }
        } onCancel: {
            Task { await self.leaveQueue(id) }
        }
    }

    /// Gives a permit back: to the first waiter, else to the pool.
    public func release() {
        if waiting.isEmpty {
            taken = max(0, taken - 1)
        } else {
            waiting.removeFirst().continuation.resume(returning: true)
        }
    }

    /// Gives `count` permits back, one after the other.
    public func release(_ count: Int) {
        for _ in 0..<max(0, count) { release() }
    }

    /// Takes up to `wanted` more permits at once, without waiting: the free ones, shared fairly
    /// with the tasks that wait (a free permit is handed to a waiter before anyone else, so with
    /// waiters there are none). How many it took; each goes back with `release()`.
    public func takeFree(upTo wanted: Int) -> Int {
        let free = waiting.isEmpty ? permits - taken : 0
        let took = max(0, min(wanted, free))
        taken += took
        return took
    }

    /// Permits held now.
    public var inUse: Int { taken }
    /// Tasks waiting for a permit.
    public var waiters: Int { waiting.count }

    /// A cancelled waiter goes without a permit (if it still waits: a permit handed to it first stays its own).
    private func leaveQueue(_ id: UInt64) {
        guard let i = waiting.firstIndex(where: { $0.id == id }) else { return }
        waiting.remove(at: i).continuation.resume(returning: false)
    }
}
