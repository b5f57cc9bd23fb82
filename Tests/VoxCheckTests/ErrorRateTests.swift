import Testing
import VoxCheck

/// The operations of an alignment as sclite's letters, e.g. "CCSCDC".
func letters(_ alignment: [AlignedToken]) -> String {
    alignment.map(\.operation.rawValue).joined()
}

@Suite struct WordErrorTests {
    @Test func substitutionAndDeletion() {
        let (counts, alignment) = Scoring.wordErrors(
            reference: "the cat sat on the mat", hypothesis: "the cat sit on mat")
        #expect(counts == ErrorCounts(correct: 4, substitutions: 1, deletions: 1, insertions: 0))
        #expect(counts.referenceCount == 6)
        #expect(counts.errors == 2)
        #expect(counts.rate == 2.0 / 6.0)
        #expect(letters(alignment) == "CCSCDC")
        #expect(alignment[2] == AlignedToken(operation: .substitution, reference: "sat", hypothesis: "sit"))
        #expect(alignment[4] == AlignedToken(operation: .deletion, reference: "the", hypothesis: nil))
    }

    @Test func insertionsOnly() {
        let (counts, alignment) = Scoring.wordErrors(reference: "hello world", hypothesis: "hello big wide world")
        #expect(counts == ErrorCounts(correct: 2, insertions: 2))
        #expect(counts.rate == 1.0)
        #expect(letters(alignment) == "CIIC")
        #expect(alignment[1] == AlignedToken(operation: .insertion, reference: nil, hypothesis: "big"))
    }

    @Test func deletionsOnly() {
        let (counts, alignment) = Scoring.wordErrors(reference: "one two three four", hypothesis: "one four")
        #expect(counts == ErrorCounts(correct: 2, deletions: 2))
        #expect(counts.rate == 0.5)
        #expect(letters(alignment) == "CDDC")
    }

    @Test func emptyTexts() {
        let both = Scoring.wordErrors(reference: "", hypothesis: " ")
        #expect(both.counts == ErrorCounts())
        #expect(both.alignment.isEmpty)
        #expect(both.counts.rate == 0)

        let noReference = Scoring.wordErrors(reference: "", hypothesis: "uh, hello")
        #expect(noReference.counts == ErrorCounts(insertions: 2))
        #expect(noReference.counts.rate == 2, "insertions / max(1, 0): finite")

        let noHypothesis = Scoring.wordErrors(reference: "a b c", hypothesis: "")
        #expect(noHypothesis.counts == ErrorCounts(deletions: 3))
        #expect(noHypothesis.counts.rate == 1)
    }

    @Test func normalisationAppliesBeforeScoring() {
        #expect(
            Scoring.wordErrors(reference: "Hello, World!", hypothesis: "hello world").counts == ErrorCounts(correct: 2))
        let raw = TextNormalization(caseFold: false, removePunctuation: false)
        #expect(
            Scoring.wordErrors(reference: "Hello, World!", hypothesis: "hello world", normalization: raw).counts
                == ErrorCounts(substitutions: 2))
    }

    @Test func oneSubstitutionCostsLessThanADeletionAndAnInsertion() {
        let (counts, alignment) = Scoring.align(reference: ["a"], hypothesis: ["b"])
        #expect(counts == ErrorCounts(substitutions: 1))
        #expect(letters(alignment) == "S")
    }

    /// Equal-cost alignments with different counts: sclite takes the diagonal on a tie (3 S, cost 12,
    /// rather than I I C D D, also 12), and an insertion when a deletion is not strictly cheaper.
    @Test func tiesAreBrokenAsSclite() {
        let threeSubstitutions = Scoring.align(reference: ["a", "b", "c"], hypothesis: ["d", "e", "a"])
        #expect(threeSubstitutions.counts == ErrorCounts(substitutions: 3))
        #expect(
            letters(Scoring.align(reference: ["x", "a", "b", "c"], hypothesis: ["a", "b", "c", "x"]).alignment)
                == "DCCCI")
        #expect(
            letters(Scoring.align(reference: ["a", "b", "c", "d"], hypothesis: ["d", "a", "b", "c"]).alignment)
                == "ICCCD")
        #expect(letters(Scoring.align(reference: ["a", "b"], hypothesis: ["b", "a"]).alignment) == "DCI")
    }

    @Test func pooledCountsAndRate() {
        let a = ErrorCounts(correct: 4, substitutions: 1, deletions: 1)
        let b = ErrorCounts(correct: 1, substitutions: 0, deletions: 0, insertions: 3)
        #expect(a + b == ErrorCounts(correct: 5, substitutions: 1, deletions: 1, insertions: 3))
        #expect((a + b).rate == 5.0 / 7.0)
        #expect(a + ErrorCounts() == a)
    }
}

@Suite struct CharacterErrorTests {
    /// Characters of the words, spaces not counted: 17 in the reference, 15 in the hypothesis;
    /// ß→s plus an inserted s, and "der" deleted (as sclite -c counts it).
    @Test func germanPair() {
        let counts = Scoring.characterErrors(reference: "Grüße aus der Straße", hypothesis: "grüsse aus Straße")
        #expect(counts == ErrorCounts(correct: 13, substitutions: 1, deletions: 3, insertions: 1))
        #expect(counts.rate == 5.0 / 17.0)
    }

    @Test func spacesDoNotCount() {
        #expect(Scoring.characterErrors(reference: "ab cd", hypothesis: "abcd") == ErrorCounts(correct: 4))
    }
}

@Suite struct AlignmentTextTests {
    @Test func scliteStyleColumns() {
        let alignment = Scoring.wordErrors(reference: "the cat sat on the mat", hypothesis: "the cat sit on mat")
            .alignment
        #expect(
            Scoring.alignmentText(alignment) == """
                REF:  the cat SAT on THE mat
                HYP:  the cat SIT on *** mat
                Eval:         S      D
                """)
    }

    @Test func germanColumnsCountCharactersAndKeepSharpS() {
        let alignment = Scoring.wordErrors(reference: "grüße aus der straße", hypothesis: "grüsse aus straße über")
            .alignment
        #expect(
            Scoring.alignmentText(alignment) == """
                REF:  GRÜẞE  aus DER straße ****
                HYP:  GRÜSSE aus *** straße ÜBER
                Eval: S          D          I
                """)
    }

    @Test func emptyAlignment() {
        #expect(Scoring.alignmentText([]) == "REF:\nHYP:\nEval:")
    }
}
