import CSndFile
import Foundation
import VoxCore
import VoxDecode

func temporaryDirectory() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-test-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A sine of `seconds` at `amplitude`, interleaved over `channels`.
func sine(rate: Int, channels: Int, seconds: Double, frequency: Double = 440, amplitude: Float = 0.5) -> [Float] {
    let frames = Int(Double(rate) * seconds)
    var out = [Float](repeating: 0, count: frames * channels)
    for f in 0..<frames {
        let v = amplitude * Float(sin(2 * Double.pi * frequency * Double(f) / Double(rate)))
        for c in 0..<channels { out[f * channels + c] = v }
    }
    return out
}

/// Writes samples with libsndfile in the given major|subtype format; false where this
/// libsndfile cannot write it.
func writeSoundFile(_ url: URL, format: Int32, rate: Int, channels: Int, samples: [Float]) -> Bool {
    var info = SF_INFO()
    info.samplerate = Int32(rate)
    info.channels = Int32(channels)
    info.format = format
    guard sf_format_check(&info) != 0, let handle = sf_open(url.path, Int32(SFM_WRITE), &info) else { return false }
    _ = samples.withUnsafeBufferPointer { sf_writef_float(handle, $0.baseAddress, sf_count_t(samples.count / channels)) }
    sf_close(handle)
    return true
}

func rms(_ samples: [Float]) -> Float {
    guard !samples.isEmpty else { return 0 }
    return (samples.reduce(0) { $0 + $1 * $1 } / Float(samples.count)).squareRoot()
}

/// Decodes a file with the decode stage alone; returns the blocks.
func decode(_ url: URL, options: [String: JSONValue] = [:]) async throws -> (blocks: [AudioBlock], stats: ItemStats) {
    let harness = try StageHarness(DecodeStage.self, options: options,
                                   item: InputFile(url: url, relativePath: url.lastPathComponent, outputName: "x"))
    let (blocks, stats) = try await harness.run([harness.item], commit: false)
    return (blocks, stats)
}

func run(_ tool: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [tool] + arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
}
