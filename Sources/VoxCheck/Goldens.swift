import Foundation
import VoxCore

/// What a JSON golden lets differ: fields to ignore, numeric tolerances, and text fields compared
/// by word error rate instead of exactly, each keyed by a path pattern (`turns[*].start`).
public struct GoldenRules: Sendable, Equatable {
    /// Fields left out of the comparison.
    public var ignore: [String]
    /// Numbers that may differ by up to this much.
    public var tolerances: [String: Double]
    /// Strings compared by word error rate against the golden's string (normalised as the suite
    /// says): a recogniser's words may change within the rate, a missing field still fails.
    public var maxWER: [String: Double]
    /// How text is normalised before `maxWER` is measured.
    public var normalization: TextNormalization

    public init(
        ignore: [String] = [], tolerances: [String: Double] = [:], maxWER: [String: Double] = [:],
        normalization: TextNormalization = .standard
    ) {
        self.ignore = ignore
        self.tolerances = tolerances
        self.maxWER = maxWER
        self.normalization = normalization
    }
}

/// JSON outputs against their goldens: every difference named by its path (`turns[1].reply`),
/// with fields to ignore, numeric tolerances and text fields compared by word error rate given
/// as path patterns, where `[*]` stands for any index and `*` for any key (`turns[*].start`, `*.seconds`).
public enum JSONGolden {
    /// The differences, in document order; empty when the output matches.
    public static func differences(
        actual: JSONValue, golden: JSONValue, ignore: [String] = [], tolerances: [String: Double] = [:]
    ) -> [String] {
        differences(actual: actual, golden: golden, rules: GoldenRules(ignore: ignore, tolerances: tolerances))
    }

    /// The differences under `rules`, in document order; empty when the output matches.
    public static func differences(actual: JSONValue, golden: JSONValue, rules: GoldenRules) -> [String] {
        var out: [String] = []
        let compiled = Compiled(
            ignore: rules.ignore.map(pattern), tolerances: rules.tolerances.map { (pattern($0.key), $0.value) },
            maxWER: rules.maxWER.map { (pattern($0.key), $0.value) }, normalization: rules.normalization)
        compare(actual, golden, path: [], rules: compiled, into: &out)
        return out
    }

    /// The rules with their patterns split into parts.
    struct Compiled {
        var ignore: [[String]]
        var tolerances: [([String], Double)]
        var maxWER: [([String], Double)]
        var normalization: TextNormalization
    }

    /// A path as written: `a.b[2].c`; the root is `$`.
    static func render(_ path: [String]) -> String {
        guard !path.isEmpty else { return "$" }
        var text = ""
        for part in path {
            if part.hasPrefix("[") { text += part } else { text += text.isEmpty ? part : "." + part }
        }
        return text
    }

    /// A pattern's parts: keys, `[n]`, `[*]` or `*`.
    static func pattern(_ text: String) -> [String] {
        var parts: [String] = []
        var current = ""
        for ch in text {
            switch ch {
            case ".":
                if !current.isEmpty { parts.append(current) }
                current = ""
            case "[":
                if !current.isEmpty { parts.append(current) }
                current = "["
            case "]":
                parts.append(current + "]")
                current = ""
            default:
                current.append(ch)
            }
        }
        if !current.isEmpty { parts.append(current) }
        return parts
    }

    static func matches(_ pattern: [String], _ path: [String]) -> Bool {
        guard pattern.count == path.count else { return false }
        return zip(pattern, path).allSatisfy { p, part in
            p == part || (p == "[*]" && part.hasPrefix("[")) || (p == "*" && !part.hasPrefix("["))
        }
    }

    static func show(_ value: JSONValue) -> String {
        let text = String(decoding: value.canonicalData(), as: UTF8.self)
        return text.count > 80 ? String(text.prefix(77)) + "..." : text
    }

    static func compare(
        _ actual: JSONValue?, _ golden: JSONValue?, path: [String], rules: Compiled, into out: inout [String]
    ) {
        if rules.ignore.contains(where: { matches($0, path) }) { return }
        let at = render(path)
        switch (actual, golden) {
        case (nil, nil):
            return
        case (nil, let g?):
            out.append("\(at): missing (the golden has \(show(g)))")
        case (let a?, nil):
            out.append("\(at): not in the golden (now \(show(a)))")
        case (.object(let a)?, .object(let g)?):
            for key in Set(a.keys).union(g.keys).sorted() {
                compare(a[key], g[key], path: path + [key], rules: rules, into: &out)
            }
        case (.array(let a)?, .array(let g)?):
            for i in 0..<max(a.count, g.count) {
                compare(
                    i < a.count ? a[i] : nil, i < g.count ? g[i] : nil, path: path + ["[\(i)]"], rules: rules,
                    into: &out)
            }
        case (.number(let a)?, .number(let g)?):
            let allowed = rules.tolerances.first { matches($0.0, path) }?.1 ?? 0
            if abs(a - g) > allowed + 1e-12 {
                out.append(
                    "\(at): \(show(.number(a))) but the golden has \(show(.number(g)))"
                        + (allowed > 0 ? " (tolerance ±\(show(.number(allowed))))" : ""))
            }
        case (.string(let a)?, .string(let g)?) where a != g:
            if let maxWER = rules.maxWER.first(where: { matches($0.0, path) })?.1 {
                let rate = Scoring.wordErrors(reference: g, hypothesis: a, normalization: rules.normalization)
                    .counts.rate
                if rate > maxWER + 1e-12 {
                    out.append(
                        "\(at): \(show(.string(a))) but the golden has \(show(.string(g))) (WER "
                            + String(format: "%.3f > %.3f", rate, maxWER) + ")")
                }
            } else {
                out.append("\(at): \(show(.string(a))) but the golden has \(show(.string(g)))")
            }
        case (let a?, let g?):
            if a != g { out.append("\(at): \(show(a)) but the golden has \(show(g))") }
        }
    }
}

/// How far an audio output may be from its golden.
public struct AudioTolerance: Sendable, Equatable {
    /// Frames the lengths may differ by (default 0).
    public var durationSamples: Int = 0
    /// dB the RMS levels may differ by (default 0.1).
    public var rmsDB: Double = 0.1
    /// The least signal-to-noise ratio of the golden against the difference, in dB; nil: not checked.
    public var snrDB: Double?

    public init(durationSamples: Int = 0, rmsDB: Double = 0.1, snrDB: Double? = nil) {
        self.durationSamples = durationSamples
        self.rmsDB = rmsDB
        self.snrDB = snrDB
    }
}

/// One measured comparison of an audio output with its golden.
public struct AudioMeasurement: Sendable, Equatable {
    public var metric: String
    public var value: Double
    public var threshold: Double
    public var passed: Bool
    /// `rms difference 1.02 dB > 0.50 dB`.
    public var message: String
}

/// Audio outputs against golden audio: length, RMS level, and the SNR of the difference.
public enum AudioGolden {
    /// RMS level in dBFS of interleaved samples (−infinity for silence).
    public static func rmsDB(_ samples: [Float]) -> Double {
        guard !samples.isEmpty else { return -.infinity }
        let power = samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)
        return 10 * log10(power)
    }

    /// Compares two decoded files. Formats must match (rate and channels); then every metric is measured.
    public static func measure(
        actual: (format: AudioFormat, samples: [Float]), golden: (format: AudioFormat, samples: [Float]),
        tolerance: AudioTolerance
    ) -> [AudioMeasurement] {
        guard actual.format == golden.format else {
            return [
                AudioMeasurement(
                    metric: "format", value: 0, threshold: 0, passed: false,
                    message: "format \(actual.format) but the golden is \(golden.format)")
            ]
        }
        var out: [AudioMeasurement] = []
        let channels = max(1, actual.format.channels)
        let framesA = actual.samples.count / channels, framesG = golden.samples.count / channels
        let lengthDiff = Double(abs(framesA - framesG))
        out.append(
            AudioMeasurement(
                metric: "duration", value: lengthDiff, threshold: Double(tolerance.durationSamples),
                passed: lengthDiff <= Double(tolerance.durationSamples),
                message:
                    "length \(framesA) frames, golden \(framesG): differs by \(Int(lengthDiff)) (allowed "
                    + "\(tolerance.durationSamples))"
            ))
        let levelA = rmsDB(actual.samples), levelG = rmsDB(golden.samples)
        let levelDiff = levelA == levelG ? 0 : abs(levelA - levelG)
        out.append(
            AudioMeasurement(
                metric: "rms", value: levelDiff, threshold: tolerance.rmsDB,
                passed: levelDiff <= tolerance.rmsDB + 1e-9,
                message: String(
                    format: "RMS %.2f dBFS, golden %.2f dBFS: differs by %.2f dB (allowed %.2f dB)", levelA, levelG,
                    levelDiff, tolerance.rmsDB)))
        if let minimum = tolerance.snrDB {
            let n = min(actual.samples.count, golden.samples.count)
            var signal = 0.0, noise = 0.0
            for i in 0..<n {
                let g = Double(golden.samples[i])
                signal += g * g
                let d = Double(actual.samples[i]) - g
                noise += d * d
            }
            let snr = noise == 0 ? Double.infinity : (signal == 0 ? -Double.infinity : 10 * log10(signal / noise))
            out.append(
                AudioMeasurement(
                    metric: "snr", value: snr, threshold: minimum, passed: snr >= minimum,
                    message: String(format: "SNR of the difference %.1f dB (at least %.1f dB)", snr, minimum)))
        }
        return out
    }
}
