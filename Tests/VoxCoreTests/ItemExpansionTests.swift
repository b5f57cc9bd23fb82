import Foundation
import Logging
import Synchronization
import Testing
import VoxTestSupport

@testable import VoxCore

extension ItemFactKey where Value == String {
    /// A test fact: the item's name, as the expansion learnt it.
    fileprivate static var learntName: Self { Self("learntName") }
}

/// Splits a file into `parts` stretches of one second each, and learns each one's name, failing
/// those whose name holds `refuse`.
private struct Seconds: ItemExpansion {
    var parts: Int
    var refuse: String?

    func expand(_ file: InputFile) throws -> [InputFile]? {
        (0..<parts).map { i in
            file.forPart(named: "s\(i)") { $0.span = ItemPart.Span(start: Double(i), end: Double(i + 1)) }
        }
    }

    func learnFacts(of item: InputFile, into facts: ItemFacts, logger: Logger) throws {
        if let refuse, item.displayName.contains(refuse) {
            throw ModuleError<ToneSource.Failure>(.badData, "no facts for \(item.displayName)")
        }
        facts[.learntName] = item.displayName
    }
}

/// A source that declares the `Seconds` expansion and gives one block at its part's start.
private struct PartingSource: Stage {
    typealias Input = InputFile
    typealias Output = AudioBlock
    typealias Configuration = Seconds
    static let kind = "parting-source"
    static let summary = "test source that declares an item expansion"
    static let options = [
        OptionSpec("parts", .integer(0...10), default: 2, help: "parts per file"),
        OptionSpec("refuse", .string, help: "parts whose name holds this learn nothing and fail"),
    ]
    static let factsGiven = ItemFact.list(.learntName)
    static func configure(_ options: StageOptions) throws -> Seconds {
        Seconds(parts: options.int("parts") ?? 2, refuse: options.string("refuse"))
    }
    static func declarations(_ configuration: Seconds) -> StageDeclarations {
        StageDeclarations().declaring(.itemExpansion, configuration)
    }
    init(id: String, configuration: Seconds, context: StageContext) {}
    func run(_ input: Inbox<InputFile>, _ output: Outbox<AudioBlock>, _ item: ItemContext) async throws {
        for try await file in input {
            let start = Int64(file.part?.span?.start ?? -1)
            try await output.send(
                AudioBlock(format: AudioFormat(sampleRate: 1, channels: 1), samples: [0], frameOffset: start))
        }
    }
}

/// Writes `<learnt name> @ <frame offset>` for its item.
private struct NameWriter: Stage {
    typealias Input = AudioBlock
    typealias Output = Artifact
    typealias Configuration = Int
    static let kind = "name-writer"
    static let summary = "test writer of the learnt name"
    static let options: [OptionSpec] = []
    static let factsUsed = ItemFact.list(.learntName)
    static func configure(_ options: StageOptions) throws -> Int { 0 }
    init(id: String, configuration: Int, context: StageContext) {}
    func run(_ input: Inbox<AudioBlock>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        var offsets: [Int64] = []
        for try await block in input { offsets.append(block.frameOffset) }
        let url = try item.outputs.reserve(name: "name.txt")
        try Data("\(item.facts[.learntName] ?? "none") @ \(offsets)".utf8).write(to: url)
    }
}

private final class Events: RunObserver {
    let splits = Mutex<[String]>([])
    func handle(_ event: RunEvent) {
        if case .itemSplit(let file, let parts) = event {
            splits.withLock { $0.append("\(file.displayName) \(parts)") }
        }
    }
}

/// The item-expansion role: whatever stage declares it makes a file's items and learns their facts.
@Suite struct ItemExpansionTests {
    func runner(_ options: String, output: URL) async throws -> Runner {
        let spec = #"{"stages":[{"id":"src","kind":"parting-source"\#(options)},{"id":"w","kind":"name-writer"}]}"#
        let plan = try Planner.plan(
            data: Data(spec.utf8), baseDirectory: URL(fileURLWithPath: "/tmp"),
            registry: StageRegistry([StageKind(PartingSource.self), StageKind(NameWriter.self)]))
        return try await Runner.prepare(
            plan, options: RunOptions(outputDirectory: output, jobs: 1),
            context: StageContext(logger: Logger(label: "t")))
    }

    let file = InputFile(url: URL(fileURLWithPath: "/nonexistent/a.wav"), relativePath: "a.wav", outputName: "a")

    @Test func theDeclaringStageMakesAFilesItemsAndWhatItLearntOfEachReachesTheWriter() async throws {
        let out = temporaryDirectory()
        let events = Events()
        let results = try await runner(#", "parts": 3"#, output: out).run([file], observer: events)
        #expect(results.map(\.item.displayName) == ["a.wav#s0", "a.wav#s1", "a.wav#s2"])
        #expect(results.map(\.status) == [.done, .done, .done])
        #expect(events.splits.withLock { $0 } == ["a.wav 3"])
        for i in 0..<3 {
            let text = try String(contentsOf: out.appendingPathComponent("a/s\(i)/name.txt"), encoding: .utf8)
            #expect(text == "a.wav#s\(i) @ [\(i)]")
        }
    }

    @Test func anItemWhoseFactsCannotBeLearntFailsAloneAtTheDeclaringStage() async throws {
        let out = temporaryDirectory()
        let results = try await runner(#", "refuse": "s1""#, output: out).run([file])
        #expect(results.map(\.status) == [.done, .failed])
        #expect(
            results[1].failure == StageFailure(stageID: "src", kind: "parting-source", reason: "no facts for a.wav#s1"))
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("a/s1").path))
    }

    @Test func aFileTheExpansionMakesNoItemsOfRunsNothing() async throws {
        let results = try await runner(#", "parts": 0"#, output: temporaryDirectory()).run([file])
        #expect(results.isEmpty)
    }
}
