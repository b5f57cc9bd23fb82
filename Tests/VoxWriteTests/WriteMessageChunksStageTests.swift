import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxWrite

/// `write-message-chunks` alone: artifacts an upstream writer reserved in the same item come in;
/// their parts and a checksummed index per file go out.
@Suite struct WriteMessageChunksStageTests {
    /// 700 bytes that differ from part to part.
    let payload = Data((0..<700).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    /// Writes `data` as the item's output `path` the way an upstream writer does: a file reserved
    /// by name, or (`folder/inner/file`) a file inside a reserved folder, as an evidence bag.
    func upstream(_ outputs: ItemOutputs, _ path: String, _ data: Data) async throws -> Artifact {
        let parts = path.split(separator: "/", maxSplits: 1).map(String.init)
        let temp = try outputs.reserve(name: parts[0])
        guard parts.count == 2 else {
            try data.write(to: temp)
            return try await outputs.artifact(for: temp)
        }
        let file = temp.appendingPathComponent(parts[1])
        try ItemOutputs.createFolder(file.deletingLastPathComponent())
        try data.write(to: file)
        return try #require(try await outputs.artifacts(forDirectory: temp).first)
    }

    @Test func eachIncludedFileIsSplitIntoPartsWithAnIndexThatJoinsBack() async throws {
        let out = temporaryDirectory()
        let harness = try StageHarness(
            WriteMessageChunksStage.self, id: "messages", options: ["bytes": 256, "include": "evidence.wav"],
            outputDirectory: out)
        let outputs = harness.itemOutputs()
        let inputs = [
            try await upstream(outputs, "evidence/data/evidence.wav", payload),
            try await upstream(outputs, "notes.txt", Data("not included".utf8)),
        ]
        let (artifacts, _) = try await harness.run(inputs, outputs: outputs)
        let name = "evidence_data_evidence.wav"
        #expect(
            artifacts.map(\.path)
                == ["\(name).0001", "\(name).0002", "\(name).0003", "\(name).index.json"].map { "item/messages/\($0)" })
        #expect(try artifactsMatchTheirFiles(artifacts, under: out))
        let folder = out.appendingPathComponent("item/messages")
        let parts = try (1...3).map { try Data(contentsOf: folder.appendingPathComponent("\(name).000\($0)")) }
        #expect(parts.map(\.count) == [256, 256, 188])
        #expect(parts.reduce(Data(), +) == payload)

        let index = try JSONDecoder().decode(
            WriteMessageChunksStage.Index.self,
            from: Data(contentsOf: folder.appendingPathComponent("\(name).index.json")))
        #expect(
            index
                == WriteMessageChunksStage.Index(
                    name: name, bytes: 700, sha256: Digest.hex(payload), partBytes: 256, count: 3,
                    parts: parts.enumerated().map { i, part in
                        .init(file: "\(name).000\(i + 1)", bytes: part.count, sha256: Digest.hex(part))
                    }))
        let joined = try WriteMessageChunksStage.join(index: folder.appendingPathComponent("\(name).index.json"))
        #expect(joined.data == payload)
    }

    @Test func withoutIncludeEveryFileIsSplitAndNothingIsWrittenForNoInput() async throws {
        let out = temporaryDirectory()
        let harness = try StageHarness(WriteMessageChunksStage.self, id: "messages", outputDirectory: out)
        let outputs = harness.itemOutputs()
        let small = try await upstream(outputs, "subs.srt", Data("1\n".utf8))
        let (artifacts, _) = try await harness.run([small], outputs: outputs)
        #expect(artifacts.map(\.path) == ["item/messages/subs.srt.0001", "item/messages/subs.srt.index.json"])

        let empty = temporaryDirectory()
        let (none, _) = try await StageHarness(WriteMessageChunksStage.self, id: "messages", outputDirectory: empty)
            .run([Artifact]())
        #expect(none.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: empty.appendingPathComponent("item/messages").path))
    }

    @Test func anArtifactThisItemDidNotWriteIsRefused() async throws {
        let out = temporaryDirectory()
        let harness = try StageHarness(WriteMessageChunksStage.self, id: "messages", outputDirectory: out)
        let stranger = Artifact(path: "other/evidence.wav", bytes: 3, sha256: Digest.hex(Data("abc".utf8)))
        await #expect(
            throws: WriteError(.unsupported, "cannot find other/evidence.wav among this item's outputs")
        ) { try await harness.run([stranger]) }
    }
}
