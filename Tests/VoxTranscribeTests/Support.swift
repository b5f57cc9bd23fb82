import Foundation
import VoxCore
import VoxDecode
import VoxResample

func temporaryDirectory() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-test-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A file as one 16 kHz mono chunk, decoded and resampled by voxpipe's own stages.
func chunk16k(_ url: URL, start: Double = 0) async throws -> AudioChunk {
    let decoder = try StageHarness(DecodeStage.self, item: InputFile(url: url, relativePath: url.lastPathComponent, outputName: "x"))
    let blocks = try await decoder.run([decoder.item], commit: false).outputs
    let resampled = try await StageHarness(ResampleStage.self, options: ["rate": 16000, "channels": 1]).run(blocks, commit: false).outputs
    let samples = resampled.flatMap(\.samples)
    return AudioChunk(format: AudioFormat(sampleRate: 16000, channels: 1), samples: samples, start: start, end: start + Double(samples.count) / 16000, index: 0, cut: .whole)
}

func espeak(_ text: String, voice: String = "en-us", into dir: URL) throws -> URL {
    let url = dir.appendingPathComponent("speech-\(UUID().uuidString).wav")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["espeak-ng", "-v", voice, "-s", "140", "-w", url.path, text]
    try process.run()
    process.waitUntilExit()
    return url
}
