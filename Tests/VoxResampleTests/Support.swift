import Foundation
import VoxCore
import VoxDecode
import VoxResample

func temporaryDirectory() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-test-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
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

/// Decodes a whole file into interleaved samples with voxpipe's own decoder.
func readAll(_ url: URL) async throws -> (format: AudioFormat, samples: [Float]) {
    let harness = try StageHarness(DecodeStage.self, item: InputFile(url: url, relativePath: url.lastPathComponent, outputName: "x"))
    let (blocks, _) = try await harness.run([harness.item], commit: false)
    return (blocks[0].format, blocks.flatMap(\.samples))
}

/// Runs the resample stage alone over blocks of `blockFrames`.
func resample(_ samples: [Float], format: AudioFormat, options: [String: JSONValue], blockFrames: Int = 4096) async throws -> [AudioBlock] {
    let harness = try StageHarness(ResampleStage.self, options: options)
    var blocks: [AudioBlock] = []
    let frames = samples.count / format.channels
    var f = 0
    while f < frames {
        let n = min(blockFrames, frames - f)
        blocks.append(AudioBlock(format: format, samples: Array(samples[f * format.channels..<(f + n) * format.channels]), frameOffset: Int64(f)))
        f += n
    }
    return try await harness.run(blocks, commit: false).outputs
}

/// A windowed-sinc low-pass FIR (Blackman), applied with zero phase (centred).
func lowPass(_ x: [Float], cutoff: Double, rate: Double, taps: Int = 255) -> [Float] {
    let fc = cutoff / rate
    let m = taps - 1
    var h = [Float](repeating: 0, count: taps)
    var sum: Float = 0
    for i in 0..<taps {
        let n = Double(i - m / 2)
        let sinc = n == 0 ? 2 * fc : sin(2 * Double.pi * fc * n) / (Double.pi * n)
        let w = 0.42 - 0.5 * cos(2 * Double.pi * Double(i) / Double(m)) + 0.08 * cos(4 * Double.pi * Double(i) / Double(m))
        h[i] = Float(sinc * w)
        sum += h[i]
    }
    var y = [Float](repeating: 0, count: x.count)
    x.withUnsafeBufferPointer { xp in
        h.withUnsafeBufferPointer { hp in
            y.withUnsafeMutableBufferPointer { yp in
                for i in 0..<x.count {
                    var acc: Float = 0
                    for k in 0..<taps {
                        let j = i + k - m / 2
                        if j >= 0 && j < x.count { acc += hp[k] * xp[j] }
                    }
                    yp[i] = acc / sum
                }
            }
        }
    }
    return y
}

func energy(_ x: ArraySlice<Float>) -> Double { x.reduce(0) { $0 + Double($1) * Double($1) } }
