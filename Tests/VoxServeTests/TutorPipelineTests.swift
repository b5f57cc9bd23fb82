import Foundation
import Testing
import VoxCore
import VoxStages
import VoxTestSupport
import VoxTesting

@testable import VoxServe

@Suite struct TutorPipelineTests {
    let registry = StageRegistry(voxpipeStageKinds)

    @Test func theServedSpecTakesTheClipWholeAndLeavesTheWritersOut() throws {
        let spec = try JSONValue.parse(Data(contentsOf: lessonTutor))
        let served = try TutorPipeline.servedSpec(spec, registry: registry, maxClipSeconds: 120)
        let stages = served.objectValue?["stages"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(stages.map { $0["id"]?.stringValue } == ["decode", "mono16k", "turns", "asr", "tutor", "voice"])
        let turns = try #require(stages.first { $0["id"]?.stringValue == "turns" })
        #expect(turns["mode"]?.stringValue == "whole")
        #expect(turns["seconds"]?.numberValue == 120)
        #expect(turns["maxSeconds"] == nil)
        // `from` is explicit, so leaving a stage out changes no one's input.
        #expect(stages.dropFirst().allSatisfy { $0["from"] != nil })
        let plan = try Planner.plan(
            json: served, baseDirectory: lessonTutor.deletingLastPathComponent(), registry: registry)
        #expect(plan.nodes.count == 6)
    }

    @Test func aSpecWithoutAReplyStageCannotBeServed() async throws {
        let spec = try JSONValue.parse(
            Data(
                #"""
                {"stages": [{"id": "decode", "kind": "decode"}, {"id": "resample", "kind": "resample", "rate": 16000},
                  {"id": "turns", "kind": "chunk"}, {"id": "voice", "kind": "write-wav"}]}
                """#.utf8))
        let error = await #expect(throws: TutorError.self) {
            _ = try await TutorPipeline(
                spec: spec, baseDirectory: temporaryDirectory(), name: "x", registry: registry,
                context: StageContext(logger: CapturedLogs().logger()), maxClipSeconds: 60)
        }
        #expect(error?.code == .unservableSpec && error?.exitCode == 65)
        #expect(
            error?.message == "serve answers with transcribe, reply and synthesize stages, but the spec has no "
                + "transcribe stage")
    }
}
