import Foundation

/// Text cut for speech engines, the one cut every voice uses: sentences first (`.` `!` `?` and
/// line breaks); then a phrase longer than the engine's bound is cut at its best break before the
/// bound (`bounded`), so no engine is ever handed a phrase it cannot speak in flat memory, however
/// long an unpunctuated text is. The same text always gives the same pieces, and a phrase within
/// the bound is only trimmed, so ordinary replies speak exactly as they did.
///
///     text ─▶ sentences ─▶ bounded(each, max) ─▶ pieces (each 1…max characters)
public enum TextPieces {
    /// Punctuation after which a phrase may be cut when a space follows it: the clause marks that
    /// speech pauses at.
    public static let clauseMarks: Set<Character> = [",", ";", ":", "–", "—"]

    /// Whole sentences packed into pieces of at most `maxCharacters` (joined by a space); a
    /// sentence longer than that comes in parts (`bounded`). For engines that run once per piece.
    public static func split(_ text: String, maxCharacters: Int) -> [String] {
        var packed: [String] = []
        for sentence in sentences(text, maxCharacters: maxCharacters) {
            if let last = packed.last, last.count + 1 + sentence.count <= maxCharacters {
                packed[packed.count - 1] = last + " " + sentence
            } else {
                packed.append(sentence)
            }
        }
        return packed
    }

    /// Sentences (and parts of over-long ones, each at most `maxCharacters`), trimmed, without
    /// empty ones.
    public static func sentences(_ text: String, maxCharacters: Int) -> [String] {
        var sentences: [String] = []
        var current = ""
        for ch in text {
            current.append(ch)
            if ".!?\n".contains(ch) {
                sentences.append(current)
                current = ""
            }
        }
        sentences.append(current)
        return sentences.flatMap { bounded($0, maxCharacters: maxCharacters) }
    }

    /// `phrase`, trimmed, in pieces of at most `maxCharacters` (at least 1) characters, none
    /// empty; one piece when it fits. A longer phrase is cut at the best break within the bound,
    /// the whitespace at a cut dropped:
    /// 1. after the last clause mark (`, ; : – —`) followed by whitespace, when that keeps at
    ///    least half the bound (a mark near the start would only leave the rest as long);
    /// 2. else at the last whitespace (between words);
    /// 3. else hard at the bound, between two characters (a "word" without spaces; a character
    ///    with its combining marks, such as a decomposed umlaut, stays whole).
    public static func bounded(_ phrase: some StringProtocol, maxCharacters: Int) -> [String] {
        let limit = max(1, maxCharacters)
        let trimmed = phrase.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.count > limit else { return trimmed.isEmpty ? [] : [trimmed] }
        let chars = Array(trimmed)
        var pieces: [String] = []
        var start = 0
        while chars.count - start > limit {
            let end = start + breakLength(chars, from: start, limit: limit)
            var last = end
            while last > start, chars[last - 1].isWhitespace { last -= 1 }
            if last > start { pieces.append(String(chars[start..<last])) }
            start = end
            while start < chars.count, chars[start].isWhitespace { start += 1 }
        }
        if start < chars.count { pieces.append(String(chars[start...])) }
        return pieces
    }

    /// How many characters from `start` the next piece takes (1…`limit`): see `bounded`. There
    /// are more than `limit` characters from `start`, and `chars[start]` is not whitespace.
    static func breakLength(_ chars: [Character], from start: Int, limit: Int) -> Int {
        // A mark at index i ends a piece of i - start + 1 characters; chars[i + 1] exists.
        let shortest = max(1, limit / 2)
        for i in stride(from: start + limit - 1, through: start + shortest - 1, by: -1)
        where clauseMarks.contains(chars[i]) && chars[i + 1].isWhitespace {
            return i - start + 1
        }
        // Whitespace at index i ends a piece of i - start characters (the one just past the bound included).
        for i in stride(from: start + limit, to: start, by: -1) where chars[i].isWhitespace {
            return i - start
        }
        return limit
    }
}
