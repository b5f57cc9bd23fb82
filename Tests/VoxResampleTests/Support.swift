import Foundation
import VoxCore
import VoxDecode
import VoxResample
import VoxTestSupport
import VoxTesting

/// Runs the resample stage alone over blocks of `blockFrames`.
func resample(
    _ samples: [Float], format: AudioFormat, options: [String: JSONValue], blockFrames: Int = 4096
) async throws -> [AudioBlock] {
    let harness = try StageHarness(ResampleStage.self, options: options)
    return try await harness.run(blocks(samples, format: format, blockFrames: blockFrames), commit: false).outputs
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
        let w =
            0.42 - 0.5 * cos(2 * Double.pi * Double(i) / Double(m)) + 0.08 * cos(4 * Double.pi * Double(i) / Double(m))
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
