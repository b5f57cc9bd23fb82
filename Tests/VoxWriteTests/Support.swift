import Foundation
import VoxCore
import VoxDecode

func temporaryDirectory() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-test-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

func readAll(_ url: URL) async throws -> (format: AudioFormat, samples: [Float]) {
    let harness = try StageHarness(DecodeStage.self, item: InputFile(url: url, relativePath: url.lastPathComponent, outputName: "x"))
    let (blocks, _) = try await harness.run([harness.item], commit: false)
    return (blocks[0].format, blocks.flatMap(\.samples))
}
