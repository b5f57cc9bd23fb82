import Foundation
import VoxCore
import VoxDecode

/// One item of the run a suite checks, as the run's report gives it.
public struct CheckedItem: Sendable, Equatable {
    /// The item's output folder name (what `item` globs match).
    public var name: String
    public var status: String
    public var failure: String?
    /// A failed item's error category (`badInput`) and code (`decode.unreadable`), where known.
    public var category: String?
    public var code: String?
    public var seconds: Double
    public var audioSeconds: Double?

    public init(
        name: String, status: String, failure: String? = nil, category: String? = nil, code: String? = nil,
        seconds: Double = 0, audioSeconds: Double? = nil
    ) {
        self.name = name
        self.status = status
        self.failure = failure
        self.category = category
        self.code = code
        self.seconds = seconds
        self.audioSeconds = audioSeconds
    }

    /// A run's item as a check sees it.
    public init(_ result: ItemResult) {
        self.init(
            name: result.item.outputName, status: result.status.rawValue, failure: result.failure?.description,
            category: result.failure?.category?.rawValue, code: result.failure?.code, seconds: result.seconds,
            audioSeconds: result.audioSeconds)
    }
}

/// The outcome of one expectation on one item (or of one budget).
public struct CheckResult: Sendable {
    /// The item, or "run" for budgets.
    public var item: String
    /// `expect[0] transcript.txt wer` or `budget maxFailedItems`.
    public var name: String
    public var passed: Bool
    /// What differed: the metric, the threshold, the value, the file.
    public var message: String
    /// More lines for a failure: the alignment, the list of differences.
    public var detail: String?
    /// Measured values by metric (`wer`, `cer`, `rms`, …), for the JSON summary.
    public var metrics: [String: Double]
    /// For an item that failed: its error category and code, for the JSON summary.
    public var category: String? = nil
    public var code: String? = nil
}

/// What `check` found: every result, the pooled error counts, and the texts for sclite.
public struct CheckOutcome: Sendable {
    public var results: [CheckResult]
    public var words: ErrorCounts
    public var characters: ErrorCounts
    /// Per scored item: its id, reference and hypothesis words (normalised), and timed words.
    public var scored:
        [(
            id: String, reference: [String], hypothesis: [String],
            timed: [(start: Double, end: Double, word: String, confidence: Double?)]
        )]
    /// Goldens written by `--update`: path and what happened ("new", "changed: …", "same").
    public var updates: [(path: String, change: String)]

    public var passed: Bool { results.allSatisfy(\.passed) }
}

/// Checks a suite's expectations against a finished run's outputs.
public struct Checker {
    public let suite: Suite
    public let outputDirectory: URL
    public let items: [CheckedItem]
    /// The run's wall-clock time: the real-time factor is this over the audio's length (items
    /// run at once, so their own times add up to more than the run took).
    public let wallSeconds: Double?
    /// What the recogniser heard in each spoken file (`spokenFiles()`), by path, for
    /// intelligibility expectations.
    public let heard: [String: String]
    /// The keys in use: reference and output texts are redacted before they are scored, so no
    /// key reaches a message, an alignment or sclite's files (not even lowercased); nil: none.
    public let secrets: Secrets?

    public init(
        suite: Suite, outputDirectory: URL, items: [CheckedItem], wallSeconds: Double? = nil,
        heard: [String: String] = [:], secrets: Secrets? = nil
    ) {
        self.suite = suite
        self.outputDirectory = outputDirectory
        self.items = items
        self.wallSeconds = wallSeconds
        self.heard = heard
        self.secrets = secrets
    }

    /// Checks every golden and reference path each item will use (`Suite.checkPath`) before
    /// anything is read or written; throws the first that may not be used.
    public func checkPaths() throws {
        for e in suite.expectations {
            for item in items where item.status != "failed" && fnmatch(e.item, item.name, 0) == 0 {
                switch e.check {
                case .golden(let named, _), .audio(let named, _):
                    _ = try suite.checkedGolden(named, e, item: item.name)
                case .errorRate(.file(let template), _, _):
                    _ = try suite.checkedReference(template, e, item: item.name)
                default:
                    continue
                }
            }
        }
    }

    /// `text` with every key in use redacted.
    func redacted(_ text: String) -> String { secrets?.redact(text) ?? text }

    /// Evaluates everything; with `update`, golden and audio expectations first take the
    /// current outputs as their goldens (and then pass).
    public func evaluate(update: Bool = false) -> CheckOutcome {
        var outcome = CheckOutcome(
            results: [], words: ErrorCounts(), characters: ErrorCounts(), scored: [], updates: [])
        var regexes: [String: Regex<AnyRegexOutput>] = [:]
        for expectation in suite.expectations {
            if case .matches(let pattern) = expectation.check, regexes[pattern] == nil {
                regexes[pattern] = try? Regex(pattern)
            }
            let matching = items.filter { fnmatch(expectation.item, $0.name, 0) == 0 }
            if matching.isEmpty {
                outcome.results.append(
                    CheckResult(
                        item: expectation.item, name: name(expectation), passed: false,
                        message:
                            "no item matches \"\(expectation.item)\" (items: "
                            + "\(items.map(\.name).joined(separator: ", ")))",
                        metrics: [:]))
            }
            var spoken = ErrorCounts()
            for item in matching {
                outcome.results.append(
                    check(
                        expectation, item: item, update: update, regexes: regexes, outcome: &outcome, spoken: &spoken))
            }
            if case .intelligible(let maxWER) = expectation.check, !matching.isEmpty {
                outcome.results.append(pooledIntelligibility(expectation, maxWER: maxWER, counts: spoken))
            }
        }
        outcome.results += budgets(outcome)
        return outcome
    }

    func name(_ e: Suite.Expectation) -> String {
        let kind: String =
            switch e.check {
            case .errorRate: "wer"
            case .golden: "golden"
            case .audio: "audio"
            case .matches: "matches"
            case .intelligible: "intelligible"
            }
        return "expect[\(e.index)] \(e.output) \(kind)"
    }

    func check(
        _ e: Suite.Expectation, item: CheckedItem, update: Bool, regexes: [String: Regex<AnyRegexOutput>],
        outcome: inout CheckOutcome, spoken: inout ErrorCounts
    ) -> CheckResult {
        var result = CheckResult(item: item.name, name: name(e), passed: false, message: "", metrics: [:])
        guard item.status != "failed" else {
            result.message = "the item failed\(item.code.map { " (\($0))" } ?? ""): \(item.failure ?? "unknown reason")"
            result.category = item.category
            result.code = item.code
            return result
        }
        let file = outputDirectory.appendingPathComponent(item.name).appendingPathComponent(e.output)
        let shown = "\(item.name)/\(e.output)"
        guard FileManager.default.fileExists(atPath: file.path) else {
            result.message = "\(shown): no such output (the item's files: \(itemFiles(item).joined(separator: ", ")))"
            return result
        }
        do {
            switch e.check {
            case .errorRate(let reference, let maxWER, let maxCER):
                return try errorRate(
                    e, item: item, file: file, shown: shown, reference: reference, maxWER: maxWER, maxCER: maxCER,
                    result: result, outcome: &outcome)
            case .golden(let named, let rules):
                let golden = try suite.checkedGolden(named, e, item: item.name)
                if update { outcome.updates.append(try store(file, as: golden, rules: rules)) }
                return try goldenFile(file, shown: shown, golden: golden, rules: rules, result: result)
            case .audio(let named, let tolerance):
                let golden = try suite.checkedGolden(named, e, item: item.name)
                if update { outcome.updates.append(try store(file, as: golden, rules: GoldenRules())) }
                return try audio(file, shown: shown, golden: golden, tolerance: tolerance, result: result)
            case .matches(let pattern):
                let text = try outputText(file)
                let regex = try regexes[pattern] ?? Regex(pattern)
                result.passed = text.contains(regex)
                result.message =
                    result.passed
                    ? "\(shown) matches /\(pattern)/"
                    : "\(shown) does not match /\(pattern)/: \(String(text.prefix(120)).debugDescription)"
                return result
            case .intelligible(let maxWER):
                return try intelligibility(file, shown: shown, maxWER: maxWER, result: result, pooled: &spoken)
            }
        } catch {
            result.message = "\(shown): \(describe(error))"
            return result
        }
    }

    func itemFiles(_ item: CheckedItem) -> [String] {
        let folder = outputDirectory.appendingPathComponent(item.name)
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter {
            !$0.hasPrefix(".") && $0 != Ledger.manifestName
        }.sorted()
    }

    /// The text of an output: a whisper-style JSON's `text`, else the file as text.
    func outputText(_ file: URL) throws -> String {
        let data = try Data(contentsOf: file)
        if file.pathExtension.lowercased() == "json",
            let text = (try? JSONValue.parse(data))?.objectValue?["text"]?.stringValue
        {
            return text
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Timed words of a whisper-style JSON output, for ctm.
    func timedWords(_ file: URL) -> [(start: Double, end: Double, word: String, confidence: Double?)] {
        guard file.pathExtension.lowercased() == "json", let data = FileManager.default.contents(atPath: file.path),
            let segments = (try? JSONValue.parse(data))?.objectValue?["segments"]?.arrayValue
        else { return [] }
        return segments.flatMap { segment in
            (segment.objectValue?["words"]?.arrayValue ?? []).compactMap { w -> (Double, Double, String, Double?)? in
                guard let o = w.objectValue, let word = o["word"]?.stringValue, let s = o["start"]?.numberValue,
                    let e = o["end"]?.numberValue
                else { return nil }
                return (s, e, word, o["probability"]?.numberValue)
            }
        }
    }

    func errorRate(
        _ e: Suite.Expectation, item: CheckedItem, file: URL, shown: String, reference: Suite.ReferenceSource,
        maxWER: Double?, maxCER: Double?,
        result: CheckResult, outcome: inout CheckOutcome
    ) throws -> CheckResult {
        var result = result
        // Redacted before scoring: normalisation would lowercase a key past the redaction of
        // what is printed (a reference file may hold anything the suite's author pointed it at).
        let referenceText: String
        switch reference {
        case .text(let text): referenceText = redacted(text)
        case .file(let template):
            let url = try suite.checkedReference(template, e, item: item.name)
            guard let data = try SuitePath.read(url), let text = String(data: data, encoding: .utf8) else {
                throw VoxError(.badInput, "reference \(url.path) is missing or not UTF-8 text")
            }
            referenceText = redacted(text)
        }
        let hypothesis = redacted(try outputText(file))
        let (words, alignment) = Scoring.wordErrors(
            reference: referenceText, hypothesis: hypothesis, normalization: suite.normalization)
        let characters = Scoring.characterErrors(
            reference: referenceText, hypothesis: hypothesis, normalization: suite.normalization)
        outcome.words = outcome.words + words
        outcome.characters = outcome.characters + characters
        outcome.scored.append(
            (
                id: item.name, reference: suite.normalization.words(referenceText),
                hypothesis: suite.normalization.words(hypothesis), timed: timedWords(file)
            ))
        result.metrics = [
            "wer": words.rate, "cer": characters.rate, "substitutions": Double(words.substitutions),
            "deletions": Double(words.deletions), "insertions": Double(words.insertions),
            "referenceWords": Double(words.referenceCount),
        ]
        var failures: [String] = []
        var parts: [String] = []
        if let maxWER {
            parts.append(String(format: "WER %.2f%% (max %.2f%%)", words.rate * 100, maxWER * 100))
            if words.rate > maxWER + 1e-12 {
                failures.append(String(format: "WER %.2f%% > %.2f%%", words.rate * 100, maxWER * 100))
            }
        }
        if let maxCER {
            parts.append(String(format: "CER %.2f%% (max %.2f%%)", characters.rate * 100, maxCER * 100))
            if characters.rate > maxCER + 1e-12 {
                failures.append(String(format: "CER %.2f%% > %.2f%%", characters.rate * 100, maxCER * 100))
            }
        }
        let counts = "S=\(words.substitutions) D=\(words.deletions) I=\(words.insertions) N=\(words.referenceCount)"
        result.passed = failures.isEmpty
        result.message =
            result.passed
            ? "\(shown): \(parts.joined(separator: ", ")) \(counts)"
            : "\(shown): \(failures.joined(separator: ", ")) \(counts)"
        if !result.passed { result.detail = Scoring.alignmentText(alignment) }
        return result
    }

    func goldenFile(
        _ file: URL, shown: String, golden: URL, rules: GoldenRules, result: CheckResult
    ) throws -> CheckResult {
        var result = result
        guard let expected = try SuitePath.read(golden) else {
            result.message = "\(shown): no golden at \(golden.path) (run check --update to write it)"
            return result
        }
        let actual = try Data(contentsOf: file)
        if file.pathExtension.lowercased() == "json", let a = try? JSONValue.parse(actual),
            let g = try? JSONValue.parse(expected)
        {
            let differences = JSONGolden.differences(actual: a, golden: g, rules: rules)
            result.passed = differences.isEmpty
            result.metrics = ["differences": Double(differences.count)]
            result.message =
                result.passed
                ? "\(shown) matches its golden"
                : "\(shown) differs from \(golden.lastPathComponent) at \(differences.count) "
                    + "place\(differences.count == 1 ? "" : "s"): \(differences[0])"
            if differences.count > 1 { result.detail = differences.joined(separator: "\n") }
            return result
        }
        result.passed = actual == expected
        if result.passed {
            result.message = "\(shown) matches its golden"
        } else {
            let a = String(decoding: actual, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            let g = String(decoding: expected, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            let line = zip(a, g).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, g.count)
            let now = line < a.count ? String(a[line]).debugDescription : "end of file"
            let was = line < g.count ? String(g[line]).debugDescription : "end of file"
            result.message = "\(shown) differs from its golden at line \(line + 1): \(now), the golden has \(was)"
        }
        return result
    }

    func audio(
        _ file: URL, shown: String, golden: URL, tolerance: AudioTolerance, result: CheckResult
    ) throws -> CheckResult {
        var result = result
        guard FileManager.default.fileExists(atPath: golden.path) else {
            result.message = "\(shown): no golden at \(golden.path) (run check --update to write it)"
            return result
        }
        let measurements = AudioGolden.measure(
            actual: try AudioFileContents.read(file), golden: try AudioFileContents.read(golden), tolerance: tolerance)
        result.metrics = Dictionary(
            uniqueKeysWithValues: measurements.map {
                ($0.metric, $0.value.isFinite ? $0.value : ($0.value > 0 ? 999 : -999))
            })
        let failed = measurements.filter { !$0.passed }
        result.passed = failed.isEmpty
        result.message =
            "\(shown): "
            + (result.passed
                ? measurements.map(\.message).joined(separator: "; ") : failed.map(\.message).joined(separator: "; "))
        return result
    }

    /// `--update`: the output becomes the golden; says what changed.
    func store(
        _ file: URL, as golden: URL, rules: GoldenRules
    ) throws -> (path: String, change: String) {
        let actual = try Data(contentsOf: file)
        let change: String
        if let old = try SuitePath.read(golden) {
            if old == actual {
                change = "same"
            } else if let a = try? JSONValue.parse(actual), let g = try? JSONValue.parse(old) {
                let differences = JSONGolden.differences(actual: a, golden: g, rules: rules)
                change =
                    differences.isEmpty
                    ? "changed outside ignored fields and tolerances only"
                    : "changed at \(differences.count) place(s): \(differences.prefix(3).joined(separator: "; "))"
            } else {
                change = "changed (\(old.count) → \(actual.count) bytes)"
            }
        } else {
            change = "new"
        }
        if change != "same" {
            try FileManager.default.createDirectory(
                at: golden.deletingLastPathComponent(), withIntermediateDirectories: true)
            try AtomicFile.write(actual, to: golden)
        }
        return (golden.path, change)
    }

    /// The run-level budgets.
    func budgets(_ outcome: CheckOutcome) -> [CheckResult] {
        var out: [CheckResult] = []
        let failed = items.filter { $0.status == "failed" }
        let maxFailed = suite.budgets.maxFailedItems
        out.append(
            CheckResult(
                item: "run", name: "budget maxFailedItems", passed: failed.count <= maxFailed,
                message: "\(failed.count) item\(failed.count == 1 ? "" : "s") failed (max \(maxFailed))"
                    + (failed.isEmpty
                        ? "" : ": " + failed.map { "\($0.name): \($0.failure ?? "")" }.joined(separator: "; ")),
                metrics: ["failedItems": Double(failed.count)]))
        if let max = suite.budgets.maxRealTimeFactor {
            let done = items.filter { $0.status == "done" && ($0.audioSeconds ?? 0) > 0 }
            let audio = done.reduce(0) { $0 + ($1.audioSeconds ?? 0) }
            let seconds = wallSeconds ?? done.reduce(0) { $0 + $1.seconds }
            let rtf = audio > 0 ? seconds / audio : 0
            out.append(
                CheckResult(
                    item: "run", name: "budget maxRealTimeFactor", passed: rtf <= max,
                    message: String(
                        format: "real-time factor %.3f over %d items (%.1f s for %.1f s of audio; max %.3f)", rtf,
                        done.count, seconds, audio, max),
                    metrics: ["realTimeFactor": rtf]))
        }
        // Pooled error rates: every scored item's counts together.
        for (metric, counts, max) in [
            ("WER", outcome.words, suite.budgets.maxWER), ("CER", outcome.characters, suite.budgets.maxCER),
        ] {
            guard let max else { continue }
            let unit = metric == "WER" ? "words" : "characters"
            out.append(
                CheckResult(
                    item: "run", name: "budget max\(metric)", passed: counts.rate <= max + 1e-12,
                    message: String(
                        format: "overall \(metric) %.2f%% over %d reference \(unit) (max %.2f%%)",
                        counts.rate * 100, counts.referenceCount, max * 100),
                    metrics: [metric.lowercased(): counts.rate]))
        }
        return out
    }
}
