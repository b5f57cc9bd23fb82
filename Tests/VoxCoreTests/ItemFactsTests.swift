import Foundation
import Logging
import Testing
import VoxTestSupport

@testable import VoxCore

/// A fact only these tests give: which stage stamped the item, and which item it was.
struct Stamp: Sendable, Equatable {
    var by: String
    var item: String
}

extension ItemFactKey where Value == Stamp {
    /// Declared beside its value's type, as a module outside VoxCore would declare its own.
    static var stamp: Self { Self("stamp") }
}

/// A source that stamps each item (as decode gives its format) before it sends a block.
struct StampingSource: Stage {
    typealias Input = InputFile
    typealias Output = AudioBlock
    typealias Configuration = Int
    static let kind = "stamping-source"
    static let summary = "test source that stamps the item"
    static let options: [OptionSpec] = []
    static let factsGiven = ItemFact.list(.stamp)
    static func configure(_ options: StageOptions) throws -> Int { 0 }
    let id: String
    init(id: String, configuration: Int, context: StageContext) { self.id = id }
    func run(_ input: Inbox<InputFile>, _ output: Outbox<AudioBlock>, _ item: ItemContext) async throws {
        for try await file in input {
            item.facts[.stamp] = Stamp(by: id, item: file.outputName)
            try await output.send(
                AudioBlock(format: AudioFormat(sampleRate: 8000, channels: 1), samples: [0.5], frameOffset: 0))
        }
    }
}

/// A writer that records the item's stamp, read typed, in `<id>.txt`.
struct StampWriter: Stage {
    typealias Input = AudioBlock
    typealias Output = Artifact
    typealias Configuration = Int
    static let kind = "stamp-writer"
    static let summary = "test writer of the stamp"
    static let options: [OptionSpec] = []
    static let factsUsed = ItemFact.list(.stamp)
    static func configure(_ options: StageOptions) throws -> Int { 0 }
    let id: String
    init(id: String, configuration: Int, context: StageContext) { self.id = id }
    func run(_ input: Inbox<AudioBlock>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        for try await _ in input {}
        let stamp: Stamp? = item.facts[.stamp]
        let url = try item.outputs.reserve(name: "\(id).txt")
        try Data((stamp.map { "\($0.by) stamped \($0.item)" } ?? "none").utf8).write(to: url)
    }
}

/// Item facts by typed key: a stage gives one, a stage downstream reads it as its own type, and
/// the planner checks the declarations with the keys.
@Suite struct ItemFactsTests {
    let registry = StageRegistry([
        StageKind(ToneSource.self), StageKind(Gain.self), StageKind(StampingSource.self), StageKind(StampWriter.self),
    ])

    func plan(_ json: String) throws -> Plan {
        try Planner.plan(data: Data(json.utf8), baseDirectory: URL(fileURLWithPath: "/tmp"), registry: registry)
    }

    @Test func aFactOneStageGivesIsReadTypedByAStageDownstreamPerItem() async throws {
        let out = temporaryDirectory()
        let runner = try await Runner.prepare(
            try plan(
                #"{"stages":[{"id":"src","kind":"stamping-source"},{"id":"g","kind":"gain"},"#
                    + #"{"id":"w","kind":"stamp-writer"}]}"#),
            options: RunOptions(outputDirectory: out, jobs: 2), context: StageContext(logger: Logger(label: "test")))
        let items = ["a.wav", "b.wav"].map {
            InputFile(
                url: URL(fileURLWithPath: "/nonexistent/\($0)"), relativePath: $0, outputName: String($0.prefix(1)))
        }
        let results = await runner.run(items)
        #expect(results.map(\.status) == [.done, .done])
        #expect(try String(contentsOf: out.appendingPathComponent("a/w.txt"), encoding: .utf8) == "src stamped a")
        #expect(try String(contentsOf: out.appendingPathComponent("b/w.txt"), encoding: .utf8) == "src stamped b")
    }

    @Test func aStageUsingAFactNoStageUpstreamGivesFailsAtLoadNamingTheFact() throws {
        #expect(
            throws: VoxError(
                .invalidSpec,
                "stages[2] 'w': stamp-writer records the item's stamp, which no stage before it gives (given by: "
                    + "stamping-source)")
        ) {
            try plan(
                #"{"stages":[{"id":"src","kind":"tone"},{"id":"g","kind":"gain"},{"id":"w","kind":"stamp-writer"}]}"#)
        }
    }

    @Test func aFactIsReadAsTheTypeItsKeyFixesAndUnsetIsNil() {
        let facts = ItemFacts()
        #expect(facts[.stamp] == nil)
        facts[.stamp] = Stamp(by: "src", item: "a")
        facts[.audioSeconds] = 1.5
        #expect(facts[.stamp] == Stamp(by: "src", item: "a"))
        #expect(facts[.audioSeconds] == 1.5)
        #expect(facts[.sourceFormat] == nil)
        #expect(ItemFact.list(.stamp, .audioSeconds).map(\.name) == ["stamp", "audioSeconds"])
    }
}
