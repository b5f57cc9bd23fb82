import Synchronization
import Testing
import VoxCore
import VoxTestSupport

/// How many tasks hold a permit now, the most that ever did, and how many are done.
final class HolderCounts: Sendable {
    let state = Mutex((now: 0, most: 0, done: 0))
}

@Suite struct AsyncSemaphoreTests {
    /// Given more tasks than permits, each holding its permit across suspension points, then no
    /// more than `permits` ever hold one at once (a freed permit goes to a waiter, never to a
    /// newcomer in between), and every task gets one in the end.
    @Test func neverMoreHoldersThanPermitsAndEveryTaskGetsOne() async throws {
        let semaphore = AsyncSemaphore(permits: 3)
        let counts = HolderCounts()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    guard await semaphore.acquire() else { return }
                    counts.state.withLock { c in
                        c.now += 1
                        c.most = max(c.most, c.now)
                    }
                    for _ in 0..<3 { await Task.yield() }
                    counts.state.withLock { c in
                        c.now -= 1
                        c.done += 1
                    }
                    await semaphore.release()
                }
            }
        }
        let final = counts.state.withLock { $0 }
        #expect(final.done == 40)
        #expect(final.most == 3)
        #expect(await semaphore.inUse == 0)
    }

    /// Given the one permit held and a task waiting, when the permit is released, then it is the
    /// waiter's: a newcomer right after the release is refused (queue limit 0), not let in beside it.
    @Test func aFreedPermitGoesToTheWaiterNotANewcomer() async throws {
        let semaphore = AsyncSemaphore(permits: 1)
        #expect(await semaphore.acquire())
        let waiter = Task { await semaphore.acquire() }
        #expect(try await eventually { await semaphore.waiters == 1 })
        await semaphore.release()
        #expect(await semaphore.acquire(queueLimit: 0) == false)
        #expect(await waiter.value)
        #expect(await semaphore.inUse == 1)
    }

    /// Given every permit taken and `queueLimit` tasks waiting, then one more is refused at once,
    /// and a release admits the first waiter.
    @Test func beyondTheQueueLimitIsRefusedAtOnce() async throws {
        let semaphore = AsyncSemaphore(permits: 1)
        #expect(await semaphore.acquire(queueLimit: 0))
        let first = Task { await semaphore.acquire(queueLimit: 2) }
        let second = Task { await semaphore.acquire(queueLimit: 2) }
        #expect(try await eventually { await semaphore.waiters == 2 })
        #expect(await semaphore.acquire(queueLimit: 2) == false)
        await semaphore.release()
        await semaphore.release()
        let admitted = (await first.value, await second.value)
        #expect(admitted == (true, true))
        #expect(await semaphore.inUse == 1)
    }

    /// Given a task waiting for a permit, when it is cancelled, then it leaves the queue without
    /// one and the permit count is unchanged.
    @Test func aCancelledWaiterLeavesTheQueueWithoutAPermit() async throws {
        let semaphore = AsyncSemaphore(permits: 1)
        #expect(await semaphore.acquire())
        let waiter = Task { await semaphore.acquire() }
        #expect(try await eventually { await semaphore.waiters == 1 })
        waiter.cancel()
        #expect(await waiter.value == false)
        #expect(await semaphore.waiters == 0)
        #expect(await semaphore.inUse == 1)
        await semaphore.release()
        #expect(await semaphore.inUse == 0)
    }
}
