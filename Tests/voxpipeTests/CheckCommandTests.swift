import Foundation
import Testing
import VoxTestSupport

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Counts `<testcase>` and `<failure>` elements with a real XML parser.
final class JUnitCounter: NSObject, XMLParserDelegate {
    var cases = 0
    var failures: [String] = []
    func parser(
        _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        if name == "testcase" { cases += 1 }
        if name == "failure" { failures.append(attributes["message"] ?? "") }
    }

    static func count(_ url: URL) throws -> (parsed: Bool, cases: Int, failures: [String]) {
        let counter = JUnitCounter()
        let parser = XMLParser(data: try Data(contentsOf: url))
        parser.delegate = counter
        let parsed = parser.parse()
        return (parsed, counter.cases, counter.failures)
    }
}

@Suite(.serialized, .startsProcess("the voxpipe binary")) struct CheckCommandTests {
    /// A lesson as text, the text tutor spec, and a suite over them with a replies golden.
    func textSuite() throws -> (dir: URL, suite: URL) {
        let dir = temporaryDirectory()
        let suite = try textTutorSuite(
            in: dir,
            expectations: #"{"item": "anna", "output": "replies.json", "golden": true}, "#
                + #"{"item": "anna", "output": "replies.json", "matches": "Grüße aus der Straße"}"#)
        return (dir, suite)
    }

    @Test func updateWritesTheGoldensThenCheckPassesAndAChangedFieldFailsNamingIt() throws {
        let (dir, suite) = try textSuite()
        let first = try voxpipe(["check", suite.path])
        #expect(
            first.status == 1
                && first.stdout.contains("FAIL  anna  expect[0] replies.json golden: anna/replies.json: no golden at "))

        let update = try voxpipe(["check", suite.path, "--update"])
        #expect(update.status == 0, "\(update.stdout)\(update.stderr)")
        let golden = dir.appendingPathComponent("goldens/anna/replies.json")
        #expect(update.stderr.contains("golden \(golden.path): new"))
        #expect(try voxpipe(["check", suite.path]).status == 0)

        // The golden's second reply edited by hand: the check names the field.
        let text = try String(contentsOf: golden, encoding: .utf8)
        let edited = text.replacingOccurrences(of: "\"turn\" : 2", with: "\"turn\" : 7")
        #expect(edited != text)
        try edited.write(to: golden, atomically: true, encoding: .utf8)
        let junit = dir.appendingPathComponent("check.xml")
        let changed = try voxpipe(["check", suite.path, "--junit", junit.path])
        #expect(changed.status == 1)
        #expect(
            changed.stdout.contains(
                "FAIL  anna  expect[0] replies.json golden: anna/replies.json differs from replies.json at 1 place: "
                    + "turns[1].turn: 2 but the golden has 7"
            ))
        let (parsed, cases, failures) = try JUnitCounter.count(junit)
        #expect(
            parsed && cases == 3
                && failures == [
                    "anna/replies.json differs from replies.json at 1 place: turns[1].turn: 2 but the golden has 7"
                ])

        // --update shows what changed, and the check holds again.
        let again = try voxpipe(["check", suite.path, "--update"])
        #expect(
            again.status == 0
                && again.stderr.contains(
                    "golden \(golden.path): changed at 1 place(s): turns[1].turn: 2 but the golden has 7")
        )
    }

    @Test func runWithCheckChecksTheRunsOwnOutputs() throws {
        let (dir, suite) = try textSuite()
        #expect(try voxpipe(["check", suite.path, "--update"]).status == 0)
        let out = dir.appendingPathComponent("out")
        let summary = dir.appendingPathComponent("summary.json")
        let result = try voxpipe([
            "run", packageRoot.appendingPathComponent("Pipelines/lesson-tutor-text.json").path,
            dir.appendingPathComponent("lessons").path,
            "-o", out.path, "--check", suite.path, "--check-json", summary.path,
        ])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("PASS  anna  expect[1] replies.json matches"))
        let json = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: summary)) as? [String: Any])
        #expect(json["passed"] as? Bool == true && json["expectations"] as? Double == 3)
    }

    @Test func aBadSuiteExits65NamingTheJSONPath() throws {
        let dir = temporaryDirectory()
        let suite = dir.appendingPathComponent("bad.check.json")
        try #"{"spec": "x.json", "inputs": ["in"], "expect": [{"item": "a", "output": "t.txt", "wer": 0.1}]}"#.write(
            to: suite, atomically: true, encoding: .utf8)
        let result = try voxpipe(["check", suite.path])
        #expect(result.status == 65)
        #expect(
            result.stderr
                == "voxpipe: error: \(suite.path): expect[0].reference: a wer/cer check needs a reference file "
                + "(\"reference\", {item} allowed) or \"referenceText\"\n"
        )
    }

    @Test(
        .needs(.whisperModels))
    func theShippedCISuiteOverTheSamplesHolds() throws {
        let dir = temporaryDirectory()
        let junit = dir.appendingPathComponent("ci.xml"), sctk = dir.appendingPathComponent("sctk")
        let result = try voxpipe([
            "check", packageRoot.appendingPathComponent("Pipelines/ci/samples.check.json").path, "--junit", junit.path,
            "--sctk", sctk.path,
        ])
        #expect(result.status == 0, "\(result.stdout)")
        let (parsed, cases, failures) = try JUnitCounter.count(junit)
        // 3 English + 2 German transcripts, the replies golden, the evidence golden, a match, 3 budgets.
        #expect(parsed && cases == 11 && failures.isEmpty)
        let hyp = try String(contentsOf: sctk.appendingPathComponent("hyp.trn"), encoding: .utf8)
        #expect(hyp.split(separator: "\n").count == 5 && hyp.contains("guten morgen wie geht es dir heute"))
        #expect(
            try String(contentsOf: sctk.appendingPathComponent("hyp.ctm"), encoding: .utf8).contains(
                "speech-en-22k-mono 1 "))
    }
}
