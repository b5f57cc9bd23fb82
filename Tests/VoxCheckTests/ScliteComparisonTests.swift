import Foundation
import Testing
import VoxCheck
import VoxTestSupport

/// NIST sclite, from Debian's sctk package: Debian puts it in /usr/lib/sctk/bin (with a `sctk`
/// wrapper on PATH); a build from source puts it in /usr/bin or /usr/local/bin.
let sclitePath: String? = ["/usr/bin/sclite", "/usr/local/bin/sclite", "/usr/lib/sctk/bin/sclite"]
    .first { FileManager.default.isExecutableFile(atPath: $0) }

/// What sclite said about one utterance: its counts and its alignment as letters ("CCSCDC").
struct ScliteUtterance: Equatable {
    var counts: ErrorCounts
    var letters: String
}

/// Runs sclite on the given pairs of token lists (already normalised) and reads its per-utterance
/// counts and alignments from the `pralign` report; `characters` scores with `-c` (characters).
func sclite(
    _ pairs: [(id: String, reference: [String], hypothesis: [String])], characters: Bool = false
) throws -> [String: ScliteUtterance] {
    let folder = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: folder) }
    let ref = folder.appendingPathComponent("ref.trn"), hyp = folder.appendingPathComponent("hyp.trn")
    try SCTKExport.trn(pairs.map { (id: $0.id, words: $0.reference) }).write(to: ref, atomically: true, encoding: .utf8)
    try SCTKExport.trn(pairs.map { (id: $0.id, words: $0.hypothesis) }).write(
        to: hyp, atomically: true, encoding: .utf8)

    let process = Process()
    process.executableURL = URL(fileURLWithPath: try #require(sclitePath))
    process.arguments =
        ["-r", ref.path, "trn", "-h", hyp.path, "trn", "-i", "spu_id", "-e", "utf-8"]
        + (characters ? ["-c"] : []) + ["-o", "pralign", "stdout"]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)

    // Blocks of "id: (x)", "Scores: (#C #S #D #I) c s d i", then "REF:  …", "HYP:  …", "Eval: …"
    // unless both sides are empty.
    var result: [String: ScliteUtterance] = [:]
    var id: String?, refTokens: [Substring] = []
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
        if line.hasPrefix("id: (") {
            id = String(line.dropFirst(5).dropLast())
        } else if line.hasPrefix("Scores: (#C #S #D #I) "), let utteranceID = id {
            let numbers = line.split(separator: " ").suffix(4).compactMap { Int($0) }
            #expect(numbers.count == 4, "\(utteranceID): \(line)")
            if numbers.count == 4 {
                let counts = ErrorCounts(
                    correct: numbers[0], substitutions: numbers[1], deletions: numbers[2], insertions: numbers[3])
                result[utteranceID] = ScliteUtterance(counts: counts, letters: "")
            }
        } else if line.hasPrefix("REF:") {
            refTokens = line.dropFirst(4).split(separator: " ")
        } else if line.hasPrefix("HYP:"), let utteranceID = id {
            let hypTokens = line.dropFirst(4).split(separator: " ")
            #expect(refTokens.count == hypTokens.count, "\(utteranceID): columns")
            // Words contain no "*": a column of stars is the missing side; sclite capitalises errors.
            result[utteranceID]?.letters = zip(refTokens, hypTokens).map { ref, hyp in
                ref.allSatisfy { $0 == "*" }
                    ? "I" : hyp.allSatisfy { $0 == "*" } ? "D" : ref.lowercased() == hyp.lowercased() ? "C" : "S"
            }.joined()
        }
    }
    return result
}

@Suite(
    .enabled(if: sclitePath != nil, "needs sctk (apt-get install sctk; make setup installs it)"),
    .startsProcess("sclite"))
struct ScliteComparisonTests {
    /// Varied pairs, normalised with the standard normalisation before sclite sees them.
    static let texts: [(reference: String, hypothesis: String)] = [
        ("the cat sat on the mat", "the cat sit on mat"),
        ("Grüße aus der Straße, über Ärger!", "Grüsse aus Strasse über den Ärger"),
        ("a b c", "d e a"),
        ("x a b c", "a b c x"),
        ("hello world", ""),
        ("", "uh hello"),
        ("", ""),
        ("Wir haben's geschafft, oder?", "wir haben es geschafft oder nicht"),
        ("the quick brown fox jumps over the lazy dog", "a quick brown fox jumped over lazy dogs today"),
        ("Ich weiß nicht, ob er's kann.", "ich weiss nicht ob er es kann"),
        ("don't stop believing", "do not stop believing"),
        ("Das Öl-Fass in Köln kostet 3.50 €", "das öl fass in köln kostet drei fünfzig"),
    ]

    static var pairs: [(id: String, reference: [String], hypothesis: [String])] {
        texts.enumerated().map { index, pair in
            (
                id: String(format: "hand_%02d", index), reference: TextNormalization.standard.words(pair.reference),
                hypothesis: TextNormalization.standard.words(pair.hypothesis)
            )
        }
    }

    @Test func wordCountsAndAlignmentsEqualSclites() throws {
        let pairs = Self.pairs
        let theirs = try sclite(pairs)
        #expect(theirs.count == pairs.count)
        var total = ErrorCounts()
        for pair in pairs {
            let ours = Scoring.align(reference: pair.reference, hypothesis: pair.hypothesis)
            total = total + ours.counts
            #expect(
                theirs[pair.id] == ScliteUtterance(counts: ours.counts, letters: letters(ours.alignment)), "\(pair.id)")
        }
        #expect(total == theirs.values.reduce(ErrorCounts()) { $0 + $1.counts })
    }

    @Test func characterCountsEqualSclites() throws {
        let pairs = Self.texts.enumerated().map { index, pair in
            (
                id: String(format: "char_%02d", index),
                reference: TextNormalization.standard.characters(pair.reference),
                hypothesis: TextNormalization.standard.characters(pair.hypothesis)
            )
        }
        // sclite -c splits the words of the trn into characters itself; give it the words.
        let words = Self.pairs
        let theirs = try sclite(
            zip(pairs, words).map { (id: $0.id, reference: $1.reference, hypothesis: $1.hypothesis) }, characters: true)
        #expect(theirs.count == pairs.count)
        for pair in pairs {
            let ours = Scoring.align(reference: pair.reference, hypothesis: pair.hypothesis)
            #expect(
                theirs[pair.id] == ScliteUtterance(counts: ours.counts, letters: letters(ours.alignment)), "\(pair.id)")
        }
    }

    /// Many short random pairs over a four-word vocabulary: equal-cost alignments abound, so
    /// this checks the tie-breaking, not only the minimum cost.
    @Test func randomPairsWithManyTiesEqualSclites() throws {
        var state: UInt64 = 0x5EED
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        let vocabulary = ["a", "b", "c", "d"]
        let pairs = (0..<300).map { index in
            (
                id: String(format: "rnd_%03d", index),
                reference: (0..<next(9)).map { _ in vocabulary[next(4)] },
                hypothesis: (0..<next(9)).map { _ in vocabulary[next(4)] }
            )
        }
        let theirs = try sclite(pairs)
        #expect(theirs.count == pairs.count)
        var differing: [String] = []
        for pair in pairs {
            let ours = Scoring.align(reference: pair.reference, hypothesis: pair.hypothesis)
            if theirs[pair.id] != ScliteUtterance(counts: ours.counts, letters: letters(ours.alignment)) {
                differing.append(pair.id)
            }
        }
        #expect(differing.isEmpty, "differ from sclite: \(differing.prefix(10))")
    }
}
