import ArgumentParser
import Foundation
import VoxCore
import VoxReports

/// `voxpipe report DIR...`: the reports and metrics of a run's shards merged into one summary.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Merge the reports (and metrics) of a run's shards into one summary.",
        discussion: """
            PATH is a report (.jsonl, from run --report), a metrics file (.prom, from run --metrics) \
            or a folder holding them directly or in its reports/ folder. Prints a summary on stdout; \
            names failed items, and items that more than one report lists, on stderr. Exit status: \
            0 every item done or skipped; 1 some failed or listed twice; 64 usage; 65 a report line \
            unreadable; 66 no report found.
            """
    )

    @Argument(help: "Report files, metrics files or folders.") var paths: [String] = []
    @Flag(help: "Print the summary as JSON.") var json = false
    @Option(help: ArgumentHelp("Write the merged report, one JSON line per item.", valueName: "FILE.jsonl"))
    var report: String?
    @Option(help: ArgumentHelp("Write the merged Prometheus metrics.", valueName: "FILE.prom")) var metrics: String?
    @Option(help: ArgumentHelp("Write JUnit XML, one test case per item.", valueName: "FILE.xml")) var junit: String?

    func validate() throws {
        if paths.isEmpty { throw ValidationError("name the shards' reports or the folders that hold them") }
    }

    func run() throws {
        let merged: ReportMerge
        do {
            merged = try ReportMerge.load(paths)
            if metrics != nil && merged.metrics == nil {
                throw VoxError(.usage, "--metrics: no shard metrics (.prom) found to merge")
            }
            if let report { try AtomicFile.write(redacted(merged.jsonLines()), to: URL(fileURLWithPath: report)) }
            if let junit { try AtomicFile.write(redacted(Data(merged.junit().utf8)), to: URL(fileURLWithPath: junit)) }
            if let metrics, let text = merged.metrics?.prometheus() {
                try AtomicFile.write(redacted(Data(text.utf8)), to: URL(fileURLWithPath: metrics))
            }
        } catch {
            throw fail(error)
        }
        if json {
            FileHandle.standardOutput.write(merged.json() + Data("\n".utf8))
        } else {
            print(
                merged.summary().split(separator: "\n", omittingEmptySubsequences: false).map { safeLine(String($0)) }
                    .joined(separator: "\n"))
        }
        for item in merged.items where item.status == .failed {
            printError("error: \(item.input): \(item.error?.description ?? "failed")")
        }
        for duplicate in merged.duplicates {
            printError("error: \(duplicate.output): listed by \(duplicate.reports.joined(separator: " and "))")
        }
        if !merged.succeeded { throw ExitCode(1) }
    }
}
