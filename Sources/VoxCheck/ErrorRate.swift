/// The counts of one alignment of a hypothesis against a reference (words for WER, characters
/// for CER), or of many pooled with `+`.
public struct ErrorCounts: Sendable, Equatable, Codable {
    /// Reference tokens the hypothesis has unchanged.
    public var correct: Int
    /// Reference tokens the hypothesis has replaced by another token.
    public var substitutions: Int
    /// Reference tokens missing from the hypothesis.
    public var deletions: Int
    /// Hypothesis tokens with no reference token.
    public var insertions: Int

    /// Counts as given; all zero by default.
    public init(correct: Int = 0, substitutions: Int = 0, deletions: Int = 0, insertions: Int = 0) {
        self.correct = correct
        self.substitutions = substitutions
        self.deletions = deletions
        self.insertions = insertions
    }

    /// How many tokens the reference has.
    public var referenceCount: Int { correct + substitutions + deletions }
    /// Substitutions, deletions and insertions together.
    public var errors: Int { substitutions + deletions + insertions }

    /// The error rate: errors / referenceCount. It is 0 when reference and hypothesis are both
    /// empty; with an empty reference it is the number of insertions (errors / max(1, referenceCount)),
    /// so it stays finite. It can exceed 1 when the hypothesis has many insertions.
    public var rate: Double { Double(errors) / Double(max(1, referenceCount)) }

    /// Pooled counts (for the overall WER of many items: total errors over total reference words).
    public static func + (a: ErrorCounts, b: ErrorCounts) -> ErrorCounts {
        ErrorCounts(
            correct: a.correct + b.correct, substitutions: a.substitutions + b.substitutions,
            deletions: a.deletions + b.deletions, insertions: a.insertions + b.insertions)
    }
}

/// One column of an alignment: a reference token, a hypothesis token, or both, and what happened.
public struct AlignedToken: Sendable, Equatable {
    /// What the hypothesis did with the reference token; raw values are sclite's letters.
    public enum Operation: String, Sendable {
        /// The same token in both.
        case correct = "C"
        /// A reference token replaced by a different hypothesis token.
        case substitution = "S"
        /// A reference token with nothing in the hypothesis.
        case deletion = "D"
        /// A hypothesis token with nothing in the reference.
        case insertion = "I"
    }

    /// What happened in this column.
    public var operation: Operation
    /// The reference token; nil for an insertion.
    public var reference: String?
    /// The hypothesis token; nil for a deletion.
    public var hypothesis: String?

    /// A column as given.
    public init(operation: Operation, reference: String?, hypothesis: String?) {
        self.operation = operation
        self.reference = reference
        self.hypothesis = hypothesis
    }
}

/// Word and character error rates by minimum-cost alignment, as NIST sclite computes them.
public enum Scoring {
    /// sclite's default costs (word.c `wwd_WORD`): correct 0, substitution 4, insertion and deletion 3.
    private static let substitutionCost = 4, insertionCost = 3, deletionCost = 3

    /// The step that reached a cell of the alignment table.
    private enum Step: UInt8 { case diagonal, deletion, insertion }

    /// Minimum-cost alignment with sclite's default weights (correct 0, substitution 4, insertion 3,
    /// deletion 3), so counts match sclite's. Ties are broken as sclite breaks them (net_dp.c): the
    /// diagonal (correct or substitution) wins a tie, then a deletion if strictly cheaper than an
    /// insertion, else an insertion; so the alignment itself, not only its cost, is sclite's.
    /// Tokens are compared exactly (normalise them first).
    public static func align(
        reference: [String], hypothesis: [String]
    ) -> (counts: ErrorCounts, alignment: [AlignedToken]) {
        let n = reference.count, m = hypothesis.count
        let width = m + 1
        // The step into each cell, row-major over (reference index, hypothesis index); costs need two rows only.
        var steps = [Step](repeating: .diagonal, count: (n + 1) * width)
        var previous = [Int](repeating: 0, count: width)
        var current = [Int](repeating: 0, count: width)
        for j in 1..<width {
            previous[j] = previous[j - 1] + insertionCost
            steps[j] = .insertion
        }
        for i in stride(from: 1, through: n, by: 1) {
            current[0] = previous[0] + deletionCost
            steps[i * width] = .deletion
            for j in 1..<width {
                let diagonal = previous[j - 1] + (reference[i - 1] == hypothesis[j - 1] ? 0 : substitutionCost)
                let deletion = previous[j] + deletionCost
                let insertion = current[j - 1] + insertionCost
                if diagonal <= deletion && diagonal <= insertion {
                    current[j] = diagonal
                    steps[i * width + j] = .diagonal
                } else if deletion < insertion {
                    current[j] = deletion
                    steps[i * width + j] = .deletion
                } else {
                    current[j] = insertion
                    steps[i * width + j] = .insertion
                }
            }
            swap(&previous, &current)
        }

        var alignment: [AlignedToken] = []
        alignment.reserveCapacity(max(n, m))
        var counts = ErrorCounts()
        var i = n, j = m
        while i > 0 || j > 0 {
            switch steps[i * width + j] {
            case .diagonal:
                let same = reference[i - 1] == hypothesis[j - 1]
                alignment.append(
                    AlignedToken(
                        operation: same ? .correct : .substitution, reference: reference[i - 1],
                        hypothesis: hypothesis[j - 1]))
                if same { counts.correct += 1 } else { counts.substitutions += 1 }
                i -= 1
                j -= 1
            case .deletion:
                alignment.append(AlignedToken(operation: .deletion, reference: reference[i - 1], hypothesis: nil))
                counts.deletions += 1
                i -= 1
            case .insertion:
                alignment.append(AlignedToken(operation: .insertion, reference: nil, hypothesis: hypothesis[j - 1]))
                counts.insertions += 1
                j -= 1
            }
        }
        return (counts, alignment.reversed())
    }

    /// Word errors of `hypothesis` against `reference`, both normalised into words first.
    public static func wordErrors(
        reference: String, hypothesis: String, normalization: TextNormalization = .standard
    ) -> (counts: ErrorCounts, alignment: [AlignedToken]) {
        align(reference: normalization.words(reference), hypothesis: normalization.words(hypothesis))
    }

    /// Character errors (for CER) of `hypothesis` against `reference`: the characters of the
    /// normalised words, spaces not counted, aligned as words are.
    public static func characterErrors(
        reference: String, hypothesis: String, normalization: TextNormalization = .standard
    ) -> ErrorCounts {
        align(reference: normalization.characters(reference), hypothesis: normalization.characters(hypothesis)).counts
    }

    /// sclite-style pretty alignment for a failing item: three lines "REF: …", "HYP: …", "Eval: …"
    /// with columns padded to the wider token (counted in characters), a deleted word shown as
    /// stars in HYP and an inserted one as stars in REF (as many as the column is wide, as sclite
    /// does), every erroneous word UPPER-CASED as sclite does ("ß" as "ẞ", so it does not turn into
    /// "SS"), and S, D or I in Eval under it. Lines end without trailing spaces and are joined by
    /// newlines, with none after the last.
    public static func alignmentText(_ alignment: [AlignedToken]) -> String {
        var ref = "REF: ", hyp = "HYP: ", eval = "Eval:"
        for token in alignment {
            let shown: (ref: String?, hyp: String?)
            switch token.operation {
            case .correct: shown = (token.reference, token.hypothesis)
            case .substitution, .deletion, .insertion: shown = (token.reference.map(upper), token.hypothesis.map(upper))
            }
            let width = max(shown.ref?.count ?? 0, shown.hyp?.count ?? 0, 1)
            func cell(_ text: String?) -> String {
                let text = text ?? String(repeating: "*", count: width)
                return " " + text + String(repeating: " ", count: width - text.count)
            }
            ref += cell(shown.ref)
            hyp += cell(shown.hyp)
            eval += cell(token.operation == .correct ? "" : token.operation.rawValue)
        }
        return [ref, hyp, eval].map(trimmingTrailingSpaces).joined(separator: "\n")
    }

    /// A word in capitals for showing an error; "ß" becomes "ẞ" so the width and letters stay.
    private static func upper(_ word: String) -> String {
        String(word.flatMap { character in character == "ß" ? "ẞ" : character.uppercased() })
    }

    /// `line` without the spaces at its end.
    private static func trimmingTrailingSpaces(_ line: String) -> String {
        var line = Substring(line)
        while line.last == " " { line = line.dropLast() }
        return String(line)
    }
}
