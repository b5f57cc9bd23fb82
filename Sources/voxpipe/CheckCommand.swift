import ArgumentParser
import Foundation
import VoxCheck
import VoxCore
import VoxStages

/// Where `check` and `run --check` write what they found.
struct CheckReportPaths {
    var junit: String?
    var json: String?
    var sctk: String?
    var update: Bool
}

struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Run a suite's spec over its inputs and check the outputs: WER/CER, goldens, audio, budgets.",
        discussion: """
            A SUITE (JSON) names a spec, inputs and expectations; see docs/check.md. \
            Exit status: 0 every expectation holds; 1 some fail; 65 a bad suite or spec; 66 no input.
            """
    )

    @Argument(help: "The suite (JSON).") var suite: String
    @Option(name: [.short, .long], help: "Output folder (default: a new temporary one, removed afterwards).")
    var output: String?
    @Option(
        name: [.short, .long],
        help: "Items processed at once (default: the cores this process may use: affinity and cgroup CPU quota).")
    var jobs: Int?
    @Option(
        help: ArgumentHelp(
            "Write JUnit XML: one test case per expectation and item, and per budget.", valueName: "FILE.xml"))
    var junit: String?
    @Option(help: ArgumentHelp("Write a JSON summary of every expectation.", valueName: "FILE.json")) var json: String?
    @Option(
        help: ArgumentHelp("Write ref.trn, hyp.trn and hyp.ctm for sclite (SCTK) into this folder.", valueName: "DIR"))
    var sctk: String?
    @Flag(help: "Take the current outputs as the goldens (written beside the suite), printing what changed.")
    var update = false
    @Flag(
        help: """
            Let goldens and references lie outside the suite's folder (links followed); devices, FIFOs and \
            files under /proc, /sys and /dev are refused even then.
            """)
    var allowOutside = false

    func run() async throws {
        bootstrapLogging(verbose: false)
        let loaded: Suite
        do {
            loaded = try Suite.load(URL(fileURLWithPath: suite), allowOutside: allowOutside)
        } catch {
            throw fail(error)
        }
        let temporary = output == nil
        let out =
            output.map { URL(fileURLWithPath: $0).standardizedFileURL }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-check-\(UUID().uuidString)")
        defer { if temporary { try? FileManager.default.removeItem(at: out) } }
        let signals = SignalHandler()
        signals.install()
        let result: BatchResult
        do {
            let batch = try BatchRun(
                plan: try loadPlan(loaded.spec.path, requireOutputs: true), inputs: loaded.inputs.map(\.path),
                outputDirectory: out, options: BatchRun.Options(jobs: jobs), version: voxpipeVersion,
                secrets: processSecrets)
            let prepared = try await batch.prepare()
            let progress = ProgressReporter(total: batch.items.count)
            let work = Task { await prepared.run(observer: progress) }
            signals.onFirst { work.cancel() }
            result = await work.value
            progress.finish(result.results, seconds: result.seconds, output: out.path)
        } catch {
            throw fail(error)
        }
        // Items that failed are the budgets' to judge; a signal ends the check as it ends a run.
        if let interrupted = signals.received { throw ExitCode(128 + interrupted) }
        let passed = try await evaluateChecks(
            loaded, outputDirectory: out, items: result.results.map(CheckedItem.init),
            reports: CheckReportPaths(junit: junit, json: json, sctk: sctk, update: update), seconds: result.seconds)
        if !passed { throw ExitCode(1) }
    }
}

/// Checks a finished run's outputs against a suite, prints one line per result (PASS/FAIL, with
/// the alignment or differences under a failure), writes the reports asked for, and returns
/// whether everything held. `run --check` and `check` share it.
func evaluateChecks(
    _ suite: Suite, outputDirectory: URL, items: [CheckedItem], reports: CheckReportPaths, seconds: Double
) async throws -> Bool {
    let paths = Checker(suite: suite, outputDirectory: outputDirectory, items: items)
    // Every golden and reference each item uses, before anything is read or written.
    do { try paths.checkPaths() } catch { throw fail(error) }
    let spoken = paths.spokenFiles()
    let heard: [String: String]
    do { heard = try await hearSpoken(spoken, suite: suite) } catch { throw fail(error) }
    let outcome = Checker(
        suite: suite, outputDirectory: outputDirectory, items: items, wallSeconds: seconds, heard: heard,
        secrets: processSecrets
    ).evaluate(update: reports.update)
    for update in outcome.updates { printError("golden \(update.path): \(update.change)") }
    var lines: [String] = []
    for result in outcome.results {
        lines.append("\(result.passed ? "PASS" : "FAIL")  \(result.item)  \(result.name): \(result.message)")
        if !result.passed, let detail = result.detail {
            lines += detail.split(separator: "\n", omittingEmptySubsequences: false).map { "      " + $0 }
        }
    }
    print(lines.map(safeLine).joined(separator: "\n"))
    let failed = outcome.results.filter { !$0.passed }.count
    printError(
        "check: \(outcome.results.count - failed) of \(outcome.results.count) expectations hold; normalisation: "
            + "\(suite.normalization.summary)"
    )
    do {
        if let path = reports.junit {
            let junit = CheckReports.junit(
                outcome, suiteName: suite.url.deletingPathExtension().lastPathComponent, seconds: seconds)
            try AtomicFile.write(redacted(Data(junit.utf8)), to: URL(fileURLWithPath: path))
        }
        if let path = reports.json {
            try AtomicFile.write(redacted(CheckReports.json(outcome, suite: suite)), to: URL(fileURLWithPath: path))
        }
        if let path = reports.sctk {
            try CheckReports.writeSCTK(outcome, to: URL(fileURLWithPath: path), secrets: processSecrets)
        }
    } catch {
        throw fail(error)
    }
    return outcome.passed
}
