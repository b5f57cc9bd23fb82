import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxWrite

/// `write-records` alone: a session's turns in, one JSON file per record type and rejected.json out.
@Suite struct WriteRecordsStageTests {
    /// What a plan tells the writer: the agent stage upstream declares these record types.
    let provenance = Provenance(stages: [["id": "agents", "kind": "agent", "recordTypes": ["contact", "job"]]])

    func write(_ turns: [AgentTurn], into out: URL) async throws -> [Artifact] {
        let harness = try StageHarness(
            WriteRecordsStage.self, id: "records", outputDirectory: out, provenance: provenance)
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

    @Test func aKeyInUseIsRedactedFromTheRecords() async throws {
        let out = temporaryDirectory()
        let secrets = Secrets()
        secrets.register("sk-live-0123456789")
        var session = agentSession()
        session[1].calls[0].arguments = ["name": "Ana", "note": "key sk-live-0123456789"]
        let harness = try StageHarness(
            WriteRecordsStage.self, id: "records", outputDirectory: out, provenance: provenance, secrets: secrets)
        _ = try await harness.run(session)
        let contacts = try file(out, "contact.json").json
        #expect(contacts.arrayValue?.first?.objectValue?["record"]?.objectValue?["note"] == "key [redacted]")
    }
}
