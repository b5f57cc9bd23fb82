import Foundation
import Testing
import VoxCore
import VoxTestSupport

@testable import VoxCheck

@Suite struct JSONGoldenTests {
    let golden: JSONValue = [
        "input": "lesson.txt",
        "turns": [
            ["turn": 1, "start": 0.5, "reply": "Hallo!", "audio": "a1.wav"],
            ["turn": 2, "start": 2.0, "reply": "Gut."],
        ],
    ]

    @Test func aChangedFieldFailsNamingItsPath() {
        var changed = golden
        changed = [
            "input": "lesson.txt",
            "turns": [
                ["turn": 1, "start": 0.5, "reply": "Hallo, du!", "audio": "a1.wav"],
                ["turn": 2, "start": 2.0, "reply": "Gut."],
            ],
        ]
        #expect(
            JSONGolden.differences(actual: changed, golden: golden) == [
                #"turns[0].reply: "Hallo, du!" but the golden has "Hallo!""#
            ])
    }

    @Test func ignoredFieldsAndTolerancesAreHonouredButNoMore() {
        let actual: JSONValue = [
            "input": "lesson.txt",
            "turns": [
                ["turn": 1, "start": 0.52, "reply": "Hallo!", "audio": "other.wav"],
                ["turn": 2, "start": 2.2, "reply": "Gut.", "extra": true],
            ],
        ]
        let differences = JSONGolden.differences(
            actual: actual, golden: golden, ignore: ["turns[*].audio"], tolerances: ["turns[*].start": 0.05])
        #expect(
            differences == [
                "turns[1].extra: not in the golden (now true)",
                "turns[1].start: 2.2 but the golden has 2 (tolerance ±0.05)",
            ])
        #expect(
            JSONGolden.differences(actual: ["turns": []], golden: ["turns": [1]]) == [
                "turns[0]: missing (the golden has 1)"
            ])
    }
}

@Suite struct TextGoldenTests {
    let golden: JSONValue = [
        "turns": [
            ["turn": 1, "transcription": "Guten Morgen! Wie geht es dir heute? Ich lerne Deutsch.", "reply": "Gut."]
        ]
    ]

    /// A suite over one item whose replies.json differs from its golden as `actual` does.
    func check(_ actual: JSONValue, rule: String) throws -> CheckResult {
        let dir = temporaryDirectory()
        let suiteURL = dir.appendingPathComponent("s.check.json")
        try Data(
            (#"{"spec":"p.json","inputs":["in"],"expect":[{"item":"lesson","output":"replies.json","golden":true"#
                + rule + "}]}").utf8
        ).write(to: suiteURL)
        let out = dir.appendingPathComponent("out")
        for (root, value) in [(out, actual), (dir.appendingPathComponent("goldens"), golden)] {
            let folder = root.appendingPathComponent("lesson")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try value.canonicalData().write(to: folder.appendingPathComponent("replies.json"))
        }
        let items = [CheckedItem(name: "lesson", status: "done", seconds: 1)]
        let outcome = Checker(suite: try Suite.load(suiteURL), outputDirectory: out, items: items, wallSeconds: 1)
            .evaluate()
        return try #require(outcome.results.first)
    }

    func transcribed(_ text: String) -> JSONValue {
        ["turns": [["turn": 1, "transcription": .string(text), "reply": "Gut."]]]
    }

    @Test func aTranscriptionOneWordOffPassesWithMaxWERAndFailsWithout() throws {
        let oneOff = transcribed("Guten Morgen! Wie geht es dir heute? Ich lebe Deutsch.")
        let rule = #","text":{"turns[*].transcription":{"maxWER":0.15}}"#
        #expect(try check(oneOff, rule: rule).passed)
        let strict = try check(oneOff, rule: "")
        #expect(!strict.passed)
        #expect(strict.message.contains(#"turns[0].transcription: "Guten Morgen! Wie geht es dir heute? Ich lebe"#))
        // Two words off of ten is over 0.15, and the message gives the rate.
        let twoOff = try check(transcribed("Guten Morgen! Wie geht es dir heute? Ich werde heute."), rule: rule)
        #expect(!twoOff.passed)
        #expect(twoOff.message.contains("(WER 0.200 > 0.150)"), "\(twoOff.message)")
        // Other fields are still compared exactly, and a missing transcription still fails.
        let otherReply: JSONValue = [
            "turns": [
                [
                    "turn": 1, "transcription": "Guten Morgen! Wie geht es dir heute? Ich lerne Deutsch.",
                    "reply": "Nein.",
                ]
            ]
        ]
        #expect(try !check(otherReply, rule: rule).passed)
        let missing: JSONValue = ["turns": [["turn": 1, "reply": "Gut."]]]
        let gone = try check(missing, rule: rule)
        #expect(!gone.passed && gone.message.contains("turns[0].transcription: missing"))
    }

    @Test func aBadTextRuleNamesItsPath() throws {
        let dir = temporaryDirectory()
        let url = dir.appendingPathComponent("s.check.json")
        try Data(
            (#"{"spec":"p.json","inputs":["in"],"expect":[{"item":"a","output":"r.json","golden":true,"#
                + #""text":{"turns[*].transcription":{"maxWERR":0.2}}}]}"#).utf8
        ).write(to: url)
        #expect(throws: VoxError.self) { try Suite.load(url) }
        do {
            _ = try Suite.load(url)
        } catch let e as VoxError {
            #expect(e.message.hasSuffix(#"expect[0].text.turns[*].transcription: expected {"maxWER": a number ≥ 0}"#))
        }
    }
}

@Suite struct AudioGoldenTests {
    /// One second of a 440 Hz sine at 48 kHz, `gain` dB from -12 dBFS peak.
    func tone(gain: Double) -> (format: AudioFormat, samples: [Float]) {
        let a = 0.25 * pow(10, gain / 20)
        return (
            AudioFormat(sampleRate: 48000, channels: 1),
            (0..<48000).map { Float(a * sin(2 * Double.pi * 440 * Double($0) / 48000)) }
        )
    }

    @Test func aGoldenOneDecibelLouderFailsAHalfDecibelToleranceAndPassesTwo() {
        let strict = AudioGolden.measure(
            actual: tone(gain: 1), golden: tone(gain: 0), tolerance: AudioTolerance(rmsDB: 0.5))
        let rms = strict.first { $0.metric == "rms" }
        #expect(rms?.passed == false && abs((rms?.value ?? 0) - 1) < 0.001)
        #expect(rms?.message == "RMS -14.05 dBFS, golden -15.05 dBFS: differs by 1.00 dB (allowed 0.50 dB)")
        let lenient = AudioGolden.measure(
            actual: tone(gain: 1), golden: tone(gain: 0), tolerance: AudioTolerance(rmsDB: 2))
        #expect(lenient.map(\.passed) == [true, true])
    }

    @Test func lengthAndTheSNROfTheDifferenceAreMeasured() {
        var short = tone(gain: 0)
        short.samples.removeLast(10)
        let m = AudioGolden.measure(
            actual: short, golden: tone(gain: 0), tolerance: AudioTolerance(durationSamples: 5, rmsDB: 1, snrDB: 40))
        #expect(m.map(\.metric) == ["duration", "rms", "snr"])
        #expect(m[0].passed == false && m[0].value == 10)
        #expect(m[2].passed && m[2].value == .infinity)
        // A golden 1 dB louder: the difference is 1 - 10^(-1/20) of the signal, an SNR of about 19.3 dB.
        let louder = AudioGolden.measure(
            actual: tone(gain: 0), golden: tone(gain: 1), tolerance: AudioTolerance(rmsDB: 2, snrDB: 20))
        #expect(louder[2].passed == false && abs(louder[2].value - 19.27) < 0.05)
        let other = AudioGolden.measure(
            actual: (AudioFormat(sampleRate: 16000, channels: 1), [0]), golden: tone(gain: 0),
            tolerance: AudioTolerance())
        #expect(other.count == 1 && other[0].message == "format 16000 Hz, 1 ch but the golden is 48000 Hz, 1 ch")
    }
}

@Suite struct SuiteTests {
    func load(_ json: String) throws -> Suite {
        let url = temporaryDirectory().appendingPathComponent("s.check.json")
        try Data(json.utf8).write(to: url)
        return try Suite.load(url)
    }

    func error(_ json: String) -> String? {
        do {
            _ = try load(json)
            return nil
        } catch let e as VoxError {
            return e.code == .invalidSpec ? String(e.message.split(separator: ": ", maxSplits: 1)[1]) : "\(e)"
        } catch { return "\(error)" }
    }

    @Test func aSuiteReadsItsSpecInputsBudgetsAndExpectations() throws {
        let suite = try load(
            #"{"spec":"p.json","inputs":["in"],"budgets":{"maxRealTimeFactor":1.5},"expect":[{"item":"a*","#
                + #""output":"t.txt","referenceText":"hallo","wer":0.1},{"item":"b","output":"r.json","golden":true,"#
                + #""ignore":["x"],"tolerance":{"y":0.5}},{"item":"c","output":"s.wav","golden":"g/{item}.wav","#
                + #""audio":{"rmsDB":0.5}}]}"#
        )
        #expect(
            suite.spec.lastPathComponent == "p.json" && suite.inputs.map(\.lastPathComponent) == ["in"]
                && suite.budgets.maxRealTimeFactor == 1.5)
        #expect(suite.expectations.count == 3)
        #expect(suite.goldenURL(nil, item: "b", output: "r.json").path.hasSuffix("/goldens/b/r.json"))
        #expect(suite.goldenURL("g/{item}.wav", item: "c", output: "s.wav").path.hasSuffix("/g/c.wav"))
    }

    @Test func aBadSuiteNamesTheJSONPath() {
        #expect(error(#"{"inputs":["in"],"expect":[]}"#) == "spec: expected the path of a job spec")
        #expect(
            error(
                #"{"spec":"p.json","inputs":["in"],"expect":[{"item":"a","output":"t.txt","wer":"low","#
                    + #""referenceText":"x"}]}"#
            )
                == "expect[0].wer: expected a number ≥ 0, got a string")
        #expect(
            error(#"{"spec":"p.json","inputs":["in"],"expect":[{"item":"a","output":"t.txt","wer":0.1}]}"#)
                == #"expect[0].reference: a wer/cer check needs a reference file ("reference", {item} allowed) or "#
                + #""referenceText""#
        )
        #expect(
            error(
                #"{"spec":"p.json","inputs":["in"],"expect":[{"item":"a","output":"t.txt","golden":true,"#
                    + #""matches":"x"}]}"#
            )
                == "expect[0]: expected exactly one check: wer/cer (with a reference), golden, audio (with golden), "
                + "matches, or intelligible"
        )
        #expect(
            error(#"{"spec":"p.json","inputs":["in"],"budgets":{"maxWERR":1},"expect":[]}"#)
                == "budgets.maxWERR: unknown field (known: maxFailedItems, maxRealTimeFactor, maxWER, maxCER)")
        #expect(
            error(#"{"spec":"p.json","inputs":["in"],"expect":[{"item":"a","output":"t.txt","matches":"(unclosed"}]}"#)?
                .hasPrefix("expect[0].matches: invalid regular expression") == true)
    }
}

@Suite struct BudgetTests {
    @Test func budgetsFailOnFailedItemsARealTimeFactorOverTheLimitAndPooledWER() throws {
        let url = temporaryDirectory().appendingPathComponent("s.check.json")
        let json =
            #"{"spec":"p.json","inputs":["in"],"budgets":{"maxFailedItems":0,"maxRealTimeFactor":0.5,"maxWER":0.2},"#
            + #""expect":[]}"#
        try Data(json.utf8).write(to: url)
        let suite = try Suite.load(url)
        let items = [
            CheckedItem(name: "a", status: "done", seconds: 4, audioSeconds: 10),
            CheckedItem(name: "b", status: "failed", failure: "decode (decode): not audio", seconds: 1),
        ]
        let slow = Checker(suite: suite, outputDirectory: temporaryDirectory(), items: items, wallSeconds: 6).evaluate()
        #expect(slow.results.map(\.name) == ["budget maxFailedItems", "budget maxRealTimeFactor", "budget maxWER"])
        #expect(slow.results.map(\.passed) == [false, false, true])
        #expect(slow.results[0].message == "1 item failed (max 0): b: decode (decode): not audio")
        #expect(slow.results[1].message == "real-time factor 0.600 over 1 items (6.0 s for 10.0 s of audio; max 0.500)")
        let fast = Checker(suite: suite, outputDirectory: temporaryDirectory(), items: items, wallSeconds: 4).evaluate()
        #expect(fast.results[1].passed)
    }

    @Test func aFailedItemsExpectationNamesItsErrorCategoryAndCodeInTheJSONSummary() throws {
        let url = temporaryDirectory().appendingPathComponent("s.check.json")
        try Data(#"{"spec":"p.json","inputs":["in"],"expect":[{"item":"b","output":"t.txt","matches":"x"}]}"#.utf8)
            .write(to: url)
        let suite = try Suite.load(url)
        let items = [
            CheckedItem(
                name: "b", status: "failed", failure: "decode (decode): not audio", category: "badInput",
                code: "decode.unreadable")
        ]
        let outcome = Checker(suite: suite, outputDirectory: temporaryDirectory(), items: items).evaluate()
        let result = try #require(outcome.results.first)
        #expect(!result.passed && result.code == "decode.unreadable" && result.category == "badInput")
        #expect(result.message == "the item failed (decode.unreadable): decode (decode): not audio")
        let summary = try #require(try JSONValue.parse(CheckReports.json(outcome, suite: suite)).objectValue)
        let first = try #require(summary["results"]?.arrayValue?.first?.objectValue)
        #expect(first["code"] == "decode.unreadable" && first["category"] == "badInput")
    }
}
