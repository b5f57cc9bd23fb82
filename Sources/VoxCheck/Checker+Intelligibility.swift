import Foundation
import VoxCore

/// Intelligibility: spoken output heard back by a recogniser and scored against what it was
/// meant to say, a check that needs no golden.
extension Checker {
    /// The spoken turns of a write-replies JSON: each turn's audio file (in the same folder) and
    /// its reply text. Turns without audio are left out.
    public static func spokenTurns(_ replies: URL) throws -> [(audio: URL, said: String)] {
        guard let data = FileManager.default.contents(atPath: replies.path),
            let turns = (try? JSONValue.parse(data))?.objectValue?["turns"]?.arrayValue
        else {
            throw VoxError(.badInput, "not a write-replies JSON (no \"turns\")")
        }
        return turns.compactMap { turn in
            guard let o = turn.objectValue, let file = o["audioFile"]?.stringValue, let said = o["reply"]?.stringValue
            else { return nil }
            return (replies.deletingLastPathComponent().appendingPathComponent(file), said)
        }
    }

    /// The audio files every intelligibility expectation will score, for the caller to transcribe
    /// before `evaluate` (`heard`).
    public func spokenFiles() -> [URL] {
        suite.expectations.flatMap { e -> [URL] in
            guard case .intelligible = e.check else { return [] }
            return items.filter { $0.status != "failed" && fnmatch(e.item, $0.name, 0) == 0 }.flatMap { item in
                let file = outputDirectory.appendingPathComponent(item.name).appendingPathComponent(e.output)
                return ((try? Self.spokenTurns(file)) ?? []).map(\.audio)
            }
        }
    }

    /// One item's turns, each heard (`heard[path]`) and scored against its reply; the item passes
    /// when all its turns together are within `maxWER`.
    func intelligibility(
        _ file: URL, shown: String, maxWER: Double, result: CheckResult, pooled: inout ErrorCounts
    ) throws -> CheckResult {
        var result = result
        let turns = try Self.spokenTurns(file)
        guard !turns.isEmpty else {
            result.message = "\(shown): no turn has spoken audio"
            return result
        }
        var counts = ErrorCounts()
        var lines: [String] = []
        for turn in turns {
            guard let hypothesis = heard[turn.audio.path] else {
                result.message = "\(shown): \(turn.audio.lastPathComponent) was not heard (no recogniser output)"
                return result
            }
            let (words, _) = Scoring.wordErrors(
                reference: turn.said, hypothesis: hypothesis, normalization: suite.normalization)
            counts = counts + words
            lines.append(
                String(
                    format: "%@: WER %.1f%%, said %@, heard %@", turn.audio.lastPathComponent, words.rate * 100,
                    turn.said.debugDescription, hypothesis.debugDescription))
        }
        pooled = pooled + counts
        result.metrics = ["wer": counts.rate, "referenceWords": Double(counts.referenceCount)]
        result.passed = counts.rate <= maxWER + 1e-12
        result.message = String(
            format: "%@: %d spoken turn%@ heard back with WER %.2f%% (max %.2f%%)", shown, turns.count,
            turns.count == 1 ? "" : "s", counts.rate * 100, maxWER * 100)
        if !result.passed { result.detail = lines.joined(separator: "\n") }
        return result
    }

    /// One result over every item an intelligibility expectation scored.
    func pooledIntelligibility(_ e: Suite.Expectation, maxWER: Double, counts: ErrorCounts) -> CheckResult {
        CheckResult(
            item: "run", name: "\(name(e)) pooled", passed: counts.referenceCount > 0 && counts.rate <= maxWER + 1e-12,
            message: String(
                format: "spoken output heard back with WER %.2f%% over %d reference words (max %.2f%%)",
                counts.rate * 100, counts.referenceCount, maxWER * 100),
            metrics: ["wer": counts.rate])
    }
}
