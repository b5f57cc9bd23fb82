import Foundation
import VoxCore

/// One line of a run's JSON-lines report (`voxpipe run --report`): one item, its status, the
/// error of a failed item and the hashes of what it wrote. `voxpipe report` reads these back to
/// merge the reports of a run's shards.
public struct ReportLine: Codable, Sendable, Equatable {
    /// The input's path relative to its INPUT root.
    public var path: String
    /// The input's full path.
    public var input: String
    /// The item's output folder, relative to the output folder: unique per item.
    public var output: String
    public var status: ItemResult.Status
    public var reason: String?
    public var error: StageFailure?
    public var seconds: Double
    public var audioSeconds: Double?
    public var realTimeFactor: Double?
    public var artifacts: [Artifact]
    /// What stages noticed without failing the item (a truncated file); absent when nothing.
    public var warnings: [ItemWarning]?
    /// Each speaker's talk time (to the millisecond) and turns, in order of first appearance, when
    /// a speaker chunker labelled the item's chunks; absent otherwise.
    public var speakers: [SpeakerTalk]?

    public init(
        path: String, input: String, output: String, status: ItemResult.Status, reason: String? = nil,
        error: StageFailure? = nil, seconds: Double = 0, audioSeconds: Double? = nil, realTimeFactor: Double? = nil,
        artifacts: [Artifact] = [], warnings: [ItemWarning]? = nil, speakers: [SpeakerTalk]? = nil
    ) {
        self.path = path
        self.input = input
        self.output = output
        self.status = status
        self.reason = reason
        self.error = error
        self.seconds = seconds
        self.audioSeconds = audioSeconds
        self.realTimeFactor = realTimeFactor
        self.artifacts = artifacts
        self.warnings = warnings
        self.speakers = speakers
    }

    /// The line for an item's result: seconds to the millisecond, the real-time factor (to four
    /// places) only for a done item whose audio length is known and not zero.
    public init(_ r: ItemResult) {
        let rtf =
            r.status == .done
            ? r.audioSeconds.flatMap { $0 > 0 ? (r.seconds / $0 * 10000).rounded() / 10000 : nil } : nil
        self.init(
            path: r.item.relativePath, input: r.item.url.path, output: r.item.outputName, status: r.status,
            reason: r.reason, error: r.failure,
            seconds: (r.seconds * 1000).rounded() / 1000,
            audioSeconds: r.audioSeconds.map { ($0 * 1000).rounded() / 1000 },
            realTimeFactor: rtf, artifacts: r.artifacts, warnings: r.warnings.isEmpty ? nil : r.warnings,
            speakers: r.speakers)
    }

    /// The line for an entry under an INPUT folder that was not read (a folder without permission,
    /// a loop of links): skipped, with why; no output.
    public init(unread: InputListing.Unread) {
        self.init(
            path: unread.url.lastPathComponent, input: unread.url.path, output: "", status: .skipped,
            reason: "not read: \(unread.reason)")
    }

    /// Lines as the report file holds them: sorted keys, one JSON object a line.
    public static func jsonLines(_ lines: [ReportLine]) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var out = Data()
        for line in lines {
            if let data = try? encoder.encode(line) {
                out.append(data)
                out.append(0x0A)
            }
        }
        return out
    }

    /// Reads a report file's lines; blank lines are ignored. A line that is not a report line
    /// fails with its file and line number.
    public static func parse(_ data: Data, file: String) throws -> [ReportLine] {
        let decoder = JSONDecoder()
        var lines: [ReportLine] = []
        for (number, raw) in data.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            guard raw.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { continue }
            do {
                lines.append(try decoder.decode(ReportLine.self, from: Data(raw)))
            } catch {
                throw VoxError(
                    .invalidSpec, "\(file):\(number + 1): not a voxpipe report line: \(reportDecodeProblem(error))")
            }
        }
        return lines
    }
}

/// What JSONDecoder disliked, in a few words.
private func reportDecodeProblem(_ error: any Error) -> String {
    switch error as? DecodingError {
    case .keyNotFound(let key, _): "missing \"\(key.stringValue)\""
    case .typeMismatch(_, let context), .valueNotFound(_, let context):
        "bad \"\(context.codingPath.map(\.stringValue).joined(separator: "."))\""
    case .dataCorrupted(let context) where !context.codingPath.isEmpty:
        "bad \"\(context.codingPath.map(\.stringValue).joined(separator: "."))\""
    default: "invalid JSON"
    }
}

/// A run's Prometheus textfile-collector metrics (`voxpipe run --metrics`), for one job.
public struct RunMetrics: Sendable, Equatable {
    public var job: String
    public var items: [ItemResult.Status: Int]
    public var audioSeconds: Double
    public var wallSeconds: Double
    /// When the run ended (Unix time).
    public var lastRunTimestamp: Double
    /// Every item done or skipped, and not stopped by a signal.
    public var success: Bool
    /// When a run of this job last ended with no failed item (Unix time).
    public var lastSuccessTimestamp: Double?

    public init(
        job: String, items: [ItemResult.Status: Int], audioSeconds: Double, wallSeconds: Double,
        lastRunTimestamp: Double, success: Bool, lastSuccessTimestamp: Double?
    ) {
        self.job = job
        self.items = items
        self.audioSeconds = audioSeconds
        self.wallSeconds = wallSeconds
        self.lastRunTimestamp = lastRunTimestamp
        self.success = success
        self.lastSuccessTimestamp = lastSuccessTimestamp
    }

    /// The textfile-collector text.
    public func prometheus() -> String {
        let job = "job_name=\"\(Self.escapeLabel(job))\""
        var lines: [String] = []
        func metric(_ name: String, _ help: String, _ samples: [(String, Double)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) gauge")
            for (labels, value) in samples { lines.append("\(name){\(labels)} \(Self.format(value))") }
        }
        metric(
            "voxpipe_items", "Items in the last run, by status.",
            ItemResult.Status.allCases.map { ("\(job),status=\"\($0.rawValue)\"", Double(items[$0] ?? 0)) })
        metric("voxpipe_audio_seconds", "Seconds of input audio processed in the last run.", [(job, audioSeconds)])
        metric("voxpipe_wall_seconds", "Wall-clock seconds of the last run.", [(job, wallSeconds)])
        metric("voxpipe_last_run_timestamp_seconds", "When the last run ended (Unix time).", [(job, lastRunTimestamp)])
        metric(
            "voxpipe_last_run_success", "1 if the last run finished with every item done or skipped, else 0.",
            [(job, success ? 1 : 0)])
        if let lastSuccessTimestamp {
            metric(
                "voxpipe_last_success_timestamp_seconds", "When a run last ended with no failed item (Unix time).",
                [(job, lastSuccessTimestamp)])
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The voxpipe metrics in a textfile, one value per job (a file may hold several jobs'), in
    /// the order the jobs first appear. Other metrics and unreadable lines are passed over.
    public static func parse(_ text: String) -> [RunMetrics] {
        var order: [String] = []
        var found: [String: RunMetrics] = [:]
        for raw in text.split(separator: "\n") where !raw.hasPrefix("#") {
            guard let open = raw.firstIndex(of: "{"), let close = raw.lastIndex(of: "}"), open < close,
                let value = Double(raw[raw.index(after: close)...].trimmingCharacters(in: .whitespaces))
            else { continue }
            let labels = parseLabels(raw[raw.index(after: open)..<close])
            let job = labels["job_name"] ?? ""
            if found[job] == nil {
                order.append(job)
                found[job] = RunMetrics(
                    job: job, items: [:], audioSeconds: 0, wallSeconds: 0, lastRunTimestamp: 0, success: false,
                    lastSuccessTimestamp: nil)
            }
            switch raw[..<open] {
            case "voxpipe_items":
                // A count that is no whole number an Int holds (NaN, 1e300, 2.5) is an unreadable line.
                if let status = labels["status"].flatMap(ItemResult.Status.init(rawValue:)),
                    let count = Int(exactly: value)
                {
                    found[job]?.items[status] = count
                }
            case "voxpipe_audio_seconds": found[job]?.audioSeconds = value
            case "voxpipe_wall_seconds": found[job]?.wallSeconds = value
            case "voxpipe_last_run_timestamp_seconds": found[job]?.lastRunTimestamp = value
            case "voxpipe_last_run_success": found[job]?.success = value == 1
            case "voxpipe_last_success_timestamp_seconds": found[job]?.lastSuccessTimestamp = value
            default: break
            }
        }
        return order.compactMap { found[$0] }
    }

    /// `a="x",b="y \"q\""` → [a: x, b: y "q"].
    static func parseLabels(_ text: Substring) -> [String: String] {
        var labels: [String: String] = [:]
        var rest = text[...]
        while let equals = rest.firstIndex(of: "=") {
            let name = rest[..<equals].trimmingCharacters(in: CharacterSet(charactersIn: ", "))
            var i = rest.index(after: equals)
            guard i < rest.endIndex, rest[i] == "\"" else { break }
            i = rest.index(after: i)
            var value = ""
            while i < rest.endIndex, rest[i] != "\"" {
                if rest[i] == "\\", rest.index(after: i) < rest.endIndex {
                    i = rest.index(after: i)
                    value.append(rest[i] == "n" ? "\n" : rest[i])
                } else {
                    value.append(rest[i])
                }
                i = rest.index(after: i)
            }
            labels[name] = value
            rest = i < rest.endIndex ? rest[rest.index(after: i)...] : ""
        }
        return labels
    }

    static func escapeLabel(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    static func format(_ x: Double) -> String {
        x.rounded() == x && abs(x) < 1e15 ? String(Int64(x)) : String(format: "%.6f", x)
    }
}

extension ItemResult.Status: CaseIterable {
    public static let allCases: [ItemResult.Status] = [.done, .skipped, .failed]
}

/// JUnit XML for report lines: one test case per item (failed → `<failure>`, skipped → `<skipped>`).
public enum JUnitReport {
    public static func render(suite name: String, lines items: [ReportLine], wallSeconds: Double) -> String {
        let suite = xmlEscaped(name)
        let failures = items.filter { $0.status == .failed }.count
        let skipped = items.filter { $0.status == .skipped }.count
        let time = String(format: "%.3f", wallSeconds)
        var lines = [
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
            "<testsuites name=\"voxpipe\" tests=\"\(items.count)\" failures=\"\(failures)\" "
                + "skipped=\"\(skipped)\" time=\"\(time)\">",
            "  <testsuite name=\"\(suite)\" tests=\"\(items.count)\" failures=\"\(failures)\" errors=\"0\" "
                + "skipped=\"\(skipped)\" time=\"\(time)\">",
        ]
        for r in items {
            let open =
                "    <testcase classname=\"\(suite)\" name=\"\(xmlEscaped(r.path))\" "
                + "time=\"\(String(format: "%.3f", r.seconds))\""
            switch r.status {
            case .done:
                lines.append(open + "/>")
            case .skipped:
                lines.append(open + ">")
                lines.append("      <skipped message=\"\(xmlEscaped(r.reason ?? "skipped"))\"/>")
                lines.append("    </testcase>")
            case .failed:
                let message = r.error?.description ?? "failed"
                lines.append(open + ">")
                lines.append(
                    "      <failure message=\"\(xmlEscaped(message))\" type=\"\(xmlEscaped(r.error?.kind ?? "item"))\">"
                        + "\(xmlEscaped(r.input)): \(xmlEscaped(message))</failure>"
                )
                lines.append("    </testcase>")
            }
        }
        lines.append("  </testsuite>")
        lines.append("</testsuites>")
        return lines.joined(separator: "\n") + "\n"
    }
}
