import Foundation
import Testing

@testable import VoxSynthesize

/// The one cut every voice speaks long text in (issue 36): no piece over the bound, whatever the
/// text, and nothing lost but the whitespace at a cut.
@Suite struct TextPiecesTests {
    /// Whether `pieces` are `text` in order with only whitespace between them and around them.
    func reassemble(_ pieces: [String], _ text: String) -> Bool {
        var rest = Substring(text)
        for piece in pieces {
            rest = rest.drop { $0.isWhitespace }
            guard rest.hasPrefix(piece) else { return false }
            rest = rest.dropFirst(piece.count)
        }
        return rest.allSatisfy(\.isWhitespace)
    }

    func expectBounded(
        _ pieces: [String], _ text: String, max: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(!pieces.isEmpty, sourceLocation: sourceLocation)
        #expect(
            pieces.allSatisfy { !$0.isEmpty && $0.count <= max }, "\(pieces.map(\.count))",
            sourceLocation: sourceLocation)
        #expect(
            pieces.allSatisfy { $0.first?.isWhitespace == false && $0.last?.isWhitespace == false },
            sourceLocation: sourceLocation)
        #expect(reassemble(pieces, text), "\(pieces)", sourceLocation: sourceLocation)
        #expect(
            TextPieces.bounded(text, maxCharacters: max) == pieces, "not the same cut again",
            sourceLocation: sourceLocation)
    }

    @Test func aPhraseWithinTheBoundIsOnlyTrimmed() {
        #expect(TextPieces.bounded("  Hello, how are you today?\n", maxCharacters: 40) == ["Hello, how are you today?"])
        #expect(TextPieces.bounded("exactly ten", maxCharacters: 11) == ["exactly ten"])
        #expect(TextPieces.bounded(" \n\t ", maxCharacters: 5).isEmpty)
        #expect(TextPieces.bounded("", maxCharacters: 5).isEmpty)
    }

    /// Given a long sentence with commas, then it is cut after the last comma that keeps at least
    /// half the bound, not between any two words.
    @Test func aLongSentenceIsCutAfterItsClausePunctuation() {
        let text =
            "When you arrive at the station, walk past the bakery on the corner; then turn left at the "
            + "old church: the school is the red building – you cannot miss it — and the door is open"
        let pieces = TextPieces.bounded(text, maxCharacters: 60)
        expectBounded(pieces, text, max: 60)
        #expect(
            pieces == [
                "When you arrive at the station,", "walk past the bakery on the corner;",
                "then turn left at the old church:", "the school is the red building – you cannot miss it —",
                "and the door is open",
            ])
        // A mark in the first half of the bound does not cut: "Well," would leave the rest as long.
        #expect(
            TextPieces.bounded("Well, the quick brown fox jumps over the lazy dog", maxCharacters: 30) == [
                "Well, the quick brown fox", "jumps over the lazy dog",
            ])
        // A mark is a break only before whitespace: 9:30 and 1,000 stay whole.
        #expect(
            TextPieces.bounded("at 9:30 for 1,000 people", maxCharacters: 10) == ["at 9:30", "for 1,000", "people"])
    }

    /// Given 4 KB of words without punctuation, then every piece is whole words up to the bound.
    @Test func anUnpunctuatedTextIsCutBetweenWords() {
        let words = ["the", "learner", "told", "the", "tutor", "about", "a", "long", "trip", "to", "the", "mountains"]
        let text = (0..<800).map { words[$0 % words.count] }.joined(separator: " ")
        #expect(text.count > 4000)
        let pieces = TextPieces.bounded(text, maxCharacters: 200)
        expectBounded(pieces, text, max: 200)
        #expect(pieces.count >= 21 && pieces.count <= 22)
        #expect(pieces.joined(separator: " ") == text)
        #expect(pieces.allSatisfy { $0.split(separator: " ").allSatisfy { words.contains(String($0)) } })
        // Runs of whitespace and line breaks between the words are dropped at a cut only.
        let spaced = text.replacingOccurrences(of: " a ", with: "  \n a \t ")
        expectBounded(TextPieces.bounded(spaced, maxCharacters: 200), spaced, max: 200)
    }

    /// Given 4 KB of one "word", then it is cut hard at the bound.
    @Test func oneHugeWordIsCutHardAtTheBound() {
        let word = String(repeating: "x", count: 4096)
        let pieces = TextPieces.bounded(word, maxCharacters: 300)
        expectBounded(pieces, word, max: 300)
        #expect(pieces.map(\.count) == Array(repeating: 300, count: 13) + [196])
        #expect(pieces.joined() == word)
        #expect(TextPieces.bounded("abc", maxCharacters: 0) == ["a", "b", "c"])
    }

    /// Given German text with umlauts, precomposed and decomposed (NFD, a letter and a combining
    /// mark), then the bound counts characters, and no cut separates a letter from its mark.
    @Test func germanTextWithUmlautsIsCutBetweenCharacters() {
        let sentence = "Über die Brücke gehen Jürgen und Bärbel zur Straße hinüber und grüßen schön"
        for text in [sentence, sentence.decomposedStringWithCanonicalMapping] {
            let pieces = TextPieces.bounded(text, maxCharacters: 20)
            expectBounded(pieces, text, max: 20)
            #expect(
                pieces.first?.unicodeScalars.elementsEqual(
                    "Über die Brücke".precomposedOrNot(like: text).unicodeScalars) == true)
            let word = String(repeating: "äöüß", count: 100).precomposedOrNot(like: text)
            let hard = TextPieces.bounded(word, maxCharacters: 7)
            expectBounded(hard, word, max: 7)
            #expect(hard.map(\.count) == Array(repeating: 7, count: 57) + [1])
            #expect(hard.allSatisfy { $0.unicodeScalars.first?.properties.generalCategory != .nonspacingMark })
            #expect(hard.joined().unicodeScalars.elementsEqual(word.unicodeScalars))
        }
    }

    /// Sentences are cut first, then each over-long one: the packing for espeak-ng and OpenAI.
    @Test func sentencesComeFirstAndEachIsBounded() {
        let text = "Short one. " + String(repeating: "word ", count: 100) + "end! Last"
        let sentences = TextPieces.sentences(text, maxCharacters: 100)
        #expect(sentences.first == "Short one." && sentences.last == "Last")
        #expect(sentences.allSatisfy { !$0.isEmpty && $0.count <= 100 })
        let packed = TextPieces.split(text, maxCharacters: 100)
        #expect(packed.allSatisfy { !$0.isEmpty && $0.count <= 100 })
        #expect(reassemble(packed, text))
    }

    /// Given the IPA espeak-ng gives a long reply without punctuation (clauses it ends itself,
    /// none with a stop), then Piper gets it as phrases of at most `maxPhonemes` characters, cut
    /// between words; an ordinary sentence stays one phrase.
    @Test func piperGetsALongSentenceInBoundedPhrases() {
        let word = "ðə lˈɜːnɚ tˈoʊld ðə tˈuːɾɚ"
        let clauses = (0..<40).map { _ in (ipa: Array(repeating: word, count: 8).joined(separator: " "), source: "x") }
        let known = Dictionary(
            uniqueKeysWithValues: Set(word.decomposedStringWithCanonicalMapping.unicodeScalars + ["."]).map { ($0, 1) })
        let phrases = PiperEngine.sentences(clauses, known: known)
        let text = clauses.map(\.ipa).joined(separator: " ")
        #expect(phrases.count >= text.count / PiperEngine.maxPhonemes)
        #expect(phrases.allSatisfy { !$0.isEmpty && $0.count <= PiperEngine.maxPhonemes })
        let spoken = phrases.map { String(String.UnicodeScalarView($0.compactMap { Unicode.Scalar(UInt32($0)) })) }
        #expect(spoken.joined(separator: " ") == text.decomposedStringWithCanonicalMapping)
        let one = PiperEngine.sentences([(ipa: word, source: "x.")], known: known)
        #expect(one.count == 1 && one[0].count == word.decomposedStringWithCanonicalMapping.unicodeScalars.count + 1)
    }
}

extension String {
    /// This text in the same normal form as `other` (decomposed when `other` is).
    fileprivate func precomposedOrNot(like other: String) -> String {
        other.unicodeScalars.elementsEqual(other.precomposedStringWithCanonicalMapping.unicodeScalars)
            ? precomposedStringWithCanonicalMapping : decomposedStringWithCanonicalMapping
    }
}
