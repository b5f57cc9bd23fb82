import Foundation
import VoxCore

/// The reports and metrics of a run's shards (array tasks, indexed pods) combined into one:
/// every item once, in output order, with the shards' metrics folded into the whole run's.
/// An item that two reports list (two shards took it, or one report repeats it) is a duplicate
/// and makes the merge fail, as a failed item does.
public struct ReportMerge: Sendable {
    /// One shard's report: where it came from and its lines.
    public struct Report: Sendable, Equatable {
        public var name: String
        public var lines: [ReportLine]

        public init(name: String, lines: [ReportLine]) {
            self.name = name
            self.lines = lines
        }
    }

    /// An item listed more than once, with the reports that list it (a name twice when one
    /// report repeats it).
    public struct Duplicate: Sendable, Equatable {
        public var output: String
        public var reports: [String]

        public init(output: String, reports: [String]) {
            self.output = output
            self.reports = reports
        }
    }

    public let reports: [Report]
    /// Every item once (the first report's line for a duplicate), sorted by output.
    public let items: [ReportLine]
    public let duplicates: [Duplicate]
    /// The shards' metrics folded into one run's, when any metrics were given.
    public let metrics: RunMetrics?

    /// Merges shard reports and the shards' metrics (all of one job: a job name that differs
    /// between them is a usage error).
    public init(reports: [Report], metrics: [RunMetrics] = [], now: Double = Date().timeIntervalSince1970) throws {
        self.reports = reports
        var first: [String: ReportLine] = [:]
        var listedBy: [String: [String]] = [:]
        for report in reports {
            for line in report.lines {
                if first[line.output] == nil { first[line.output] = line }
                listedBy[line.output, default: []].append(report.name)
            }
        }
        items = first.values.sorted { $0.output < $1.output }
        duplicates = listedBy.filter { $0.value.count > 1 }.map { Duplicate(output: $0.key, reports: $0.value) }
            .sorted { $0.output < $1.output }
        let jobs = metrics.map(\.job).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        guard jobs.count <= 1 else {
            throw VoxError(
                .usage,
                "the metrics are of several jobs (\(jobs.joined(separator: ", "))): merge one job's shards at a time")
        }
        guard let job = jobs.first else {
            self.metrics = nil
            return
        }
        // The shards ran side by side: the whole run went from the first start to the last end.
        let end = metrics.map(\.lastRunTimestamp).max() ?? now
        let start = metrics.map { $0.lastRunTimestamp - $0.wallSeconds }.min() ?? end
        let success = metrics.allSatisfy(\.success) && !items.contains { $0.status == .failed } && duplicates.isEmpty
        let shardSuccesses = metrics.compactMap(\.lastSuccessTimestamp)
        var counts = Dictionary(uniqueKeysWithValues: ItemResult.Status.allCases.map { ($0, 0) })
        for item in items { counts[item.status, default: 0] += 1 }
        self.metrics = RunMetrics(
            job: job, items: counts,
            audioSeconds: items.filter { $0.status == .done }.compactMap(\.audioSeconds).reduce(0, +),
            wallSeconds: ((end - start) * 1000).rounded() / 1000, lastRunTimestamp: end, success: success,
            // Short of a clean whole run, the job last succeeded when its last shard to succeed did.
            lastSuccessTimestamp: success
                ? end : (shardSuccesses.count == metrics.count ? shardSuccesses.min() : nil))
    }

    public func count(_ status: ItemResult.Status) -> Int { items.filter { $0.status == status }.count }

    /// Every item done or skipped, none listed twice.
    public var succeeded: Bool { count(.failed) == 0 && duplicates.isEmpty }

    /// The merged report, one line per item.
    public func jsonLines() -> Data { ReportLine.jsonLines(items) }

    /// JUnit XML of the merged items.
    public func junit() -> String {
        JUnitReport.render(
            suite: "voxpipe \(metrics?.job ?? "merged")", lines: items, wallSeconds: metrics?.wallSeconds ?? 0)
    }

    /// A few lines for people: the totals, each report's share, the wall time and audio.
    public func summary() -> String {
        func counts(_ lines: [ReportLine]) -> String {
            let by = { (s: ItemResult.Status) in lines.filter { $0.status == s }.count }
            return "\(lines.count) item\(lines.count == 1 ? "" : "s"): "
                + "\(by(.done)) done, \(by(.skipped)) skipped, \(by(.failed)) failed"
        }
        var lines = ["\(reports.count) report\(reports.count == 1 ? "" : "s"), \(counts(items))"]
        if !duplicates.isEmpty { lines.append("\(duplicates.count) listed by more than one report") }
        for report in reports { lines.append("  \(report.name): \(counts(report.lines))") }
        let talking = items.filter { !($0.speakers ?? []).isEmpty }
        if !talking.isEmpty { lines.append("speakers:") }
        for item in talking {
            let talk = (item.speakers ?? []).map {
                "\($0.speaker) " + String(format: "%.1f", $0.seconds)
                    + " s in \($0.turns) turn\($0.turns == 1 ? "" : "s")"
            }
            lines.append("  \(item.output): \(talk.joined(separator: ", "))")
        }
        if let metrics {
            lines.append(
                String(
                    format: "wall %.1f s from the first shard's start to the last one's end; %.1f s of audio",
                    metrics.wallSeconds, metrics.audioSeconds))
        }
        return lines.joined(separator: "\n")
    }

    /// The summary as JSON (sorted keys) for scripts.
    public func json() -> Data {
        struct Share: Encodable {
            var report: String
            var items, done, skipped, failed: Int
        }
        struct FailedItem: Encodable {
            var path, output, input: String
            var error: StageFailure?
        }
        struct DuplicateItem: Encodable {
            var output: String
            var reports: [String]
        }
        struct TalkingItem: Encodable {
            var output: String
            var speakers: [SpeakerTalk]
        }
        struct Summary: Encodable {
            var items, done, skipped, failed: Int
            var succeeded: Bool
            var reports: [Share]
            var failedItems: [FailedItem]
            var duplicates: [DuplicateItem]
            var wallSeconds, audioSeconds: Double?
            /// Each speaker's talk time and turns, per item that has speakers; absent when none has.
            var speakers: [TalkingItem]?
        }
        let shares = reports.map { r in
            Share(
                report: r.name, items: r.lines.count, done: r.lines.filter { $0.status == .done }.count,
                skipped: r.lines.filter { $0.status == .skipped }.count,
                failed: r.lines.filter { $0.status == .failed }.count)
        }
        let talking = items.compactMap { item in
            item.speakers.flatMap { $0.isEmpty ? nil : TalkingItem(output: item.output, speakers: $0) }
        }
        let summary = Summary(
            items: items.count, done: count(.done), skipped: count(.skipped), failed: count(.failed),
            succeeded: succeeded, reports: shares,
            failedItems: items.filter { $0.status == .failed }.map {
                FailedItem(path: $0.path, output: $0.output, input: $0.input, error: $0.error)
            },
            duplicates: duplicates.map { DuplicateItem(output: $0.output, reports: $0.reports) },
            wallSeconds: metrics?.wallSeconds, audioSeconds: metrics?.audioSeconds,
            speakers: talking.isEmpty ? nil : talking)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return (try? encoder.encode(summary)) ?? Data()
    }
}

extension ReportMerge {
    /// The report files (`.jsonl`) and metrics files (`.prom`) that paths name: files as given,
    /// and in a folder those directly in it or in its `reports/` folder (where the deploy
    /// examples write them), hidden files aside. Sorted, each once.
    public static func findFiles(_ paths: [String]) throws -> (reports: [URL], metrics: [URL]) {
        let fm = FileManager.default
        var reports: [URL] = []
        var metrics: [URL] = []
        func take(_ url: URL, named: Bool) throws {
            switch url.pathExtension {
            case "jsonl": if !reports.contains(url) { reports.append(url) }
            case "prom": if !metrics.contains(url) { metrics.append(url) }
            default:
                if named {
                    throw VoxError(
                        .usage, "\(url.path): not a report (.jsonl) or metrics (.prom) file, nor a folder of them")
                }
            }
        }
        for path in paths {
            let url = URL(fileURLWithPath: path).standardizedFileURL
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                throw VoxError(.noInput, "\(path): no such file or folder")
            }
            guard isDirectory.boolValue else {
                try take(url, named: true)
                continue
            }
            for folder in [url, url.appendingPathComponent("reports")] {
                let names = (try? fm.contentsOfDirectory(atPath: folder.path)) ?? []
                for name in names.sorted() where !name.hasPrefix(".") {
                    try take(folder.appendingPathComponent(name), named: false)
                }
            }
        }
        return (reports.sorted { $0.path < $1.path }, metrics.sorted { $0.path < $1.path })
    }

    /// Reads and merges the reports and metrics that paths name (see `findFiles`). Report names
    /// are paths as given where a file was named, else relative to the working folder.
    public static func load(_ paths: [String]) throws -> ReportMerge {
        let found = try findFiles(paths)
        guard !found.reports.isEmpty else {
            throw VoxError(.noInput, "no reports (.jsonl) found in \(paths.joined(separator: ", "))")
        }
        let cwd = FileManager.default.currentDirectoryPath + "/"
        func name(_ url: URL) -> String { url.path.hasPrefix(cwd) ? String(url.path.dropFirst(cwd.count)) : url.path }
        func read(_ url: URL) throws -> Data {
            do { return try Data(contentsOf: url) } catch {
                throw VoxError(.noInput, "\(name(url)): cannot read: \(describe(error))")
            }
        }
        let reports = try found.reports.map { url in
            Report(name: name(url), lines: try ReportLine.parse(try read(url), file: name(url)))
        }
        guard reports.contains(where: { !$0.lines.isEmpty }) else {
            throw VoxError(.noInput, "the reports list no items: \(reports.map(\.name).joined(separator: ", "))")
        }
        let metrics = try found.metrics.flatMap { RunMetrics.parse(String(decoding: try read($0), as: UTF8.self)) }
        return try ReportMerge(reports: reports, metrics: metrics)
    }
}
