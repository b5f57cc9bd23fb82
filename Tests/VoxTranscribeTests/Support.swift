import Foundation
import VoxCore
import VoxDecode
import VoxResample
import VoxTestSupport
import VoxTesting

/// A file as one 16 kHz mono chunk, decoded and resampled by voxpipe's own stages.
func chunk16k(_ url: URL, start: Double = 0) async throws -> AudioChunk {
    let blocks = try await decodeBlocks(url).blocks
    let resampled = try await StageHarness(ResampleStage.self, options: ["rate": 16000, "channels": 1]).run(
        blocks, commit: false
    ).outputs
    let samples = resampled.flatMap(\.samples)
    return AudioChunk(
        format: AudioFormat(sampleRate: 16000, channels: 1), samples: samples, start: start,
        end: start + Double(samples.count) / 16000, index: 0, cut: .whole)
}
