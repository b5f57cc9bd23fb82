import ArgumentParser
import Foundation
import Logging
import VoxCore

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a job spec over input files and folders.",
        discussion: """
        INPUT is files or folders (searched recursively for audio files). Outputs go to
        DIR/<input path relative to its INPUT root, without extension>/<stage id>[-NNNN].<ext>.
        """
    )

    @Argument(help: "The job spec (JSON).") var spec: String
    @Argument(help: "Input files or folders.") var inputs: [String] = []
    @Option(name: [.short, .long], help: "Output folder (created if missing).") var output: String
    @Option(name: [.short, .long], help: "Items processed at once (default: number of cores).") var jobs: Int?
    @Flag(name: [.short, .long], help: "Log debug messages to stderr.") var verbose = false

    func validate() throws {
        if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1") }
        if output.isEmpty { throw ValidationError("--output must name a folder") }
    }

    func run() async throws {
        bootstrapLogging(verbose: verbose)
        let logger = Logger(label: "voxpipe")
        do {
            let plan = try loadPlan(spec)
            guard !inputs.isEmpty else { throw VoxError(.noInput, "no INPUT given: name audio files or folders after the spec") }
            let items = try InputListing.collect(inputs)
            guard !items.isEmpty else { throw VoxError(.noInput, "no audio files found in \(inputs.joined(separator: ", "))") }
            let outputURL = URL(fileURLWithPath: output).standardizedFileURL
            try ensureWritable(outputURL)
            let options = RunOptions(outputDirectory: outputURL, jobs: jobs ?? ProcessInfo.processInfo.activeProcessorCount)
            let runner = try await Runner.prepare(plan, options: options, context: StageContext(logger: logger, specDirectory: URL(fileURLWithPath: spec).deletingLastPathComponent()))
            let progress = ProgressReporter(total: items.count)
            let started = ContinuousClock.now
            let results = await runner.run(items, observer: progress)
            progress.finish(results, elapsed: ContinuousClock.now - started, output: output)
            if results.contains(where: { $0.status == .failed }) { throw ExitCode(1) }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            throw fail(error)
        }
    }

    /// Creates the output folder and proves a file can be written there, before any work.
    func ensureWritable(_ url: URL) throws {
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            throw VoxError(.cannotCreate, "cannot create output folder \(url.path): \(describe(error))")
        }
        let probe = url.appendingPathComponent(".voxpipe-write-test-\(getpid())")
        guard FileManager.default.createFile(atPath: probe.path, contents: Data()) else {
            throw VoxError(.cannotCreate, "output folder \(url.path) is not writable")
        }
        try? FileManager.default.removeItem(at: probe)
    }
}

/// Progress on stderr: a redrawn line on a TTY, one plain line per finished item otherwise.
/// Every failed item gets its own line (file, stage, reason), and the run a closing summary.
final class ProgressReporter: RunObserver, @unchecked Sendable {
    private let lock = NSLock()
    private let total: Int
    private let isTTY = isatty(STDERR_FILENO) != 0
    private var finished = 0
    private var failed = 0
    private var running = 0

    init(total: Int) { self.total = total }

    func handle(_ event: RunEvent) {
        lock.withLock {
            switch event {
            case .started, .warning:
                if case .warning(let message) = event { emit("voxpipe: warning: \(message)") }
            case .itemStarted:
                running += 1
                redraw()
            case .itemFinished(let result):
                running -= 1
                finished += 1
                switch result.status {
                case .failed:
                    failed += 1
                    emit("voxpipe: error: \(result.item.url.path): \(result.failure.map(\.description) ?? "failed")")
                case .done, .skipped:
                    if !isTTY { emit("voxpipe: [\(finished)/\(total)] \(result.status.rawValue) \(result.item.relativePath) (\(String(format: "%.2f", result.seconds)) s)") }
                }
                redraw()
            }
        }
    }

    private func emit(_ line: String) {
        let clear = isTTY ? "\r\u{1B}[K" : ""
        FileHandle.standardError.write(Data("\(clear)\(line)\n".utf8))
    }

    private func redraw() {
        guard isTTY else { return }
        let line = "[\(finished)/\(total)] \(running) running, \(failed) failed"
        FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
    }

    func finish(_ results: [ItemResult], elapsed: Duration, output: String) {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let done = results.filter { $0.status == .done }.count
        let skipped = results.filter { $0.status == .skipped }.count
        let failed = results.filter { $0.status == .failed }.count
        var parts = ["\(done) done"]
        if skipped > 0 { parts.append("\(skipped) skipped") }
        parts.append("\(failed) failed")
        lock.withLock {
            emit("voxpipe: \(results.count) item\(results.count == 1 ? "" : "s"): \(parts.joined(separator: ", ")) in \(String(format: "%.1f", seconds)) s; outputs in \(output)")
        }
    }
}
