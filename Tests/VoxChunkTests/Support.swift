import Foundation
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxChunk

/// A deterministic signal: quiet background noise (-70 dBFS) with speech-like bursts (-20 dBFS
/// noise that dips 20 dB for 40 ms every 250 ms, as speech does between syllables) over the given
/// spans, and optional silent dips inside bursts. `steady` makes bursts without syllable dips.
func bursts(
    rate: Int, seconds: Double, speech: [ClosedRange<Double>], dips: [ClosedRange<Double>] = [], channels: Int = 1,
    steady: Bool = false
) -> [Float] {
    var state: UInt32 = 12345
    func noise() -> Float {
        state = state &* 1_664_525 &+ 1_013_904_223
        return Float(Int32(bitPattern: state)) / Float(Int32.max)
    }
    let frames = Int(seconds * Double(rate))
    var out = [Float](repeating: 0, count: frames * channels)
    for f in 0..<frames {
        let t = Double(f) / Double(rate)
        let loud = speech.contains { $0.contains(t) } && !dips.contains { $0.contains(t) }
        let phase = t.truncatingRemainder(dividingBy: 0.25)
        let syllableGap = !steady && phase >= 0.105 && phase < 0.145
        let v = noise() * (loud ? (syllableGap ? 0.017 : 0.17) : 0.00055)
        for c in 0..<channels { out[f * channels + c] = v }
    }
    return out
}

func chunk(_ samples: [Float], format: AudioFormat, options: [String: JSONValue]) async throws -> [AudioChunk] {
    try await StageHarness(ChunkStage.self, options: options).run(
        blocks(samples, format: format, blockFrames: 3000), commit: false
    ).outputs
}
