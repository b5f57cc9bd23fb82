import Foundation
import Testing
import VoxCore
import VoxTestSupport

@testable import VoxCheck

/// Reference text is redacted before it is scored, so no key it holds reaches a message, an
/// alignment or sclite's files, not even lowercased by normalisation (issue 36, item 2).
@Suite struct ReferenceRedactionTests {
    @Test func aKeyInAReferenceIsRedactedFromTheAlignmentTheScoredWordsAndSCTKFiles() throws {
        let key = "sk-Canary-\(UUID().uuidString)"
        let secrets = Secrets()
        secrets.register(key)
        let dir = temporaryDirectory()
        try Data("Guten Morgen \(key) Anna\n".utf8).write(to: dir.appendingPathComponent("ref.txt"))
        let suiteURL = dir.appendingPathComponent("s.check.json")
        try Data(
            (#"{"spec":"p.json","inputs":["in"],"expect":[{"item":"lesson","output":"t.txt","reference":"ref.txt","#
                + #""wer":0},{"item":"lesson","output":"t.txt","referenceText":"Hallo "# + key + #"","wer":0}]}"#)
                .utf8
        ).write(to: suiteURL)
        let out = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(
            at: out.appendingPathComponent("lesson"), withIntermediateDirectories: true)
        try Data("guten morgen anna\n".utf8).write(to: out.appendingPathComponent("lesson/t.txt"))
        let items = [CheckedItem(name: "lesson", status: "done", seconds: 1)]

        let outcome = Checker(
            suite: try Suite.load(suiteURL), outputDirectory: out, items: items, wallSeconds: 1, secrets: secrets
        ).evaluate()
        let sctk = dir.appendingPathComponent("sctk")
        try CheckReports.writeSCTK(outcome, to: sctk, secrets: secrets)

        // Both expectations failed on the key's word, so the alignment is shown: without the key.
        #expect(outcome.results.prefix(2).allSatisfy { !$0.passed && $0.detail != nil })
        var shown = outcome.results.map { "\($0.message)\n\($0.detail ?? "")" }
        shown += outcome.scored.map { $0.reference.joined(separator: " ") }
        shown.append(try String(contentsOf: sctk.appendingPathComponent("ref.trn"), encoding: .utf8))
        let needle = String(key.dropFirst(3).prefix(12)).lowercased()
        for text in shown {
            #expect(!text.lowercased().contains(needle), "\(text)")
        }
        #expect(outcome.scored.first?.reference == ["guten", "morgen", "redacted", "anna"])
    }
}
