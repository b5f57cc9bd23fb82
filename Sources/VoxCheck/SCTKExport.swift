import Foundation

/// Files for NIST's SCTK scoring tools (sclite), so a run's scores can be checked independently:
/// `sclite -r ref.trn trn -h hyp.trn trn -i spu_id -e utf-8`.
public enum SCTKExport {
    /// sclite `trn`: one line per utterance, "words… (id)", in the order given, each line ending
    /// in a newline; an utterance without words is "(id)". Ids are sanitised: whitespace and
    /// parentheses become "_", and an empty id is "_". Words are written as given and should hold
    /// no whitespace (as `TextNormalization.words` gives); sclite reads a word in parentheses as
    /// optionally deletable, so keep punctuation removal on when scoring with it.
    public static func trn(_ utterances: [(id: String, words: [String])]) -> String {
        var text = ""
        for utterance in utterances {
            text += (utterance.words + ["(\(sanitizedID(utterance.id)))"]).joined(separator: " ") + "\n"
        }
        return text
    }

    /// NIST `ctm`: "<id> 1 <start> <duration> <word> [<confidence>]" per word, each line ending
    /// in a newline, times in seconds with 3 decimals (the duration is end − start, at least 0),
    /// the confidence with 3 decimals when given, sorted by id (byte order) then start, words with
    /// equal id and start staying in the order given. Ids are sanitised as in `trn`.
    public static func ctm(
        _ words: [(id: String, start: Double, end: Double, word: String, confidence: Double?)]
    ) -> String {
        let lines = words.enumerated().map { index, word in
            (index: index, id: sanitizedID(word.id), word: word)
        }.sorted { a, b in
            if a.id != b.id { return a.id.utf8.lexicographicallyPrecedes(b.id.utf8) }
            if a.word.start != b.word.start { return a.word.start < b.word.start }
            return a.index < b.index
        }
        var text = ""
        for line in lines {
            var fields = [
                line.id, "1", decimal(line.word.start), decimal(max(0, line.word.end - line.word.start)),
                line.word.word,
            ]
            if let confidence = line.word.confidence { fields.append(decimal(confidence)) }
            text += fields.joined(separator: " ") + "\n"
        }
        return text
    }

    /// `id` with whitespace and parentheses replaced by "_"; "_" when empty.
    static func sanitizedID(_ id: String) -> String {
        let cleaned = String(id.map { $0.isWhitespace || $0 == "(" || $0 == ")" ? "_" : $0 })
        return cleaned.isEmpty ? "_" : cleaned
    }

    /// A number with three decimals and a full stop, whatever the locale.
    private static func decimal(_ value: Double) -> String {
        String(format: "%.3f", value)
    }
}
