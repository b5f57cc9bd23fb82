import Foundation
import VoxCore

/// A check suite (`voxpipe check SUITE.json`): a spec, its inputs, and expectations on the
/// outputs, per item or by glob. Paths are relative to the suite's folder; goldens live in
/// `goldens/<item>/<output>` beside it unless an expectation names its own.
///
///     { "spec": "../lesson-tutor.json", "inputs": ["../../Samples"],
///       "normalization": { "caseFold": true, "removePunctuation": true },
///       "budgets": { "maxFailedItems": 0, "maxRealTimeFactor": 1.5, "maxWER": 0.2 },
///       "expect": [
///         { "item": "speech-en-*", "output": "transcript.txt", "reference": "refs/{item}.txt", "wer": 0.15, "cer": 0.1
/// },
///         { "item": "lesson", "output": "replies.json", "golden": true, "ignore": ["turns[*].audio"],
///           "tolerance": { "turns[*].start": 0.01 }, "text": { "turns[*].transcription": { "maxWER": 0.2 } } },
///         { "item": "lesson", "output": "speech-0001.wav", "golden": true, "audio": { "rmsDB": 0.5, "snrDB": 30 } },
///         { "item": "*", "output": "transcript.txt", "matches": "(?i)guten" } ] }
public struct Suite: Sendable {
    /// What one expectation checks.
    public enum Check: Sendable {
        /// Word (and character) error rate of the output's text against a reference.
        case errorRate(reference: ReferenceSource, maxWER: Double?, maxCER: Double?)
        /// The output equals its golden: JSON with ignored fields, tolerances and text fields within a
        /// word error rate; other text exactly.
        case golden(file: String?, rules: GoldenRules)
        /// An audio output against its golden WAV, within tolerances.
        case audio(file: String?, tolerance: AudioTolerance)
        /// The output's text matches a regular expression.
        case matches(String)
        /// Spoken output is intelligible: each turn of a write-replies JSON, its audio file heard
        /// by the suite's recogniser, within a word error rate of the reply it was meant to say.
        case intelligible(maxWER: Double)
    }

    /// Where a reference text comes from.
    public enum ReferenceSource: Sendable, Equatable {
        case text(String)
        /// A path template (`{item}` is the item's output name), relative to the suite.
        case file(String)
    }

    /// One expectation: items matching a glob, the output file in each item's folder, the check.
    public struct Expectation: Sendable {
        public var index: Int
        public var item: String
        public var output: String
        public var check: Check
    }

    /// Run-level limits.
    public struct Budgets: Sendable, Equatable {
        public var maxFailedItems: Int = 0
        public var maxRealTimeFactor: Double?
        /// Overall (pooled) word and character error rate over every error-rate expectation.
        public var maxWER: Double?
        public var maxCER: Double?
    }

    public var url: URL
    public var spec: URL
    public var inputs: [URL]
    public var normalization: TextNormalization
    public var budgets: Budgets
    public var expectations: [Expectation]
    /// Whether goldens and references may lie outside the suite's folder (`check
    /// --allow-outside`); devices, FIFOs and /proc, /sys and /dev files are refused even then.
    public var allowOutside = false

    /// The suite's folder: paths in it resolve against this.
    public var folder: URL { url.deletingLastPathComponent() }

    /// Where an expectation's golden lives: the path it names, else `goldens/<item>/<output>`.
    public func goldenURL(_ named: String?, item: String, output: String) -> URL {
        if let named {
            return URL(fileURLWithPath: named.replacingOccurrences(of: "{item}", with: item), relativeTo: folder)
                .standardizedFileURL
        }
        return folder.appendingPathComponent("goldens").appendingPathComponent(item).appendingPathComponent(output)
    }

    /// Loads and checks a suite; a problem is `VoxError(.invalidSpec)` naming the JSON path, or
    /// the expectation, its item and the reason for a golden or reference path that may not be
    /// used (`checkPath`; paths with `{item}` are checked per item by `Checker.checkPaths`).
    public static func load(_ url: URL, allowOutside: Bool = false) throws -> Suite {
        func fail(_ path: String, _ message: String) -> VoxError {
            VoxError(.invalidSpec, "\(url.path): \(path): \(message)")
        }
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw VoxError(.noInput, "\(url.path): no such suite file")
        }
        let root: [String: JSONValue]
        do {
            guard let object = try JSONValue.parse(data).objectValue else {
                throw fail("$", "a suite is a JSON object")
            }
            root = object
        } catch let error as VoxError {
            throw error
        } catch {
            throw VoxError(.invalidSpec, "\(url.path): not valid JSON: \(describe(error))")
        }
        let folder = url.deletingLastPathComponent()
        let known: Set<String> = [
            "$schema", "description", "name", "spec", "inputs", "normalization", "budgets", "expect",
        ]
        if let unknown = root.keys.sorted().first(where: { !known.contains($0) }) {
            throw fail(unknown, "unknown field (known: spec, inputs, normalization, budgets, expect)")
        }
        guard let spec = root["spec"]?.stringValue else { throw fail("spec", "expected the path of a job spec") }
        guard let inputs = root["inputs"]?.arrayValue, !inputs.isEmpty else {
            throw fail("inputs", "expected a list of input files or folders")
        }
        var inputURLs: [URL] = []
        for (i, input) in inputs.enumerated() {
            guard let path = input.stringValue else {
                throw fail("inputs[\(i)]", "expected a path, got \(input.typeDescription)")
            }
            inputURLs.append(URL(fileURLWithPath: path, relativeTo: folder).standardizedFileURL)
        }

        var normalization = TextNormalization.standard
        if let n = root["normalization"] {
            guard let o = n.objectValue else { throw fail("normalization", "expected an object") }
            for (key, value) in o {
                guard let flag = value.boolValue else { throw fail("normalization.\(key)", "expected true or false") }
                switch key {
                case "caseFold": normalization.caseFold = flag
                case "removePunctuation": normalization.removePunctuation = flag
                default: throw fail("normalization.\(key)", "unknown field (known: caseFold, removePunctuation)")
                }
            }
        }

        var budgets = Budgets()
        if let b = root["budgets"] {
            guard let o = b.objectValue else { throw fail("budgets", "expected an object") }
            for (key, value) in o {
                guard let number = value.numberValue, number >= 0 else {
                    throw fail("budgets.\(key)", "expected a number ≥ 0")
                }
                switch key {
                case "maxFailedItems":
                    guard number == number.rounded() else { throw fail("budgets.\(key)", "expected a whole number") }
                    budgets.maxFailedItems = Int(number)
                case "maxRealTimeFactor": budgets.maxRealTimeFactor = number
                case "maxWER": budgets.maxWER = number
                case "maxCER": budgets.maxCER = number
                default:
                    throw fail(
                        "budgets.\(key)", "unknown field (known: maxFailedItems, maxRealTimeFactor, maxWER, maxCER)")
                }
            }
        }

        guard let list = root["expect"]?.arrayValue else { throw fail("expect", "expected a list of expectations") }
        var expectations: [Expectation] = []
        for (i, value) in list.enumerated() {
            expectations.append(try expectation(value, index: i, normalization: normalization, fail: fail))
        }
        let suite = Suite(
            url: url.standardizedFileURL, spec: URL(fileURLWithPath: spec, relativeTo: folder).standardizedFileURL,
            inputs: inputURLs,
            normalization: normalization, budgets: budgets, expectations: expectations, allowOutside: allowOutside)
        try suite.checkFixedPaths()
        return suite
    }

    static func expectation(
        _ value: JSONValue, index i: Int, normalization: TextNormalization, fail: (String, String) -> VoxError
    ) throws -> Expectation {
        let at = "expect[\(i)]"
        guard let o = value.objectValue else { throw fail(at, "expected an object") }
        let known: Set<String> = [
            "item", "output", "reference", "referenceText", "wer", "cer", "golden", "ignore", "tolerance", "text",
            "audio",
            "matches", "intelligible", "description",
        ]
        if let unknown = o.keys.sorted().first(where: { !known.contains($0) }) {
            throw fail("\(at).\(unknown)", "unknown field")
        }
        guard let item = o["item"]?.stringValue, !item.isEmpty else {
            throw fail("\(at).item", "expected an item name or glob")
        }
        guard let output = o["output"]?.stringValue, !output.isEmpty, !output.contains("..") else {
            throw fail("\(at).output", "expected an output file name in the item's folder")
        }
        func number(_ key: String) throws -> Double? {
            guard let v = o[key] else { return nil }
            guard let n = v.numberValue, n >= 0 else {
                throw fail("\(at).\(key)", "expected a number ≥ 0, got \(v.typeDescription)")
            }
            return n
        }
        func goldenFile() throws -> String? {
            switch o["golden"] {
            case .bool(true)?: return nil
            case .string(let path)?: return path
            case nil: return nil
            case let v?: throw fail("\(at).golden", "expected true or a path, got \(v.typeDescription)")
            }
        }
        let kinds = [
            o["wer"] != nil || o["cer"] != nil, o["audio"] != nil, o["matches"] != nil,
            o["golden"] != nil && o["audio"] == nil, o["intelligible"] != nil,
        ]
        guard kinds.filter({ $0 }).count == 1 else {
            throw fail(
                at,
                "expected exactly one check: wer/cer (with a reference), golden, audio (with golden), matches, or "
                    + "intelligible")
        }
        let check: Check
        if o["intelligible"] != nil {
            guard let maxWER = try number("intelligible") else { throw fail("\(at).intelligible", "expected a WER") }
            check = .intelligible(maxWER: maxWER)
        } else if o["wer"] != nil || o["cer"] != nil {
            let reference: ReferenceSource
            if let text = o["referenceText"]?.stringValue {
                reference = .text(text)
            } else if let file = o["reference"]?.stringValue {
                reference = .file(file)
            } else {
                throw fail(
                    "\(at).reference",
                    "a wer/cer check needs a reference file (\"reference\", {item} allowed) or \"referenceText\"")
            }
            check = .errorRate(reference: reference, maxWER: try number("wer"), maxCER: try number("cer"))
        } else if let audio = o["audio"] {
            guard let a = audio.objectValue else { throw fail("\(at).audio", "expected an object of tolerances") }
            var tolerance = AudioTolerance()
            for (key, value) in a {
                guard let n = value.numberValue else {
                    throw fail("\(at).audio.\(key)", "expected a number, got \(value.typeDescription)")
                }
                switch key {
                case "durationSamples":
                    guard n >= 0, n == n.rounded() else {
                        throw fail("\(at).audio.\(key)", "expected a whole number ≥ 0")
                    }
                    tolerance.durationSamples = Int(n)
                case "rmsDB": tolerance.rmsDB = n
                case "snrDB": tolerance.snrDB = n
                default: throw fail("\(at).audio.\(key)", "unknown tolerance (known: durationSamples, rmsDB, snrDB)")
                }
            }
            check = .audio(file: try goldenFile(), tolerance: tolerance)
        } else if let pattern = o["matches"]?.stringValue {
            do { _ = try Regex(pattern) } catch {
                throw fail("\(at).matches", "invalid regular expression: \(describe(error))")
            }
            check = .matches(pattern)
        } else {
            var ignore: [String] = []
            if let list = o["ignore"] {
                guard let array = list.arrayValue, let paths = Optional(array.compactMap(\.stringValue)),
                    paths.count == array.count
                else {
                    throw fail("\(at).ignore", "expected a list of field paths (\"turns[*].audio\")")
                }
                ignore = paths
            }
            var tolerances: [String: Double] = [:]
            if let t = o["tolerance"] {
                guard let map = t.objectValue else {
                    throw fail("\(at).tolerance", "expected an object: field path → allowed difference")
                }
                for (path, value) in map {
                    guard let n = value.numberValue, n >= 0 else {
                        throw fail("\(at).tolerance.\(path)", "expected a number ≥ 0")
                    }
                    tolerances[path] = n
                }
            }
            var maxWER: [String: Double] = [:]
            if let t = o["text"] {
                guard let map = t.objectValue else {
                    throw fail("\(at).text", "expected an object: field path → {\"maxWER\": rate}")
                }
                for (path, value) in map {
                    guard let rule = value.objectValue, Set(rule.keys) == ["maxWER"],
                        let n = rule["maxWER"]?.numberValue, n >= 0
                    else {
                        throw fail("\(at).text.\(path)", "expected {\"maxWER\": a number ≥ 0}")
                    }
                    maxWER[path] = n
                }
            }
            check = .golden(
                file: try goldenFile(),
                rules: GoldenRules(ignore: ignore, tolerances: tolerances, maxWER: maxWER, normalization: normalization)
            )
        }
        return Expectation(index: i, item: item, output: output, check: check)
    }
}
