import Foundation

/// How reference and hypothesis texts are normalised before scoring (stated in reports).
///
/// The steps, in order:
/// 1. Unicode NFC, so "u" + U+0308 and "ü" are the same word.
/// 2. With `caseFold`, Unicode lowercasing (then NFC again). This is lowercasing, not full case
///    folding: "ß" stays "ß" and "ẞ" becomes "ß"; nothing becomes "ss".
/// 3. With `removePunctuation`, every Unicode punctuation or symbol character becomes a word
///    break, except an apostrophe (' or ’) or hyphen (-, U+2010, U+2011) between two letters or
///    digits ("don't", "geht's", "well-known"), and a full stop, comma or colon between two digits
///    ("3.5", "1,000", "10:30"), so numbers stay as written.
/// 4. The text is split on Unicode whitespace (and zero-width spaces); soft hyphens and byte-order
///    marks are dropped whatever the options.
public struct TextNormalization: Sendable, Equatable, Codable {
    /// Lowercase after NFC, keeping "ß" as "ß" (not full case folding to "ss"). Default true.
    public var caseFold: Bool
    /// Remove Unicode punctuation and symbols, keeping apostrophes and hyphens inside words. Default true.
    public var removePunctuation: Bool
    /// Normalisation with the given options; numbers are kept as written.
    public init(caseFold: Bool = true, removePunctuation: Bool = true) {
        self.caseFold = caseFold
        self.removePunctuation = removePunctuation
    }

    /// The default: NFC, lowercase (ß kept), punctuation removed, numbers as written.
    public static let standard = TextNormalization()

    private enum CodingKeys: String, CodingKey {
        case caseFold, removePunctuation
    }

    /// Decodes the options; a missing key takes its default, so `{}` is `.standard`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            caseFold: try container.decodeIfPresent(Bool.self, forKey: .caseFold) ?? true,
            removePunctuation: try container.decodeIfPresent(Bool.self, forKey: .removePunctuation) ?? true)
    }

    /// One line for reports: e.g. "NFC, lowercase (ß kept), punctuation removed, numbers as written".
    public var summary: String {
        [
            "NFC",
            caseFold ? "lowercase (ß kept)" : "case kept",
            removePunctuation ? "punctuation removed" : "punctuation kept",
            "numbers as written",
        ].joined(separator: ", ")
    }

    /// The normalised words of `text`: NFC, lowercased and stripped of punctuation as the options
    /// say, then split on Unicode whitespace. "Grüße", "Straße", "Ärger" and "über" stay single
    /// words, and decomposed input gives the same (NFC) words as composed input.
    public func words(_ text: String) -> [String] {
        var normalized = text.precomposedStringWithCanonicalMapping
        if caseFold {
            normalized = normalized.lowercased().precomposedStringWithCanonicalMapping
        }
        let characters = Array(normalized)
        var kept = ""
        kept.reserveCapacity(normalized.utf8.count)
        for (index, character) in characters.enumerated() {
            if Self.dropped.contains(character) { continue }
            if Self.breaks.contains(character) {
                kept.append(" ")
            } else if removePunctuation, character.isPunctuation || character.isSymbol,
                !Self.keepsInside(characters, at: index)
            {
                kept.append(" ")
            } else {
                kept.append(character)
            }
        }
        return kept.split(whereSeparator: \.isWhitespace).map(String.init)
    }

    /// For CER: the characters (grapheme clusters) of the normalised words; spaces are not counted.
    public func characters(_ text: String) -> [String] {
        words(text).flatMap { word in word.map(String.init) }
    }

    /// Characters removed outright: soft hyphen and byte-order mark (zero-width no-break space).
    private static let dropped: Set<Character> = ["\u{00AD}", "\u{FEFF}"]
    /// Invisible characters that separate words although Unicode does not call them whitespace.
    private static let breaks: Set<Character> = ["\u{200B}"]
    /// Apostrophes and hyphens that are kept between two letters or digits.
    private static let joiners: Set<Character> = ["'", "\u{2019}", "-", "\u{2010}", "\u{2011}"]
    /// Number separators that are kept between two digits.
    private static let numberSeparators: Set<Character> = [".", ",", ":"]

    /// Whether the punctuation at `index` joins its neighbours into one word and so stays.
    private static func keepsInside(_ characters: [Character], at index: Int) -> Bool {
        guard index > 0, index + 1 < characters.count else { return false }
        let before = characters[index - 1], after = characters[index + 1], character = characters[index]
        if joiners.contains(character) {
            return (before.isLetter || before.isNumber) && (after.isLetter || after.isNumber)
        }
        if numberSeparators.contains(character) {
            return before.isNumber && after.isNumber
        }
        return false
    }
}
