import Foundation
import Testing
import VoxCore
import VoxFieldService
import VoxTestSupport
import VoxTesting

@testable import VoxAgent

/// `agent` with `speaker`: the agent reads the customer only, in a call whose chunks a speaker
/// chunker labelled; what the field agent says on the call goes into no record.
extension AgentStageTests {
    static let call: [(String, String)] = [
        ("Customer", "Hello, this is John Miller."),
        ("Speaker 1", "Hi, this is Bob Smith from the service team."),
        ("Customer", "The heating is broken at 42 Main Street, it is urgent."),
    ]

    func run(call: [(String, String)], speaker: String?) async throws -> [AgentTurn] {
        var options: [String: JSONValue] = [
            "provider": ["name": "rules"], "records": .string("Pipelines/field-service"),
        ]
        if let speaker { options["speaker"] = .string(speaker) }
        let harness = try StageHarness(AgentStage.self, options: options, baseDirectory: packageRoot)
        let facts = ItemFacts()
        facts[.session] = SessionSidecar(fields: ["startedAt": "2026-03-02T09:15:00Z"])
        let lines = call.enumerated().map { i, line in
            var t = transcript(line.1, index: i)
            t.chunk.cut = .speaker
            t.chunk.speaker = line.0
            return t
        }
        return try await harness.run(lines, commit: false, facts: facts).outputs
    }

    @Test func withASpeakerSetTheAgentReadsOnlyThatSpeakersTurns() async throws {
        let turns = try await run(call: Self.call, speaker: "Customer")
        #expect(turns.map(\.reply.transcript.chunk.index) == [0, 2])
        #expect(turns.map(\.turn) == [0, 1])
        #expect(records(turns)["job"]?.objectValue?["customerName"] == "John Miller")
    }

    @Test func withoutASpeakerTheFieldAgentsOwnWordsGoIntoTheRecord() async throws {
        let turns = try await run(call: Self.call, speaker: nil)
        #expect(turns.map(\.reply.transcript.chunk.index) == [0, 1, 2])
        #expect(records(turns)["job"]?.objectValue?["customerName"] == "Bob Smith")
    }
}

extension AgentStageTests {
    @Test func aServedTurnIsReadWhateverSpeakerTheSpecNames() throws {
        let options = try StageOptions.validated(
            ["provider": ["name": "rules"], "records": "Pipelines/field-service", "speaker": "Customer"],
            against: AgentStage.options, stageID: "agents", path: "stages[0]", owner: AgentStage.kind,
            baseDirectory: packageRoot)
        let configuration = try AgentStage.configure(options)
        #expect(configuration.speaker == "Customer")
        #expect(AgentStage.oneTurn(configuration, maxSeconds: 30).speaker == nil)
    }
}
