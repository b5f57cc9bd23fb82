import Foundation

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
    /// threads of their own, so a tool that fills a pipe never blocks the others.
    public static func run(
        _ tool: URL, _ arguments: [String], input: Data
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
        try process.run()
        let writer = inPipe.fileHandleForWriting
        Thread.detachNewThread {
            try? writer.write(contentsOf: input)
            try? writer.close()
        }
        let errData = ErrorPipeReader(err.fileHandleForReading)
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, outData, String(decoding: errData.wait(), as: UTF8.self))
    }

    /// Runs `tool` with `arguments` and no standard input; returns its status and what it
    /// printed. For tools whose output is small.
    public static func capture(
        _ tool: URL, _ arguments: [String]
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = tool
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Small outputs: read both fully, then wait. Reading stderr on its own thread keeps a
        // tool that fills it from blocking while stdout is read.
        let errData = ErrorPipeReader(err.fileHandleForReading)
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: outData, as: UTF8.self),
            String(decoding: errData.wait(), as: UTF8.self)
        )
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
private final class ErrorPipeReader: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var data = Data()

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}
