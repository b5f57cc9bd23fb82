import Foundation
import Testing
import VoxCore
import VoxFieldService
import VoxTestSupport
import VoxTesting

@testable import VoxWrite

/// A first stage giving agent turns, declaring the record types of its `recordTypes` option
/// only when it has one: what the planner checks write-records against.
struct StubAgent: Stage {
    typealias Input = InputFile
    typealias Output = AgentTurn
    typealias Configuration = [String]?
    static let kind = "stub-agent"
    static let summary = "test agent"
    static let options = [OptionSpec("recordTypes", .choices(["contact", "job"]), help: "what it declares")]
    static func configure(_ options: StageOptions) throws -> [String]? { options.strings("recordTypes") }
    static func declarations(_ configuration: [String]?) -> StageDeclarations {
        configuration.map { StageDeclarations().declaring(.recordTypes, $0) } ?? StageDeclarations()
    }
    init(id: String, configuration: [String]?, context: StageContext) {}
    func run(_ input: Inbox<InputFile>, _ output: Outbox<AgentTurn>, _ item: ItemContext) async throws {
        for try await _ in input {}
    }
}

/// `write-records` alone: a session's turns in, one JSON file per record type and rejected.json out.
@Suite struct WriteRecordsStageTests {
    /// What a plan tells the writer: the agent stage it reads from declares these record types.
    let upstream = [
        PlannedStage(
            id: "agents", kind: "agent", declarations: StageDeclarations().declaring(.recordTypes, ["contact", "job"]))
    ]

    func write(_ turns: [AgentTurn], into out: URL) async throws -> [Artifact] {
        let harness = try StageHarness(
            WriteRecordsStage.self, id: "records", outputDirectory: out, upstream: upstream)
        return try await harness.run(turns).outputs
    }

    func file(_ out: URL, _ name: String) throws -> (json: JSONValue, endsWithNewline: Bool) {
        let data = try Data(contentsOf: out.appendingPathComponent("item/records/\(name)"))
        return (try JSONValue.parse(data), data.last == 0x0A)
    }

    @Test func savedCallsGoToTheirTypesFileAndRejectedOnesOnlyToRejectedJSON() async throws {
        let out = temporaryDirectory()
        let artifacts = try await write(agentSession(), into: out)
        #expect(
            artifacts.map(\.path) == [
                "item/records/contact.json", "item/records/job.json", "item/records/rejected.json",
            ])
        #expect(try artifactsMatchTheirFiles(artifacts, under: out))
        let contacts = try file(out, "contact.json")
        #expect(
            contacts.json == [
                [
                    "callId": "c1", "id": "rec-1", "record": ["name": "Ana", "phone": "555 0100"], "turn": 2,
                    "start": 3, "end": 5.125,
                ]
            ])
        #expect(contacts.endsWithNewline)
        #expect(try file(out, "job.json").json == [], "a declared type with nothing saved is an empty list")
        let rejected = try file(out, "rejected.json")
        #expect(
            rejected.json == [
                [
                    "callId": "c2", "name": "save_contact", "recordId": "rec-2", "path": "$", "error": "not JSON",
                    "rawArguments": "{oops", "turn": 2, "start": 3, "end": 5.125,
                ],
                [
                    "callId": "c3", "name": "save_contact", "recordId": "rec-3", "path": "$.name",
                    "error": "expected a string, got a number", "arguments": ["name": 5], "turn": 2, "start": 3,
                    "end": 5.125,
                ],
            ])
        #expect(rejected.endsWithNewline)
    }

    @Test func anItemWithNoTurnsStillWritesEveryDeclaredTypeEmpty() async throws {
        let out = temporaryDirectory()
        let artifacts = try await write([], into: out)
        #expect(
            artifacts.map(\.path) == [
                "item/records/contact.json", "item/records/job.json", "item/records/rejected.json",
            ])
        for name in ["contact.json", "job.json", "rejected.json"] { #expect(try file(out, name).json == []) }
    }

    @Test func fedFromAStageThatDeclaresNoRecordTypesItFailsAtLoadNamingTheEdge() throws {
        let registry = StageRegistry([StageKind(StubAgent.self), StageKind(WriteRecordsStage.self)])
        func plan(_ agent: String) throws -> Plan {
            try Planner.plan(
                data: Data(
                    (#"{"stages":[{"id":"turns","kind":"stub-agent"\#(agent)},"#
                        + #"{"id":"records","kind":"write-records","from":"turns"}]}"#).utf8),
                baseDirectory: URL(fileURLWithPath: "/tmp"), registry: registry)
        }
        #expect(
            throws: VoxError(
                .invalidSpec,
                "stages[1].from: write-records needs recordTypes declared by every stage it reads from, but 'turns' "
                    + "(stub-agent) declares none (stage 'records')")
        ) { try plan("") }
        let declared = try plan(#","recordTypes":["job"]"#)
        #expect(declared.plannedStages.map { $0.declarations[.recordTypes] } == [["job"], nil])
    }

    @Test func aKeyInUseIsRedactedFromTheRecords() async throws {
        let out = temporaryDirectory()
        let secrets = Secrets()
        secrets.register("sk-live-0123456789")
        var session = agentSession()
        session[1].calls[0].arguments = ["name": "Ana", "note": "key sk-live-0123456789"]
        let harness = try StageHarness(
            WriteRecordsStage.self, id: "records", outputDirectory: out, upstream: upstream, secrets: secrets)
        _ = try await harness.run(session)
        let contacts = try file(out, "contact.json").json
        #expect(contacts.arrayValue?.first?.objectValue?["record"]?.objectValue?["note"] == "key [redacted]")
    }
}
