import Foundation
import VoxCore

/// What `check` writes for CI: JUnit XML (one test case per expectation and item, and per
/// budget), a JSON summary, and sclite's `trn` and `ctm` files so SCTK can rescore.
public enum CheckReports {
    /// JUnit XML; a failing case's message says what differed, its text the details.
    public static func junit(_ outcome: CheckOutcome, suiteName: String, seconds: Double) -> String {
        let failures = outcome.results.filter { !$0.passed }.count
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml +=
            "<testsuites name=\"voxpipe check\" tests=\"\(outcome.results.count)\" failures=\"\(failures)\" "
            + "errors=\"0\" time=\"\(String(format: "%.3f", seconds))\">\n"
        xml +=
            "  <testsuite name=\"\(escape(suiteName))\" tests=\"\(outcome.results.count)\" failures=\"\(failures)\" "
            + "errors=\"0\">\n"
        for result in outcome.results {
            xml += "    <testcase classname=\"\(escape(result.item))\" name=\"\(escape(result.name))\""
            if result.passed {
                xml += "/>\n"
            } else {
                xml +=
                    ">\n      <failure message=\"\(escape(result.message))\">"
                    + escape([result.message, result.detail].compactMap { $0 }.joined(separator: "\n"))
                    + "</failure>\n    </testcase>\n"
            }
        }
        xml += "  </testsuite>\n</testsuites>\n"
        return xml
    }

    /// The JSON summary: totals, pooled error rates, the normalisation, and every result.
    public static func json(_ outcome: CheckOutcome, suite: Suite) -> Data {
        func rounded(_ x: Double) -> JSONValue { x.isFinite ? .number((x * 1_000_000).rounded() / 1_000_000) : .null }
        let results: [JSONValue] = outcome.results.map { r in
            var o: [String: JSONValue] = [
                "item": .string(r.item), "name": .string(r.name), "passed": .bool(r.passed),
                "message": .string(r.message),
            ]
            if !r.metrics.isEmpty { o["metrics"] = .object(r.metrics.mapValues(rounded)) }
            if let category = r.category { o["category"] = .string(category) }
            if let code = r.code { o["code"] = .string(code) }
            return .object(o)
        }
        let summary: JSONValue = [
            "suite": .string(suite.url.path),
            "passed": .bool(outcome.passed),
            "expectations": .number(Double(outcome.results.count)),
            "failed": .number(Double(outcome.results.filter { !$0.passed }.count)),
            "normalization": .string(suite.normalization.summary),
            "wer": rounded(outcome.words.rate),
            "cer": rounded(outcome.characters.rate),
            "words": [
                "substitutions": .number(Double(outcome.words.substitutions)),
                "deletions": .number(Double(outcome.words.deletions)),
                "insertions": .number(Double(outcome.words.insertions)),
                "reference": .number(Double(outcome.words.referenceCount)),
            ],
            "results": .array(results),
        ]
        return summary.prettyData() + Data("\n".utf8)
    }

    /// `ref.trn`, `hyp.trn` and (where outputs carry word times) `hyp.ctm`, in `folder`, each
    /// redacted by `secrets` when given.
    public static func writeSCTK(_ outcome: CheckOutcome, to folder: URL, secrets: Secrets? = nil) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func write(_ text: String, _ name: String) throws {
            let data = Data(text.utf8)
            try AtomicFile.write(secrets?.redact(data) ?? data, to: folder.appendingPathComponent(name))
        }
        try write(SCTKExport.trn(outcome.scored.map { ($0.id, $0.reference) }), "ref.trn")
        try write(SCTKExport.trn(outcome.scored.map { ($0.id, $0.hypothesis) }), "hyp.trn")
        let timed = outcome.scored.flatMap { s in
            s.timed.map { (id: s.id, start: $0.start, end: $0.end, word: $0.word, confidence: $0.confidence) }
        }
        try write(SCTKExport.ctm(timed), "hyp.ctm")
    }

    static func escape(_ text: String) -> String { xmlEscaped(text) }
}
