import Foundation
import VoxCore
import VoxReports

/// What a run writes about itself for schedulers and CI: a JSON-lines report, Prometheus
/// textfile-collector metrics and JUnit XML. Each is written whole (temporary name + rename).
struct RunReports {
    let planName: String
    let results: [ItemResult]
    let wallSeconds: Double
    let outputDirectory: URL
    /// Set when a signal ended the run early.
    let interruptedBy: Int32?
    /// Entries under INPUT folders that were not read: report lines of their own.
    var unread: [InputListing.Unread] = []

    func count(_ status: ItemResult.Status) -> Int { results.filter { $0.status == status }.count }

    // MARK: JSON lines

    func jsonLines() -> Data {
        ReportLine.jsonLines(results.map(ReportLine.init) + unread.map(ReportLine.init(unread:)))
    }

    // MARK: Prometheus

    /// Textfile-collector metrics. The last-success timestamp keeps its earlier value (from the
    /// file being replaced) when this run had failures.
    func prometheus(previous: String?) -> String {
        let now = Date().timeIntervalSince1970
        let failed = count(.failed) > 0 || interruptedBy != nil
        // Only this job's value: a file may hold several jobs' metrics.
        let lastSuccess =
            failed ? previous.flatMap { RunMetrics.parse($0).last { $0.job == planName }?.lastSuccessTimestamp } : now
        let audio = results.filter { $0.status == .done }.compactMap(\.audioSeconds).reduce(0, +)
        return RunMetrics(
            job: planName, items: Dictionary(uniqueKeysWithValues: ItemResult.Status.allCases.map { ($0, count($0)) }),
            audioSeconds: audio, wallSeconds: wallSeconds, lastRunTimestamp: now, success: !failed,
            lastSuccessTimestamp: lastSuccess
        ).prometheus()
    }

    // MARK: JUnit

    func junit() -> String {
        JUnitReport.render(suite: "voxpipe \(planName)", lines: results.map(ReportLine.init), wallSeconds: wallSeconds)
    }
}
