import Foundation
import Testing
import VoxAgent
import VoxChunk
import VoxCore
import VoxDecode
import VoxReply
import VoxResample
import VoxStages
import VoxSynthesize
import VoxTranscribe
import VoxWrite

/// Every stage kind the registry holds is tested alone, through `StageHarness` (VoxTesting): a
/// kind registered without such a test fails here, by name.
@Suite struct HarnessCoverageTests {
    /// The stage type of every registered kind. A new kind goes in `voxpipeStageKinds` and here,
    /// with a test that runs it through the harness.
    static let stageTypes: [any Stage.Type] = [
        DecodeStage.self, ReadTextStage.self, ResampleStage.self, ChunkStage.self, TranscribeStage.self,
        ReplyStage.self, AgentStage.self, SynthesizeStage.self, WriteAudioStage.self, WriteWAVStage.self,
        WriteTranscriptStage.self, WriteRepliesStage.self, WriteEvidenceStage.self, WriteMessageChunksStage.self,
        WriteAgentLogStage.self, WriteRecordsStage.self,
    ]

    static let thisFile = URL(fileURLWithPath: #filePath)
    /// The package's Tests folder.
    static let testsFolder = thisFile.deletingLastPathComponent().deletingLastPathComponent()

    /// The Swift sources under Tests/ but this file, without their comment lines.
    static func testSources() throws -> String {
        let files =
            FileManager.default.enumerator(at: testsFolder, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" && $0.path != thisFile.path } ?? []
        return try files.map { url in
            try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    @Test func everyRegisteredKindIsListedWithItsStageType() {
        let registered = voxpipeStageKinds.map(\.kind)
        let listed = Self.stageTypes.map { $0.kind }
        let unlisted = registered.filter { !listed.contains($0) }
        let advice = "test each through StageHarness and list its stage type in HarnessCoverageTests.stageTypes"
        #expect(
            unlisted.isEmpty, "registered kinds with no harness test: \(unlisted.joined(separator: ", ")); \(advice)")
        let stale = listed.filter { !registered.contains($0) }
        #expect(stale.isEmpty, "listed in HarnessCoverageTests but not registered: \(stale.joined(separator: ", "))")
    }

    @Test func everyListedStageTypeIsRunThroughTheHarnessByATest() throws {
        let sources = try Self.testSources()
        let untested = try Self.stageTypes.map { String(describing: $0) }.filter { name in
            // `StageHarness(DecodeStage.self` or `StageHarness<DecodeStage>`, across a line break too.
            try sources.firstMatch(of: Regex("StageHarness(\\(\\s*\(name)\\.self\\b|<\(name)>)")) == nil
        }
        #expect(untested.isEmpty, "no test runs these through StageHarness: \(untested.joined(separator: ", "))")
    }
}
