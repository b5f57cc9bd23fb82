import Foundation
import Testing
import VoxCore
import VoxReports

/// ReportMerge and `voxpipe report`: the reports and metrics of a run's shards as one.
@Suite struct ReportMergeTests {
    static func line(
        _ output: String, _ status: ItemResult.Status, failure: StageFailure? = nil, audio: Double? = nil
    ) -> ReportLine {
        ReportLine(
            path: "\(output).wav", input: "/in/\(output).wav", output: output, status: status, error: failure,
            seconds: 0.5, audioSeconds: audio)
    }

    static func metrics(
        _ job: String = "batch", end: Double, wall: Double, success: Bool = true, lastSuccess: Double? = nil
    ) -> RunMetrics {
        RunMetrics(
            job: job, items: [:], audioSeconds: 0, wallSeconds: wall, lastRunTimestamp: end, success: success,
            lastSuccessTimestamp: lastSuccess ?? (success ? end : nil))
    }

    static let shard0 = ReportMerge.Report(
        name: "task-0.jsonl", lines: [line("c", .done, audio: 2), line("a", .skipped)])
    static let shard1 = ReportMerge.Report(name: "task-1.jsonl", lines: [line("b", .done, audio: 3)])

    @Test func mergingShardsListsEveryItemOnceInOutputOrder() throws {
        let merged = try ReportMerge(reports: [Self.shard0, Self.shard1])
        #expect(merged.items.map(\.output) == ["a", "b", "c"])
        #expect(merged.duplicates.isEmpty)
        #expect(merged.succeeded)
        #expect(merged.metrics == nil)
        #expect(
            merged.summary() == """
                2 reports, 3 items: 2 done, 1 skipped, 0 failed
                  task-0.jsonl: 2 items: 1 done, 1 skipped, 0 failed
                  task-1.jsonl: 1 item: 1 done, 0 skipped, 0 failed
                """)
        let written = try ReportLine.parse(merged.jsonLines(), file: "merged.jsonl")
        #expect(written == merged.items)
    }

    @Test func anItemTwoReportsListIsADuplicateAndFailsTheMerge() throws {
        let again = ReportMerge.Report(name: "task-2.jsonl", lines: [Self.line("b", .skipped)])
        let merged = try ReportMerge(reports: [Self.shard0, Self.shard1, again])
        #expect(merged.items.count == 3)
        #expect(merged.duplicates == [.init(output: "b", reports: ["task-1.jsonl", "task-2.jsonl"])])
        #expect(!merged.succeeded)
        #expect(merged.summary().split(separator: "\n")[1] == "1 listed by more than one report")
    }

    @Test func aFailedItemFailsTheMergeAndStaysInTheMergedReport() throws {
        let failure = StageFailure(stageID: "decode", kind: "decode", reason: "not audio")
        let bad = ReportMerge.Report(name: "task-2.jsonl", lines: [Self.line("d", .failed, failure: failure)])
        let merged = try ReportMerge(reports: [Self.shard0, bad])
        #expect(!merged.succeeded)
        #expect(merged.count(.failed) == 1)
        #expect(merged.items.last?.error == failure)
        let json = try #require(try JSONSerialization.jsonObject(with: merged.json()) as? [String: Any])
        #expect(json["succeeded"] as? Bool == false)
        let failed = try #require(json["failedItems"] as? [[String: Any]])
        #expect(failed.first?["input"] as? String == "/in/d.wav")
        #expect(
            (failed.first?["error"] as? [String: String]) == [
                "stage": "decode", "kind": "decode", "reason": "not audio",
            ]
        )
    }

    @Test func shardMetricsFoldIntoOneRunFromTheFirstStartToTheLastEnd() throws {
        let merged = try ReportMerge(
            reports: [Self.shard0, Self.shard1],
            metrics: [Self.metrics(end: 1000, wall: 10), Self.metrics(end: 1020, wall: 25)])
        let metrics = try #require(merged.metrics)
        #expect(metrics.wallSeconds == 30)  // 995 → 1020
        #expect(metrics.lastRunTimestamp == 1020)
        #expect(metrics.audioSeconds == 5)  // done items only
        #expect(metrics.items == [.done: 2, .skipped: 1, .failed: 0])
        #expect(metrics.success)
        #expect(metrics.lastSuccessTimestamp == 1020)
        #expect(RunMetrics.parse(metrics.prometheus()) == [metrics])
    }

    /// A textfile someone else wrote (or a broken one) with counts no Int holds: those lines are
    /// passed over, the rest read (found by the `metrics` fuzz target: `Int(1e300)` trapped).
    @Test func countsThatAreNoWholeNumberArePassedOverNotATrap() {
        let text = """
            voxpipe_items{job_name="j",status="done"} 1e300
            voxpipe_items{job_name="j",status="failed"} NaN
            voxpipe_items{job_name="j",status="skipped"} 2.5
            voxpipe_items{job_name="j",status="done"} 7
            voxpipe_wall_seconds{job_name="j"} 3.5
            """
        let parsed = RunMetrics.parse(text)
        #expect(parsed.map(\.items) == [[.done: 7]])
        #expect(parsed.map(\.wallSeconds) == [3.5])
    }

    @Test func aFailedShardLeavesTheJobsLastSuccessAtItsEarliestShardSuccess() throws {
        let merged = try ReportMerge(
            reports: [Self.shard0],
            metrics: [
                Self.metrics(end: 1000, wall: 10), Self.metrics(end: 1020, wall: 5, success: false, lastSuccess: 900),
            ])
        #expect(merged.metrics?.success == false)
        #expect(merged.metrics?.lastSuccessTimestamp == 900)
        let neverSucceeded = try ReportMerge(
            reports: [Self.shard0],
            metrics: [Self.metrics(end: 1000, wall: 10), Self.metrics(end: 9, wall: 1, success: false)])
        #expect(neverSucceeded.metrics?.lastSuccessTimestamp == nil)
    }

    @Test func metricsOfTwoJobsAreAUsageError() {
        #expect(
            throws: VoxError(
                .usage, "the metrics are of several jobs (batch, other): merge one job's shards at a time")
        ) {
            try ReportMerge(
                reports: [Self.shard0],
                metrics: [Self.metrics(end: 1, wall: 1), Self.metrics("other", end: 1, wall: 1)])
        }
    }

    @Test func metricsParseBackWhatARunWritesWithEscapedJobNames() {
        let written = RunMetrics(
            job: "a \"b\" \\ c\nd", items: [.done: 3, .skipped: 0, .failed: 1], audioSeconds: 1.5, wallSeconds: 2,
            lastRunTimestamp: 1_700_000_000.25, success: false, lastSuccessTimestamp: nil)
        let other = RunMetrics(
            job: "other", items: [.done: 1, .skipped: 0, .failed: 0], audioSeconds: 0, wallSeconds: 1,
            lastRunTimestamp: 5, success: true, lastSuccessTimestamp: 5)
        #expect(RunMetrics.parse(written.prometheus() + other.prometheus()) == [written, other])
    }

    @Test func aReportLineThatIsNotAReportLineNamesItsFileAndLine() {
        let good = ReportLine.jsonLines([Self.line("a", .done)])
        #expect(throws: VoxError(.invalidSpec, "r.jsonl:3: not a voxpipe report line: invalid JSON")) {
            try ReportLine.parse(good + Data("\n{oops\n".utf8), file: "r.jsonl")
        }
        #expect(throws: VoxError(.invalidSpec, "r.jsonl:1: not a voxpipe report line: missing \"output\"")) {
            try ReportLine.parse(
                Data(#"{"path":"a","input":"/a","status":"done","seconds":1,"artifacts":[]}"#.utf8), file: "r.jsonl")
        }
        #expect(throws: VoxError(.invalidSpec, "r.jsonl:1: not a voxpipe report line: bad \"status\"")) {
            try ReportLine.parse(
                Data(#"{"path":"a","input":"/a","output":"a","status":"great","seconds":1,"artifacts":[]}"#.utf8),
                file: "r.jsonl")
        }
    }

    @Test func aRunsReportLineReadsBackAsItWasWritten() throws {
        let result = ItemResult(
            item: InputFile(url: URL(fileURLWithPath: "/in/x.wav"), relativePath: "x.wav", outputName: "x"),
            status: .failed, failure: StageFailure(stageID: "s", kind: "k", reason: "r"), seconds: 1.23456)
        let lines = try ReportLine.parse(ReportLine.jsonLines([ReportLine(result)]), file: "r.jsonl")
        #expect(
            lines == [
                ReportLine(
                    path: "x.wav", input: "/in/x.wav", output: "x", status: .failed, error: result.failure,
                    seconds: 1.235)
            ])
    }

    // MARK: Files

    func folder() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-report-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("out/reports"), withIntermediateDirectories: true)
        return dir
    }

    @Test func aFolderGivesTheReportsInItAndInItsReportsFolder() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        for name in [
            "out/a.jsonl", "out/reports/b.jsonl", "out/reports/b.prom", "out/reports/.hidden.jsonl",
            "out/notes.txt", "out/item/records.jsonl",
        ] {
            let url = dir.appendingPathComponent(name)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data().write(to: url)
        }
        let found = try ReportMerge.findFiles([dir.appendingPathComponent("out").path])
        #expect(found.reports.map(\.lastPathComponent) == ["a.jsonl", "b.jsonl"])
        #expect(found.metrics.map(\.lastPathComponent) == ["b.prom"])
        let notes = dir.appendingPathComponent("out/notes.txt").path
        #expect(
            throws: VoxError(.usage, "\(notes): not a report (.jsonl) or metrics (.prom) file, nor a folder of them")
        ) { try ReportMerge.findFiles([notes]) }
    }

    // MARK: Command line

    func write(_ lines: [ReportLine], to name: String, in dir: URL) throws {
        try ReportLine.jsonLines(lines).write(to: dir.appendingPathComponent(name))
    }

    @Test(.startsProcess("the voxpipe binary"))
    func theCommandPrintsTheSummaryAndExitsZeroWhenEveryItemIsDone() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        try write(Self.shard0.lines, to: "out/reports/task-0.jsonl", in: dir)
        try write(Self.shard1.lines, to: "out/reports/task-1.jsonl", in: dir)
        let result = try voxpipe(["report", "out", "--report", "merged.jsonl"], currentDirectory: dir)
        #expect(result.status == 0)
        #expect(
            result.stdout == """
                2 reports, 3 items: 2 done, 1 skipped, 0 failed
                  out/reports/task-0.jsonl: 2 items: 1 done, 1 skipped, 0 failed
                  out/reports/task-1.jsonl: 1 item: 1 done, 0 skipped, 0 failed

                """)
        #expect(result.stderr == "")
        let merged = try ReportLine.parse(Data(contentsOf: dir.appendingPathComponent("merged.jsonl")), file: "m")
        #expect(merged.map(\.output) == ["a", "b", "c"])
    }

    @Test(.startsProcess("the voxpipe binary"))
    func theCommandNamesFailedAndDuplicatedItemsAndExitsOne() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let failure = StageFailure(stageID: "decode", kind: "decode", reason: "not audio")
        try write(Self.shard0.lines + [Self.line("d", .failed, failure: failure)], to: "t0.jsonl", in: dir)
        try write(Self.shard1.lines + [Self.line("a", .done)], to: "t1.jsonl", in: dir)
        let result = try voxpipe(["report", "t0.jsonl", "t1.jsonl"], currentDirectory: dir)
        #expect(result.status == 1)
        #expect(
            result.stderr == """
                voxpipe: error: /in/d.wav: decode (decode): not audio
                voxpipe: error: a: listed by t0.jsonl and t1.jsonl

                """)
    }

    @Test(.startsProcess("the voxpipe binary"))
    func theCommandExitsSixtySixWhenNoReportIsFound() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try voxpipe(["report", "out", "missing"], currentDirectory: dir)
        #expect(result.status == 66)
        #expect(result.stderr == "voxpipe: error: missing: no such file or folder\n")
        let empty = try voxpipe(["report", "out"], currentDirectory: dir)
        #expect(empty.status == 66)
        #expect(empty.stderr == "voxpipe: error: no reports (.jsonl) found in out\n")
        try Data().write(to: dir.appendingPathComponent("out/reports/t.jsonl"))
        let noItems = try voxpipe(["report", "out"], currentDirectory: dir)
        #expect(noItems.status == 66)
        #expect(noItems.stderr == "voxpipe: error: the reports list no items: out/reports/t.jsonl\n")
    }

    @Test(.startsProcess("the voxpipe binary"))
    func mergedMetricsNeedShardMetrics() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        try write(Self.shard0.lines, to: "out/t0.jsonl", in: dir)
        let result = try voxpipe(["report", "out", "--metrics", "m.prom"], currentDirectory: dir)
        #expect(result.status == 64)
        #expect(result.stderr == "voxpipe: error: --metrics: no shard metrics (.prom) found to merge\n")
    }
}
