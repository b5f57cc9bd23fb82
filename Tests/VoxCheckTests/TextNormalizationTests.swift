import Foundation
import Testing
import VoxCheck

@Suite struct TextNormalizationTests {
    let standard = TextNormalization.standard

    @Test func germanWordsSurviveAsSingleWords() {
        #expect(
            standard.words("Grüße aus der Straße, über Ärger!") == ["grüße", "aus", "der", "straße", "über", "ärger"])
    }

    @Test func decomposedInputGivesTheComposedWords() {
        let composed = standard.words("Grüße aus der Straße, über Ärger!")
        let decomposed = standard.words("Gru\u{0308}ße aus der Straße, u\u{0308}ber A\u{0308}rger!")
        // Swift's == already treats canonically equivalent strings as equal: compare the scalars.
        #expect(decomposed.map { Array($0.unicodeScalars) } == composed.map { Array($0.unicodeScalars) })
        #expect(decomposed[0].unicodeScalars.map(\.value) == [0x67, 0x72, 0xFC, 0xDF, 0x65])
    }

    @Test func lowercasingKeepsSharpS() {
        #expect(standard.words("STRASSE Straße GROẞE") == ["strasse", "straße", "große"])
    }

    @Test func apostrophesAndHyphensInsideWordsStay() {
        let words = standard.words("Don't stop—geht's weiter; well-known 'quotes' -dash- rock’n’roll (gut) „so“ «là»")
        #expect(
            words == [
                "don't", "stop", "geht's", "weiter", "well-known", "quotes", "dash", "rock’n’roll", "gut", "so", "là",
            ])
    }

    @Test func numbersStayAsWritten() {
        #expect(
            standard.words("It costs 3.50 €, about 1,000 items at 10:30. 50% off!") == [
                "it", "costs", "3.50", "about", "1,000", "items", "at", "10:30", "50", "off",
            ])
    }

    @Test func unicodeWhitespaceSplitsAndInvisiblesGo() {
        #expect(standard.words("a\u{00A0}b\tc\nd\u{2003}e\u{200B}f  ") == ["a", "b", "c", "d", "e", "f"])
        #expect(standard.words("\u{FEFF}Stra\u{00AD}ße") == ["straße"])
        #expect(standard.words("") == [])
        #expect(standard.words(" ... !? ") == [])
    }

    @Test func optionsOffKeepCaseAndPunctuation() {
        let raw = TextNormalization(caseFold: false, removePunctuation: false)
        #expect(raw.words("Hello, World! Gru\u{0308}ße") == ["Hello,", "World!", "Grüße"])
        #expect(raw.words("Gru\u{0308}ße")[0].unicodeScalars.count == 5)
        #expect(
            TextNormalization(caseFold: true, removePunctuation: false).words("Hello, World!") == ["hello,", "world!"])
        #expect(
            TextNormalization(caseFold: false, removePunctuation: true).words("Hello, World!") == ["Hello", "World"])
    }

    @Test func charactersAreTheGraphemesOfTheWordsWithoutSpaces() {
        #expect(standard.characters("Grüße, Welt!") == ["g", "r", "ü", "ß", "e", "w", "e", "l", "t"])
        #expect(standard.characters("  ") == [])
    }

    @Test func summaryStatesTheOptions() {
        #expect(standard.summary == "NFC, lowercase (ß kept), punctuation removed, numbers as written")
        #expect(
            TextNormalization(caseFold: false, removePunctuation: false).summary
                == "NFC, case kept, punctuation kept, numbers as written")
    }

    @Test func decodesWithDefaultsAndRoundTrips() throws {
        let decoder = JSONDecoder()
        #expect(try decoder.decode(TextNormalization.self, from: Data("{}".utf8)) == .standard)
        let off = try decoder.decode(TextNormalization.self, from: Data(#"{"caseFold": false}"#.utf8))
        #expect(off == TextNormalization(caseFold: false))
        #expect(off.removePunctuation)
        let custom = TextNormalization(caseFold: false, removePunctuation: false)
        #expect(try decoder.decode(TextNormalization.self, from: JSONEncoder().encode(custom)) == custom)
    }
}
