import Foundation
import VoxCore

/// What a run writes about itself for schedulers and CI: a JSON-lines report, Prometheus
/// textfile-collector metrics and JUnit XML. Each is written whole (temporary name + rename).
struct RunReports {
    let planName: String
    let results: [ItemResult]
    let wallSeconds: Double
    let outputDirectory: URL
    /// Set when a signal ended the run early.
    let interruptedBy: Int32?

    func count(_ status: ItemResult.Status) -> Int { results.filter { $0.status == status }.count }

    // MARK: JSON lines

    struct ReportLine: Encodable {
        struct Failure: Encodable {
            var stage: String
            var kind: String
            var reason: String
        }
        var path: String
        var input: String
        var output: String
        var status: String
        var reason: String?
        var error: Failure?
        var seconds: Double
        var audioSeconds: Double?
        var realTimeFactor: Double?
        var artifacts: [Artifact]
    }

    func jsonLines() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var out = Data()
        for r in results {
            let rtf =
                r.status == .done
                ? r.audioSeconds.flatMap { $0 > 0 ? (r.seconds / $0 * 10000).rounded() / 10000 : nil } : nil
            let line = ReportLine(
                path: r.item.relativePath, input: r.item.url.path, output: r.item.outputName, status: r.status.rawValue,
                reason: r.reason, error: r.failure.map { .init(stage: $0.stageID, kind: $0.kind, reason: $0.reason) },
                seconds: (r.seconds * 1000).rounded() / 1000,
                audioSeconds: r.audioSeconds.map { ($0 * 1000).rounded() / 1000 },
                realTimeFactor: rtf, artifacts: r.artifacts)
            if let data = try? encoder.encode(line) {
                out.append(data)
                out.append(0x0A)
            }
        }
        return out
    }

    // MARK: Prometheus

    /// Textfile-collector metrics. The last-success timestamp keeps its earlier value (from the
    /// file being replaced) when this run had failures.
    func prometheus(previous: String?) -> String {
        let now = Date().timeIntervalSince1970
        let failed = count(.failed) > 0 || interruptedBy != nil
        var lastSuccess: Double? = failed ? nil : now
        let job = "job_name=\"\(escapeLabel(planName))\""
        // Only this job's line: a file may hold several jobs' metrics.
        if lastSuccess == nil, let previous {
            for line in previous.split(separator: "\n")
            where line.hasPrefix("voxpipe_last_success_timestamp_seconds{") && line.contains(job) {
                lastSuccess = line.split(separator: " ").last.flatMap { Double($0) }
            }
        }
        let audio = results.filter { $0.status == .done }.compactMap(\.audioSeconds).reduce(0, +)
        var lines: [String] = []
        func metric(_ name: String, _ help: String, _ type: String, _ samples: [(String, Double)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for (labels, value) in samples { lines.append("\(name){\(labels)} \(format(value))") }
        }
        metric(
            "voxpipe_items", "Items in the last run, by status.", "gauge",
            ItemResult.Status.allCases.map { ("\(job),status=\"\($0.rawValue)\"", Double(count($0))) })
        metric("voxpipe_audio_seconds", "Seconds of input audio processed in the last run.", "gauge", [(job, audio)])
        metric("voxpipe_wall_seconds", "Wall-clock seconds of the last run.", "gauge", [(job, wallSeconds)])
        metric("voxpipe_last_run_timestamp_seconds", "When the last run ended (Unix time).", "gauge", [(job, now)])
        metric(
            "voxpipe_last_run_success", "1 if the last run finished with every item done or skipped, else 0.", "gauge",
            [(job, failed ? 0 : 1)])
        if let lastSuccess {
            metric(
                "voxpipe_last_success_timestamp_seconds", "When a run last ended with no failed item (Unix time).",
                "gauge", [(job, lastSuccess)])
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private func escapeLabel(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    private func format(_ x: Double) -> String {
        x.rounded() == x && abs(x) < 1e15 ? String(Int64(x)) : String(format: "%.6f", x)
    }

    // MARK: JUnit

    func junit() -> String {
        func xml(_ s: String) -> String { xmlEscaped(s) }
        let suite = xml("voxpipe \(planName)")
        var lines = [
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
            "<testsuites name=\"voxpipe\" tests=\"\(results.count)\" failures=\"\(count(.failed))\" "
                + "skipped=\"\(count(.skipped))\" time=\"\(String(format: "%.3f", wallSeconds))\">",
            "  <testsuite name=\"\(suite)\" tests=\"\(results.count)\" failures=\"\(count(.failed))\" errors=\"0\" "
                + "skipped=\"\(count(.skipped))\" time=\"\(String(format: "%.3f", wallSeconds))\">",
        ]
        for r in results {
            let open =
                "    <testcase classname=\"\(suite)\" name=\"\(xml(r.item.relativePath))\" "
                + "time=\"\(String(format: "%.3f", r.seconds))\""
            switch r.status {
            case .done:
                lines.append(open + "/>")
            case .skipped:
                lines.append(open + ">")
                lines.append("      <skipped message=\"\(xml(r.reason ?? "skipped"))\"/>")
                lines.append("    </testcase>")
            case .failed:
                let message = r.failure.map(\.description) ?? "failed"
                lines.append(open + ">")
                lines.append(
                    "      <failure message=\"\(xml(message))\" "
                        + "type=\"\(xml(r.failure?.kind ?? "item"))\">"
                        + "\(xml(r.item.url.path)): \(xml(message))</failure>"
                )
                lines.append("    </testcase>")
            }
        }
        lines.append("  </testsuite>")
        lines.append("</testsuites>")
        return lines.joined(separator: "\n") + "\n"
    }
}

extension ItemResult.Status: CaseIterable {
    public static let allCases: [ItemResult.Status] = [.done, .skipped, .failed]
}
