import Testing
import VoxCheck

@Suite struct SCTKExportTests {
    @Test func trnLinesEndInTheSanitisedID() {
        let text = SCTKExport.trn([
            (id: "spk_1", words: ["the", "cat"]),
            (id: "a b(c)", words: []),
            (id: "", words: ["grüße"]),
        ])
        #expect(text == "the cat (spk_1)\n(a_b_c_)\ngrüße (_)\n")
        #expect(SCTKExport.trn([]) == "")
    }

    @Test func ctmIsSortedByIDThenStartWithThreeDecimals() {
        let text = SCTKExport.ctm([
            (id: "b", start: 1.5, end: 2.0, word: "zwei", confidence: 0.9),
            (id: "a", start: 0.25, end: 0.75, word: "one", confidence: nil),
            (id: "b", start: 0.0, end: 1.25, word: "eins", confidence: nil),
            (id: "a b", start: 0.1, end: 0.05, word: "x", confidence: 0.12345),
            (id: "b", start: 1.5, end: 1.6, word: "zwo", confidence: nil),
        ])
        #expect(
            text == """
                a 1 0.250 0.500 one
                a_b 1 0.100 0.000 x 0.123
                b 1 0.000 1.250 eins
                b 1 1.500 0.500 zwei 0.900
                b 1 1.500 0.100 zwo

                """)
    }
}
