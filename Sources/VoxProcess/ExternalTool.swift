import Foundation
import Synchronization
import VoxCore

/// A command-line tool run as a child process (ffmpeg, ffprobe): found on PATH, run with an
/// argument vector (never through a shell), its output read whole.
public enum ExternalTool {
    /// The executable `name` on PATH; nil when there is none.
    public static func find(
        _ name: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL? {
        let path = environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let url = URL(fileURLWithPath: String(dir)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }

    /// Runs `tool` with `arguments`, `input` on its standard input; returns its status, its
    /// standard output as bytes and its standard error. Input and error are written and read on
    /// threads of their own, so a tool that fills a pipe never blocks the others. It blocks the
    /// calling thread until the tool exits: call it from a `BlockingExecutor`'s work (or `run(…,
    /// on:)`), whose job terminates the tool when the task is cancelled (then it throws
    /// `CancellationError`).
    public static func run(
        _ tool: URL, _ arguments: [String], input: Data, job: BlockingJob? = BlockingJob.current
    ) throws -> (
        status: Int32, stdout: Data, stderr: String
    ) {
        let process = Process()
        process.executableURL = tool
        process.arguments = arguments
        let inPipe = Pipe(), out = Pipe(), err = Pipe()
        process.standardInput = inPipe
        process.standardOutput = out
        process.standardError = err
        try job?.checkCancellation()
        try process.run()
        let writer = inPipe.fileHandleForWriting
        Thread.detachNewThread {
            // A tool terminated (or failed) before it read its input must not kill voxpipe with
            // SIGPIPE: with the signal blocked on this thread, the write fails with EPIPE instead.
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
            try? writer.write(contentsOf: input)
            try? writer.close()
        }
        let errData = PipeReader(err.fileHandleForReading)
        let outData = waitForExit(process, job: job) { out.fileHandleForReading.readDataToEndOfFile() }
        try job?.checkCancellation()
        return (process.terminationStatus, outData, String(decoding: errData.wait(), as: UTF8.self))
    }

    /// `run` on `executor`: the tool runs and is waited for off the cooperative pool, and is
    /// terminated when the task is cancelled.
    public static func run(
        _ tool: URL, _ arguments: [String], input: Data, on executor: BlockingExecutor
    ) async throws -> (status: Int32, stdout: Data, stderr: String) {
        try await executor.run { job in try run(tool, arguments, input: input, job: job) }
    }

    /// Runs `tool` with `arguments` and no standard input; returns its status and what it
    /// printed. For tools whose output is small. Blocks the calling thread as `run` does, and is
    /// terminated as it is when `job` is cancelled.
    public static func capture(
        _ tool: URL, _ arguments: [String], job: BlockingJob? = BlockingJob.current
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = tool
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try job?.checkCancellation()
        try process.run()
        // Small outputs: read both fully, then wait. Reading stderr on its own thread keeps a
        // tool that fills it from blocking while stdout is read.
        let errData = PipeReader(err.fileHandleForReading)
        let outData = waitForExit(process, job: job) { out.fileHandleForReading.readDataToEndOfFile() }
        try job?.checkCancellation()
        return (
            process.terminationStatus, String(decoding: outData, as: UTF8.self),
            String(decoding: errData.wait(), as: UTF8.self)
        )
    }

    /// Reads what `read` reads, then waits for `process` to exit; while it does, cancelling `job`
    /// kills the process, which closes its pipes and so ends the read. SIGKILL, not SIGTERM: a
    /// child started from a thread of Swift's pool (or one it made) inherits the thread's blocked
    /// signals, SIGTERM among them, and would never see it.
    static func waitForExit(_ process: Process, job: BlockingJob?, _ read: () -> Data) -> Data {
        let pid = process.processIdentifier
        let stop: @Sendable () -> Void = { _ = kill(pid, SIGKILL) }
        guard let job else {
            let data = read()
            process.waitUntilExit()
            return data
        }
        return job.whileRunning(onCancel: stop) {
            let data = read()
            process.waitUntilExit()
            return data
        }
    }

    /// The most telling line of an ffmpeg tool's stderr: its last, without the file's path or
    /// the `[demuxer @ 0x…]` prefix (a pointer that changes every run); `fallback` when empty.
    public static func lastLine(_ text: String, path: String, fallback: String) -> String {
        guard var line = text.split(separator: "\n").last.map(String.init) else { return fallback }
        if line.hasPrefix(path + ": ") { line.removeFirst(path.count + 2) }
        if line.hasPrefix("["), let end = line.firstIndex(of: "]") { line = String(line[line.index(after: end)...]) }
        line = line.trimmingCharacters(in: .whitespaces)
        return line.isEmpty ? fallback : line
    }
}

/// Reads a pipe to its end on a thread of its own.
private final class PipeReader: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let data = Mutex(Data())

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            let read = handle.readDataToEndOfFile()
            data.withLock { $0 = read }
            done.signal()
        }
    }

    /// What was read, once the pipe has ended (blocks until then).
    func wait() -> Data {
        done.wait()
        return data.withLock { $0 }
    }
}
