import Foundation
import Logging
import Testing
import VoxReports
import VoxTestSupport

@testable import VoxCore

/// A source that tells the runner who spoke when, as a speaker chunker does: the turns of its
/// `turns` option ("who start end" each, comma-separated) counted into `facts[.speakerTalk]`.
struct TalkingSource: Stage {
    typealias Input = InputFile
    typealias Output = AudioBlock
    typealias Configuration = [String]
    static let kind = "talking-source"
    static let summary = "test source that counts speakers' turns"
    static let options = [OptionSpec("turns", .string, help: "turns: \"who start end, …\"")]
    static let factsGiven = ItemFact.list(.speakerTalk)
    static func configure(_ options: StageOptions) throws -> [String] {
        options.string("turns")?.split(separator: ",").map(String.init) ?? []
    }
    let id: String
    let turns: [String]
    init(id: String, configuration: [String], context: StageContext) {
        self.id = id
        turns = configuration
    }
    func run(_ input: Inbox<InputFile>, _ output: Outbox<AudioBlock>, _ item: ItemContext) async throws {
        for try await _ in input {
            var tally = SpeakerTally(joinGap: 0.5)
            for turn in turns {
                let parts = turn.split(separator: " ").map(String.init)
                let who = parts.dropLast(2).joined(separator: " ")
                tally.add(who, start: Double(parts[parts.count - 2]) ?? 0, end: Double(parts[parts.count - 1]) ?? 0)
            }
            item.facts[.speakerTalk] = tally
            try await output.send(
                AudioBlock(format: AudioFormat(sampleRate: 8000, channels: 1), samples: [0.5], frameOffset: 0))
        }
    }
}

/// Each speaker's talk time and turns, counted as turns come and given in the item's report line
/// and manifest.
@Suite struct SpeakerTalkTests {
    @Test func turnsAreCountedPerSpeakerInOrderOfFirstAppearanceAndSecondsRoundedToTheMillisecond() {
        var tally = SpeakerTally(joinGap: 0.5)
        tally.add("Speaker 2", start: 0.5, end: 2.0004)
        tally.add("Tutor", start: 2.6, end: 5.1)
        tally.add("Speaker 2", start: 5.9, end: 7.25)
        // Within half a second of the same speaker's turn: the turn goes on (a block's end cut it).
        tally.add("Speaker 2", start: 7.6, end: 8.0)
        // Nothing spoken: not a turn.
        tally.add("Tutor", start: 9, end: 9)
        #expect(
            tally.report == [
                SpeakerTalk(speaker: "Speaker 2", seconds: 3.25, turns: 2),
                SpeakerTalk(speaker: "Tutor", seconds: 2.5, turns: 1),
            ])
    }

    @Test func aTurnOfTheSameSpeakerAfterALongerPauseIsATurnOfItsOwn() {
        var tally = SpeakerTally(joinGap: 0.5)
        tally.add("Speaker 1", start: 0, end: 1)
        tally.add("Speaker 1", start: 1.6, end: 2)
        #expect(tally.report == [SpeakerTalk(speaker: "Speaker 1", seconds: 1.4, turns: 2)])
    }

    func plan(_ turns: [String]) throws -> Plan {
        let spec: JSONValue = [
            "stages": [
                ["id": "src", "kind": "talking-source", "turns": .string(turns.joined(separator: ","))],
                ["id": "g", "kind": "gain"],
            ]
        ]
        return try Planner.plan(
            data: spec.canonicalData(), baseDirectory: URL(fileURLWithPath: "/tmp"),
            registry: StageRegistry([StageKind(TalkingSource.self), StageKind(Gain.self)]))
    }

    /// The report line of one item run through `plan` into `out` (its wall-clock seconds zeroed).
    func reportLine(_ plan: Plan, _ input: URL, into out: URL) async throws -> String {
        let runner = try await Runner.prepare(
            plan,
            options: RunOptions(
                outputDirectory: out, jobs: 1, ledger: Ledger(outputDirectory: out, fingerprint: "fp", version: "1")),
            context: StageContext(logger: Logger(label: "test")))
        let item = InputFile(url: input, relativePath: "lesson.wav", outputName: "lesson")
        var results = await runner.run([item])
        results[0].seconds = 0
        return String(decoding: ReportLine.jsonLines(results.map(ReportLine.init)), as: UTF8.self)
    }

    @Test func theReportLineOfAnItemWithSpeakersGivesEachOnesTalkTimeAndTurnsAndARerunSkippingItToo() async throws {
        let dir = temporaryDirectory()
        let input = dir.appendingPathComponent("lesson.wav")
        try Data("audio".utf8).write(to: input)
        let out = dir.appendingPathComponent("out")
        let plan = try plan(["Tutor 0.2 3.1", "Speaker 1 3.5 4.75", "Tutor 5.5 6", "Speaker 1 7 9.3333"])
        let line = try await reportLine(plan, input, into: out)
        #expect(
            line
                == #"{"artifacts":[],"input":"\#(input.path)","output":"lesson","path":"lesson.wav","#
                + #""reason":"not done before","seconds":0,"speakers":[{"seconds":3.4,"speaker":"Tutor","turns":2},"#
                + #"{"seconds":3.583,"speaker":"Speaker 1","turns":2}],"status":"done"}"# + "\n")
        // Run again: skipped, with the speakers the manifest kept.
        let again = try await reportLine(plan, input, into: out)
        #expect(again.contains(#""status":"skipped""#), "\(again)")
        #expect(again.contains(#""speakers":[{"seconds":3.4,"speaker":"Tutor","turns":2},"#), "\(again)")
    }

    @Test func anItemWithoutSpeakersHasNoSpeakersInItsReportLine() {
        let item = InputFile(url: URL(fileURLWithPath: "/in/a.wav"), relativePath: "a.wav", outputName: "a")
        let line = ReportLine(ItemResult(item: item, status: .done, seconds: 1))
        #expect(
            String(decoding: ReportLine.jsonLines([line]), as: UTF8.self)
                == #"{"artifacts":[],"input":"/in/a.wav","output":"a","path":"a.wav","seconds":1,"status":"done"}"#
                + "\n")
    }

    @Test func theMergedReportShowsEachItemsSpeakers() throws {
        let speakers = [
            SpeakerTalk(speaker: "Tutor", seconds: 12.345, turns: 5),
            SpeakerTalk(speaker: "Speaker 1", seconds: 3, turns: 1),
        ]
        let lines = [
            ReportLine(path: "b.wav", input: "/in/b.wav", output: "b", status: .done, seconds: 1, speakers: speakers),
            ReportLine(path: "a.wav", input: "/in/a.wav", output: "a", status: .done, seconds: 1),
        ]
        let parsed = try ReportLine.parse(ReportLine.jsonLines(lines), file: "r.jsonl")
        #expect(parsed == lines)
        let merged = try ReportMerge(reports: [ReportMerge.Report(name: "r.jsonl", lines: parsed)])
        #expect(
            merged.summary() == """
                1 report, 2 items: 2 done, 0 skipped, 0 failed
                  r.jsonl: 2 items: 2 done, 0 skipped, 0 failed
                speakers:
                  b: Tutor 12.3 s in 5 turns, Speaker 1 3.0 s in 1 turn
                """)
        let json = try JSONDecoder().decode(JSONValue.self, from: merged.json())
        #expect(
            json.objectValue?["speakers"]
                == [
                    [
                        "output": "b",
                        "speakers": [
                            ["speaker": "Tutor", "seconds": 12.345, "turns": 5],
                            ["speaker": "Speaker 1", "seconds": 3, "turns": 1],
                        ],
                    ]
                ])
    }
}
