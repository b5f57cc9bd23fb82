import Foundation
import Synchronization
import Testing
import VoxCore
import VoxProcess
import VoxTestSupport

@Suite struct BlockingExecutorTests {
    /// Blocks as a C call would, after calling `started`, until the job's stop hook tells it to
    /// end, then throws `CancellationError`; or it is never told (`blockUntil` gives up): then it
    /// ends with a result, and the test fails.
    static func blockUntilStopped(_ job: BlockingJob, started: () -> Void) throws -> Int {
        let stopped = Atomic<Bool>(false)
        job.onCancel { stopped.store(true, ordering: .relaxed) }
        started()
        guard blockUntil({ stopped.load(ordering: .relaxed) }) else { return 0 }
        throw CancellationError()
    }

    @Test func workRunsOffThePoolAndGivesItsResultOrError() async throws {
        let executor = BlockingExecutor()
        #expect(try await executor.run { 6 * 7 } == 42)
        struct Failed: Error {}
        await #expect(throws: Failed.self) { try await executor.run { () throws -> Int in throw Failed() } }
    }

    @Test func codeDeepInsideTheWorkFindsItsJob() async throws {
        // What ExternalTool's default relies on: a child started by an encoder inside the work is
        // killed with it.
        #expect(try await BlockingExecutor().run { job in BlockingJob.current === job })
        #expect(BlockingJob.current == nil)
    }

    @Test func aCancelledTasksWorkGetsItsStopHookAndEnds() async throws {
        let started = Atomic<Bool>(false)
        let task = Task {
            try await BlockingExecutor().run { job in
                try Self.blockUntilStopped(job) { started.store(true, ordering: .relaxed) }
            }
        }
        #expect(try await eventually { started.load(ordering: .relaxed) })
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    @Test(.startsProcess("sh"))
    func aChildProcessIsKilledWhenItsTaskIsCancelled() async throws {
        let pidFile = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString).pid")
        defer { try? FileManager.default.removeItem(at: pidFile) }
        let task = Task {
            try await ExternalTool.run(
                URL(fileURLWithPath: "/bin/sh"), ["-c", "echo $$ > '\(pidFile.path)'; exec sleep 600"], input: Data(),
                on: BlockingExecutor())
        }
        var pid: pid_t = 0
        #expect(
            try await eventually {
                pid =
                    (try? String(contentsOf: pidFile, encoding: .utf8)).flatMap {
                        pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines))
                    } ?? 0
                return pid > 0
            })
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.value }
        // Ten minutes of sleep, unless the cancellation killed it (and it was waited for).
        #expect(kill(pid, 0) != 0, "the child \(pid) still runs")
    }

    @Test func aLaneKeepsItsStateAcrossCallsAndRunsThemInOrder() async throws {
        final class Reader { var calls: [Int] = [] }
        let lane = BlockingExecutor().lane(Reader.self)
        #expect(try await lane.open { _ in (Reader(), "opened") } == "opened")
        for i in 1...5 { _ = try await lane.run { reader, _ in reader.calls.append(i) } }
        #expect(try await lane.run { reader, _ in reader.calls } == [1, 2, 3, 4, 5])
    }

    @Test func aLaneUsedBeforeItsStateIsMadeFails() async throws {
        let lane = BlockingExecutor().lane(Int.self)
        await #expect(throws: VoxError.self) { try await lane.run { value, _ in value } }
    }

    @Test func lanesThatBlockHoldNoThreadOfThePool() async throws {
        // More lanes blocked at once than the pool has threads: if they held its threads, the task
        // that releases them could not run until each gave up (`blockUntil`) and said so.
        final class Counts: Sendable {
            let released = Atomic<Bool>(false)
            let blocked = Atomic<Int>(0)
        }
        let counts = Counts()
        let lanes = (0..<(2 * ProcessInfo.processInfo.activeProcessorCount + 4)).map { _ in
            BlockingExecutor().lane(Int.self)
        }
        let results = Task {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for lane in lanes {
                    group.addTask {
                        try await lane.open { _ in (0, ()) }
                        return try await lane.run { _, _ in
                            counts.blocked.add(1, ordering: .relaxed)
                            return blockUntil { counts.released.load(ordering: .relaxed) }
                        }
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
        }
        #expect(try await eventually { counts.blocked.load(ordering: .relaxed) == lanes.count })
        counts.released.store(true, ordering: .relaxed)
        #expect(try await results.value == Array(repeating: true, count: lanes.count))
    }

    @Test func aCancelledLaneCallGetsItsStopHook() async throws {
        let lane = BlockingExecutor().lane(Int.self)
        try await lane.open { _ in (0, ()) }
        let started = Atomic<Bool>(false)
        let task = Task {
            try await lane.run { _, job in try Self.blockUntilStopped(job) { started.store(true, ordering: .relaxed) } }
        }
        #expect(try await eventually { started.load(ordering: .relaxed) })
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        // The lane goes on after a cancelled call.
        #expect(try await lane.run { value, _ in value + 1 } == 1)
    }
}
