import ArgumentParser
import Foundation
import Logging
import Synchronization
import VoxCheck
import VoxCore
import VoxResample
import VoxStages

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a job spec over input files and folders.",
        discussion: """
            INPUT is files or folders (searched recursively for audio files). Outputs go to
            DIR/<input path relative to its INPUT root, without extension>/<stage id>[-NNNN].<ext>.
            Finished items are recorded (DIR/<item>/voxpipe.manifest.json) and skipped by the next run
            while input, spec and outputs are unchanged. Without --shard, the shard comes from
            JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID or AWS_BATCH_JOB_ARRAY_INDEX when set.
            """
    )

    @Argument(help: "The job spec (JSON).") var spec: String
    @Argument(help: "Input files or folders.") var inputs: [String] = []
    @Option(name: [.short, .long], help: "Output folder (created if missing).") var output: String
    @Option(
        name: [.short, .long],
        help: "Items processed at once (default: the cores this process may use: affinity and cgroup CPU quota).")
    var jobs: Int?
    @Option(
        help: ArgumentHelp(
            "Process only shard K of N (0-based), by a stable hash of each input's relative path.", valueName: "K/N"))
    var shard: String?
    @Option(
        help: ArgumentHelp(
            "The shard count, with JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX (or set VOXPIPE_SHARD_COUNT).",
            valueName: "N")) var shardCount: Int?
    @Flag(help: "Redo items already done.") var force = false
    @Flag(help: "Fail an item a stage warns about (a truncated file); the spec's \"strict\": true does too.")
    var strict = false
    @Flag(help: "Run a spec that writes nothing (no write-* stage), for its reports only.") var noOutputs = false
    @Flag(help: "List every item, whether it would run or be skipped and why, and its outputs; write nothing.")
    var dryRun = false
    @Option(
        help: ArgumentHelp(
            "Write one JSON line per item (status, error, seconds, artifact hashes).", valueName: "FILE.jsonl"))
    var report: String?
    @Option(help: ArgumentHelp("Write Prometheus textfile-collector metrics.", valueName: "FILE.prom")) var metrics:
        String?
    @Option(help: ArgumentHelp("Write JUnit XML, one test case per item.", valueName: "FILE.xml")) var junit: String?
    @Option(
        help: ArgumentHelp(
            "Store every HTTP exchange of the providers (keys stripped) in this folder.", valueName: "DIR"))
    var httpRecord: String?
    @Option(
        help: ArgumentHelp(
            "Answer HTTP providers from recorded exchanges only; an unrecorded request fails its item.",
            valueName: "DIR")) var httpReplay: String?
    @Option(
        help: ArgumentHelp(
            "After the run, check its outputs against this suite's expectations (its spec and inputs are not used); "
                + "--junit then writes the check's cases.",
            valueName: "SUITE.json")) var check: String?
    @Option(help: ArgumentHelp("With --check: a JSON summary of every expectation.", valueName: "FILE.json"))
    var checkJson: String?
    @Option(
        help: ArgumentHelp("With --check: ref.trn, hyp.trn and hyp.ctm for sclite into this folder.", valueName: "DIR"))
    var sctk: String?
    @Flag(help: "With --check: take the outputs as the suite's goldens.") var update = false
    @Flag(name: [.short, .long], help: "Log debug messages to stderr.") var verbose = false

    func validate() throws {
        if httpRecord != nil && httpReplay != nil {
            throw ValidationError("--http-record and --http-replay exclude each other")
        }
        if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1") }
        if output.isEmpty { throw ValidationError("--output must name a folder") }
        if let shardCount, shardCount < 1 { throw ValidationError("--shard-count must be at least 1") }
        if check == nil && (checkJson != nil || sctk != nil || update) {
            throw ValidationError("--check-json, --sctk and --update go with --check SUITE")
        }
    }

    func run() async throws {
        bootstrapLogging(verbose: verbose)
        // Before anything slow (model loads): a signal during prepare ends the run as cleanly as one later.
        let signals = SignalHandler()
        signals.install()
        do {
            let plan = try loadPlan(spec, requireOutputs: !noOutputs)
            let suite = try check.map { try Suite.load(URL(fileURLWithPath: $0)) }
            let batch = try BatchRun(
                plan: plan, inputs: inputs, outputDirectory: URL(fileURLWithPath: output),
                options: BatchRun.Options(
                    jobs: jobs,
                    shard: try shard.map(Shard.parse)
                        ?? Shard.fromEnvironment(ProcessInfo.processInfo.environment, count: shardCount),
                    force: force, strict: strict, recording: try recording()),
                version: voxpipeVersion, logger: Logger(label: "voxpipe"), secrets: processSecrets)
            defer { batch.saveDigests() }
            let listing = batch.listing
            if !listing.skippedFolders.isEmpty {
                let names = listing.skippedFolders.map(\.path)
                printError(
                    "not searching \(names.count == 1 ? names[0] : "\(names.count) folders (\(names[0]), …)"): "
                        + "voxpipe outputs, not input"
                )
            }
            for entry in listing.unread { printError("warning: not read: \(entry.url.path): \(entry.reason)") }
            if dryRun {
                printDryRun(batch)
                return
            }
            let prepared = try await batch.prepare()
            if let shard = batch.shard {
                printError("shard \(shard): \(batch.items.count) of \(listing.items.count) items")
            }
            let progress = ProgressReporter(total: batch.items.count)
            let work = Task { await prepared.run(observer: progress) }
            signals.onFirst { work.cancel() }
            let result = await work.value
            let interrupted = signals.received
            progress.finish(result.results, seconds: result.seconds, output: output)
            if let interrupted {
                printError(
                    "interrupted by \(interrupted == SIGINT ? "SIGINT" : "SIGTERM"): "
                        + "\(batch.items.count - result.results.count) items not started; rerun to continue"
                )
            }
            try writeReports(
                RunReports(
                    planName: plan.name, results: result.results, wallSeconds: result.seconds,
                    outputDirectory: batch.outputDirectory, interruptedBy: interrupted, unread: result.unread),
                checking: suite != nil)
            if let interrupted { throw ExitCode(128 + interrupted) }
            if let full = result.outputFull {
                let started = Set(result.results.map(\.item.url)).count
                throw VoxError(
                    .outputFull,
                    "\(output): nothing more can be written (\(full.reason)); \(batch.items.count - started) items "
                        + "not started; free space and rerun")
            }
            if let suite {
                let passed = try await evaluateChecks(
                    suite, outputDirectory: batch.outputDirectory, items: result.results.map(CheckedItem.init),
                    reports: CheckReportPaths(junit: junit, json: checkJson, sctk: sctk, update: update),
                    seconds: result.seconds)
                if !passed { throw ExitCode(1) }
                return
            }
            if result.failed { throw ExitCode(1) }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            throw fail(error)
        }
    }

    /// `--http-record` or `--http-replay` (a folder that must exist).
    func recording() throws -> ExchangeRecording? {
        if let httpRecord { return .record(URL(fileURLWithPath: httpRecord).standardizedFileURL) }
        guard let httpReplay else { return nil }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: httpReplay, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw VoxError(.usage, "--http-replay \(httpReplay): no such folder")
        }
        return .replay(URL(fileURLWithPath: httpReplay).standardizedFileURL)
    }

    /// With `checking`, --junit is left to the check.
    func writeReports(_ reports: RunReports, checking: Bool = false) throws {
        if let report { try AtomicFile.write(redacted(reports.jsonLines()), to: URL(fileURLWithPath: report)) }
        if let junit, !checking {
            try AtomicFile.write(redacted(Data(reports.junit().utf8)), to: URL(fileURLWithPath: junit))
        }
        if let metrics {
            let url = URL(fileURLWithPath: metrics)
            try AtomicFile.write(
                redacted(Data(reports.prometheus(previous: try? String(contentsOf: url, encoding: .utf8)).utf8)),
                to: url)
        }
    }

    /// `--dry-run`: one line per item on stdout, then the outputs each run would write.
    /// What `run` would do, item by item, decided as the runner decides (`RunOptions.decision`).
    func printDryRun(_ batch: BatchRun) {
        let (plan, items, listing, options, shard) = (
            batch.plan, batch.items, batch.listing.items, batch.runOptions, batch.shard
        )
        let outputs = plan.plannedOutputs
        let collisions = plan.outputCollisions(among: listing)
        let total = listing.count
        var lines: [String] = []
        var runs = 0
        var count = 0
        for file in items {
            if let collision = collisions[file.outputName] {
                count += 1
                runs += 1
                lines.append("fail  \(file.relativePath) (\(collision))")
                continue
            }
            let parts: [InputFile]
            do {
                parts = try plan.expand(file)
            } catch {
                count += 1
                runs += 1
                lines.append("fail  \(file.relativePath) (\(describe(error)))")
                continue
            }
            for item in parts {
                count += 1
                switch options.decision(for: item) {
                case .skip(let manifest):
                    lines.append("skip  \(item.displayName) → \(item.outputName)/ (\(Runner.skipReason(manifest)))")
                case .run(let reason):
                    runs += 1
                    lines.append(
                        "run   \(item.displayName) → \(item.outputName)/ (\(reason)): "
                            + "\(outputs.joined(separator: ", "))"
                    )
                }
            }
        }
        print(lines.map(safeLine).joined(separator: "\n"))
        printError(
            "dry run: \(count) item\(count == 1 ? "" : "s")\(shard.map { " in shard \($0) of \(total) files" } ?? ""): "
                + "\(runs) would run, \(count - runs) would be skipped; nothing written"
        )
    }
}

/// SIGINT and SIGTERM: the first stops taking new items and abandons the running ones cleanly
/// (their temporary files are removed; decodes in C engines are aborted); a second one ends the
/// process at once. Installed first thing, so a signal that comes while models load is not lost:
/// the action given later runs at once if a signal came before.
final class SignalHandler: Sendable {
    private struct State {
        var signal: Int32?
        var action: (@Sendable () -> Void)?
        var sources: [any DispatchSourceSignal] = []
    }

    private let state = Mutex(State())

    var received: Int32? { state.withLock { $0.signal } }

    func install() {
        for sig in [SIGINT, SIGTERM] {
            Foundation.signal(sig, SIG_IGN)
            state.withLock { state in
                let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                source.setEventHandler { [self] in handle(sig) }
                source.resume()
                state.sources.append(source)
            }
        }
    }

    private func handle(_ sig: Int32) {
        let (first, action) = state.withLock { state -> (Bool, (@Sendable () -> Void)?) in
            if state.signal != nil { return (false, nil) }
            state.signal = sig
            return (true, state.action)
        }
        if first {
            FileHandle.standardError.write(
                Data("\nvoxpipe: stopping: no new items; abandoning running ones (again to quit at once)\n".utf8))
            action?()
        } else {
            _exit(128 + sig)
        }
    }

    /// What the first signal does; runs at once when one has come already.
    func onFirst(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            state.action = action
            return state.signal != nil
        }
        if now { action() }
    }
}

/// Progress on stderr: a redrawn line on a TTY, one plain line per finished item otherwise.
/// Every failed item gets its own line (file, stage, reason), and the run a closing summary.
final class ProgressReporter: RunObserver, Sendable {
    private let count: Mutex<ProgressCount>
    private let isTTY = isatty(STDERR_FILENO) != 0

    init(total: Int) { count = Mutex(ProgressCount(total: total)) }

    func handle(_ event: RunEvent) {
        count.withLock { count in
            count.count(event)
            switch event {
            case .started, .itemSplit:
                break
            case .warning(let message):
                emit("voxpipe: warning: \(message)")
            case .itemStarted:
                redraw(count)
            case .itemFinished(let result):
                switch result.status {
                case .failed:
                    // The file and the channel it was (a seat), as it has always read.
                    let channel = result.item.part?.channel.map { "#\($0.name)" } ?? ""
                    emit(
                        "voxpipe: error: \(result.item.url.path)\(channel): "
                            + "\(result.failure.map(\.description) ?? "failed")")
                case .done, .skipped:
                    if !isTTY {
                        emit(
                            "voxpipe: [\(count.finished)/\(count.total)] \(result.status.rawValue) "
                                + "\(result.item.displayName) (\(String(format: "%.2f", result.seconds)) s)"
                        )
                    }
                }
                redraw(count)
            }
        }
    }

    private func emit(_ line: String) {
        let clear = isTTY ? "\r\u{1B}[K" : ""
        FileHandle.standardError.write(Data("\(clear)\(safeLine(line))\n".utf8))
    }

    private func redraw(_ count: ProgressCount) {
        guard isTTY else { return }
        let line = "[\(count.finished)/\(count.total)] \(count.running) running, \(count.failed) failed"
        FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
    }

    func finish(_ results: [ItemResult], seconds: Double, output: String) {
        let done = results.filter { $0.status == .done }.count
        let skipped = results.filter { $0.status == .skipped }.count
        let failed = results.filter { $0.status == .failed }.count
        var parts = ["\(done) done"]
        if skipped > 0 { parts.append("\(skipped) skipped") }
        parts.append("\(failed) failed")
        count.withLock { _ in
            emit(
                "voxpipe: \(results.count) item\(results.count == 1 ? "" : "s"): \(parts.joined(separator: ", ")) in "
                    + "\(String(format: "%.1f", seconds)) s; outputs in \(output)"
            )
        }
    }
}
