import Foundation
import Synchronization
import Testing
import VoxCore
import VoxTestSupport

@Suite struct BlockingExecutorTests {
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
                let stopped = Atomic<Bool>(false)
                job.onCancel { stopped.store(true, ordering: .relaxed) }
                started.store(true, ordering: .relaxed)
                // Blocks as a C call would, until its stop hook tells it to end (or a minute passes:
                // then it ends with a result, and the test fails).
                let deadline = ContinuousClock.now + .seconds(60)
                while !stopped.load(ordering: .relaxed) {
                    guard ContinuousClock.now < deadline else { return 0 }
                    usleep(1000)
                }
                throw CancellationError()
            }
        }
        #expect(try await eventually { started.load(ordering: .relaxed) })
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    @Test func aChildProcessIsKilledWhenItsTaskIsCancelled() async throws {
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
}
