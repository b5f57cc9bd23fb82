import Foundation
import Testing
import VoxChunk
import VoxCore
import VoxStages
import VoxTestSupport
import VoxTesting
import VoxTranscribe

@testable import VoxServe

@Suite struct TutorPipelineTests {
    let registry = StageRegistry(voxpipeStageKinds)

    /// The translating plan is a typed transform of the checked one: its whisper stage translates,
    /// nothing else changes, and a plan whose recogniser cannot translate has no such variant.
    @Test func theTranslatingPlanChangesOnlyTheWhisperStagesTask() throws {
        let spec = try JSONValue.parse(Data(contentsOf: lessonTutor))
        let plan = try Planner.plan(
            json: spec, baseDirectory: lessonTutor.deletingLastPathComponent(), registry: registry)
        func whisper(_ plan: Plan) throws -> WhisperProvider.Settings {
            let asr = try #require(plan.stage("asr")?.configuration as? TranscribeStage.Configuration)
            return try #require(asr.provider.settings as? WhisperProvider.Settings)
        }
        let translating = try #require(plan.translating())
        #expect(try whisper(translating) != whisper(plan))
        #expect(try whisper(translating) == whisper(plan).translating())
        #expect(try whisper(translating).translating() == whisper(translating))
        #expect(translating.nodes.map(\.id) == plan.nodes.map(\.id))
        #expect(translating.canonicalSpec == plan.canonicalSpec)

        let sphinx = try JSONValue.parse(
            Data(
                #"""
                {"stages": [{"id": "decode", "kind": "decode"},
                  {"id": "r", "kind": "resample", "rate": 16000, "channels": 1}, {"id": "c", "kind": "chunk"},
                  {"id": "asr", "kind": "transcribe", "provider": {"name": "pocketsphinx"}}]}
                """#.utf8))
        let other = try Planner.plan(json: sphinx, baseDirectory: temporaryDirectory(), registry: registry)
        #expect(other.translating() == nil)
    }

    /// Given the lesson tutor's spec, then the plan as served is the same checked plan without its
    /// writers, re-linked, with the chunker taking the whole clip; the batch plan keeps its voice turns.
    @Test func theServedPlanTakesTheClipWholeAndLeavesTheWritersOut() throws {
        let spec = try JSONValue.parse(Data(contentsOf: lessonTutor))
        let batch = try Planner.plan(
            json: spec, baseDirectory: lessonTutor.deletingLastPathComponent(), registry: registry)
        let plan = batch.servingOneTurn(maxSeconds: 120)
        #expect(plan.nodes.map(\.id) == ["decode", "mono16k", "turns", "asr", "tutor", "voice"])
        #expect(plan.nodes.map(\.index) == Array(0..<6))
        #expect(plan.nodes.map(\.parents) == [[], [0], [1], [2], [3], [4]])
        #expect(plan.nodes.map(\.children) == [[1], [2], [3], [4], [5], []])
        let turns = try #require(plan.stage("turns")?.configuration as? ChunkStage.Configuration)
        #expect(turns.mode == .whole && turns.seconds == 120)
        let batchTurns = try #require(batch.stage("turns")?.configuration as? ChunkStage.Configuration)
        #expect(batchTurns.mode == .voice)
        #expect(plan.firstStage(giving: .transcript, from: .audioChunk)?.id == "asr")
        #expect(plan.firstStage(giving: .speech)?.id == "voice")
        #expect(plan.canonicalSpec == batch.canonicalSpec)
    }

    @Test func aSpecWithoutAReplyStageCannotBeServed() async throws {
        let spec = try JSONValue.parse(
            Data(
                #"""
                {"stages": [{"id": "decode", "kind": "decode"}, {"id": "resample", "kind": "resample", "rate": 16000},
                  {"id": "turns", "kind": "chunk"}, {"id": "voice", "kind": "write-wav"}]}
                """#.utf8))
        let error = await #expect(throws: TutorError.self) {
            let plan = try Planner.plan(
                json: spec, baseDirectory: temporaryDirectory(), defaultName: "x", registry: registry)
            _ = try await TutorPipeline(
                plan: plan, context: StageContext(logger: CapturedLogs().logger()), maxClipSeconds: 60)
        }
        #expect(error?.code == .unservableSpec && error?.exitCode == 65)
        #expect(
            error?.message == "serve answers with transcribe, reply and synthesize stages, but the spec has no "
                + "transcribe stage")
    }
}
