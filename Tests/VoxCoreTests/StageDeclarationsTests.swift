import Foundation
import Logging
import Testing
import VoxTestSupport

@testable import VoxCore

extension StageDeclarationKey where Value == String {
    /// A declaration only these tests make.
    static var label: Self { Self("label") }
}

/// A pass-through stage that declares its `label` option, when it has one, for the stages it feeds.
struct Labelled: Stage {
    typealias Input = AudioBlock
    typealias Output = AudioBlock
    typealias Configuration = String?
    static let kind = "labelled"
    static let summary = "test stage declaring a label"
    static let options = [OptionSpec("label", .string, help: "what it declares")]
    static func configure(_ options: StageOptions) throws -> String? { options.string("label") }
    static func declarations(_ configuration: String?) -> StageDeclarations {
        configuration.map { StageDeclarations().declaring(.label, $0) } ?? StageDeclarations()
    }
    init(id: String, configuration: String?, context: StageContext) {}
    func run(_ input: Inbox<AudioBlock>, _ output: Outbox<AudioBlock>, _ item: ItemContext) async throws {
        for try await block in input { try await output.send(block) }
    }
}

/// A writer that needs a label from every stage it reads from, and writes the ones its context
/// hands it (`<id>: label`) to `<id>.txt`.
struct LabelWriter: Stage {
    typealias Input = AudioBlock
    typealias Output = Artifact
    typealias Configuration = Int
    static let kind = "label-writer"
    static let summary = "test writer of the labels it is fed from"
    static let options: [OptionSpec] = []
    static let declarationsUsed = StageDeclaration.list(.label)
    static func configure(_ options: StageOptions) throws -> Int { 0 }
    let id: String
    let labels: String
    init(id: String, configuration: Int, context: StageContext) {
        self.id = id
        labels = context.upstream.map { "\($0.id): \($0.declarations[.label] ?? "-")" }.joined(separator: ", ")
    }
    func run(_ input: Inbox<AudioBlock>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        for try await _ in input {}
        try Data(labels.utf8).write(to: try item.outputs.reserve(name: "\(id).txt"))
    }
}

/// Stage declarations: typed values a stage kind declares from its configuration; the planner
/// checks that a stage's inputs declare what it needs, and the runner hands each stage those of
/// the stages it reads from.
@Suite struct StageDeclarationsTests {
    let registry = StageRegistry([StageKind(ToneSource.self), StageKind(Labelled.self), StageKind(LabelWriter.self)])

    func plan(_ stages: String) throws -> Plan {
        try Planner.plan(
            data: Data(#"{"stages":[{"id":"src","kind":"tone"},"#.utf8) + Data(stages.utf8) + Data("]}".utf8),
            baseDirectory: URL(fileURLWithPath: "/tmp"), registry: registry)
    }

    @Test func eachStageIsHandedWhatTheStagesItReadsFromDeclareAndNoOthers() async throws {
        let out = temporaryDirectory()
        let runner = try await Runner.prepare(
            try plan(
                #"{"id":"a","kind":"labelled","label":"A"},{"id":"b","kind":"labelled","label":"B"},"#
                    + #"{"id":"one","kind":"label-writer"},{"id":"two","kind":"label-writer","from":["b","a"]}"#),
            options: RunOptions(outputDirectory: out, jobs: 1), context: StageContext(logger: Logger(label: "test")))
        let item = InputFile(url: URL(fileURLWithPath: "/nonexistent/x.wav"), relativePath: "x.wav", outputName: "x")
        #expect(await runner.run([item]).map(\.status) == [.done])
        #expect(try String(contentsOf: out.appendingPathComponent("x/one.txt"), encoding: .utf8) == "b: B")
        #expect(try String(contentsOf: out.appendingPathComponent("x/two.txt"), encoding: .utf8) == "b: B, a: A")
    }

    @Test func aStageFedFromOneThatDoesNotDeclareWhatItNeedsFailsAtLoadNamingTheEdge() throws {
        #expect(
            throws: VoxError(
                .invalidSpec,
                "stages[3].from: label-writer needs label declared by every stage it reads from, but 'b' (labelled) "
                    + "declares none (stage 'w')")
        ) {
            try plan(
                #"{"id":"a","kind":"labelled","label":"A"},{"id":"b","kind":"labelled"},"#
                    + #"{"id":"w","kind":"label-writer","from":["a","b"]}"#)
        }
        // `from` left out is the stage before: the path is the stage's.
        #expect(
            throws: VoxError(
                .invalidSpec,
                "stages[2]: label-writer needs label declared by every stage it reads from, but 'a' (labelled) "
                    + "declares none (stage 'w')")
        ) {
            try plan(#"{"id":"a","kind":"labelled"},{"id":"w","kind":"label-writer"}"#)
        }
    }

    @Test func provenanceRecordsAreFoundByTheRoleTheirStagesDeclare() {
        let provenance = Provenance(stages: [
            PlannedStage(
                id: "a", kind: "labelled", declarations: StageDeclarations().declaring(.label, "A"),
                provenance: ["engine": "x"]),
            PlannedStage(id: "b", kind: "labelled", provenance: ["engine": "y"]),
            PlannedStage(id: "c", kind: "other", declarations: StageDeclarations().declaring(.label, "C")),
            PlannedStage(
                id: "d", kind: "other", declarations: StageDeclarations().declaring(.label, "D"), provenance: [:]),
        ])
        #expect(
            provenance.records(declaring: .label) == [
                ["engine": "x", "id": "a", "kind": "labelled"], ["id": "d", "kind": "other"],
            ])
        #expect(provenance.records.count == 3, "c contributes no provenance record")
    }
}
