import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxResample

@Suite struct ResampleStageTests {
    /// Given a 44.1 kHz stereo file, when voxpipe and sox both make 16 kHz mono of it, then the
    /// lengths agree within a frame and their difference, in the passband, is 60 dB down.
    func compareWithSox(_ source: URL) async throws {
        let dir = source.deletingLastPathComponent()
        let soxOut = dir.appendingPathComponent("sox-16k.wav")
        try runTool(
            "sox", ["-D", source.path, "-e", "floating-point", "-b", "32", "-r", "16000", "-c", "1", soxOut.path])
        let (inFormat, input) = try await readAll(source)
        #expect(inFormat == AudioFormat(sampleRate: 44100, channels: 2))
        let ours = try await resample(input, format: inFormat, options: ["rate": 16000, "channels": 1]).flatMap(
            \.samples)
        let (_, theirs) = try await readAll(soxOut)
        #expect(abs(ours.count - theirs.count) <= 1, "voxpipe \(ours.count) frames, sox \(theirs.count)")
        let n = min(ours.count, theirs.count)
        let a = lowPass(Array(ours[0..<n]), cutoff: 6500, rate: 16000)
        let b = lowPass(Array(theirs[0..<n]), cutoff: 6500, rate: 16000)
        let diff = zip(a, b).map { $0 - $1 }
        // Edges excluded: both filters ring differently over the first and last few ms.
        let inner = 400..<(n - 400)
        let snr = 10 * log10(energy(b[inner]) / max(energy(diff[inner]), 1e-30))
        #expect(snr >= 60, "difference only \(snr) dB below the signal")
    }

    // Ten NaN samples in silence became a 544-sample full-scale burst at 16 kHz (sox: 4): NaN is
    // silence before the filter, an infinity full scale, so the output stays finite and quiet.
    @Test(arguments: [("libsoxr", "soxr"), ("libsamplerate", "libsamplerate")])
    func nonFiniteSamplesBecomeSilenceOrFullScaleBeforeTheFilter(_ engine: (String, String)) async throws {
        let format = AudioFormat(sampleRate: 44100, channels: 1)
        var nan = [Float](repeating: 0, count: 44100)
        for i in 22050..<22060 { nan[i] = .nan }
        let quiet = try await resample(nan, format: format, options: ["rate": 16000, "engine": .string(engine.1)])
            .flatMap(\.samples)
        #expect(quiet.count >= 15999 && quiet.allSatisfy { $0 == 0 }, "\(engine.0)")

        var inf = [Float](repeating: 0, count: 44100)
        for i in 22050..<22060 { inf[i] = i % 2 == 0 ? .infinity : -.infinity }
        let clipped = try await resample(inf, format: format, options: ["rate": 16000, "engine": .string(engine.1)])
            .flatMap(\.samples)
        #expect(clipped.allSatisfy { $0.isFinite }, "\(engine.0)")
        #expect(clipped.filter { abs($0) > 0.5 }.count <= 8, "\(engine.0)")
    }

    @Test(.startsProcess("sox"))
    func matchesSoxOnASineSweep() async throws {
        let dir = temporaryDirectory()
        let sweep = dir.appendingPathComponent("sweep.wav")
        try runTool(
            "sox",
            ["-n", "-r", "44100", "-c", "2", "-b", "16", sweep.path, "synth", "4", "sine", "50-7000", "gain", "-3"])
        try await compareWithSox(sweep)
    }

    @Test(.startsProcess("sox"))
    func matchesSoxOnSpeech() async throws {
        let dir = temporaryDirectory()
        let raw = dir.appendingPathComponent("raw.wav")
        try runTool(
            "espeak-ng",
            ["-v", "en-us", "-w", raw.path, "Resampling speech must keep every word clear and intelligible."])
        let speech = dir.appendingPathComponent("speech.wav")
        try runTool("sox", [raw.path, "-r", "44100", "-c", "2", speech.path])
        try await compareWithSox(speech)
    }

    @Test(arguments: ["soxr", "libsamplerate"])
    func outputLengthFollowsTheRatioAndBlocksAreContiguous(engine: String) async throws {
        let format = AudioFormat(sampleRate: 44100, channels: 2)
        let input = [Float](repeating: 0.25, count: 44100 * 2 * 3)
        let blocks = try await resample(
            input, format: format, options: ["rate": 16000, "channels": 1, "engine": .string(engine)], blockFrames: 1000
        )
        let frames = blocks.reduce(0) { $0 + $1.frames }
        #expect(abs(frames - 48000) <= 1)
        #expect(blocks.allSatisfy { $0.format == AudioFormat(sampleRate: 16000, channels: 1) })
        for (a, b) in zip(blocks, blocks.dropFirst()) { #expect(b.frameOffset == a.frameOffset + Int64(a.frames)) }
        // A DC input stays DC (0.25) once the filter has settled.
        let mid = blocks.flatMap(\.samples)[10000..<30000]
        #expect(mid.allSatisfy { abs($0 - 0.25) < 0.01 })
    }

    @Test(arguments: ["best", "medium", "fastest", "linear", "hold"])
    func everyLibsamplerateQualityRuns(quality: String) async throws {
        let input = [Float](repeating: 0.1, count: 8000)
        let blocks = try await resample(
            input, format: AudioFormat(sampleRate: 8000, channels: 1),
            options: ["rate": 48000, "engine": "libsamplerate", "quality": .string(quality)])
        #expect(abs(blocks.reduce(0) { $0 + $1.frames } - 48000) <= 2)
    }

    @Test func downMixAveragesChannelsBeforeResampling() async throws {
        let input: [Float] = [1, 0, 0.5, -0.5, 0.2, 0.4]
        let blocks = try await resample(
            input, format: AudioFormat(sampleRate: 16000, channels: 2), options: ["channels": 1])
        #expect(blocks.flatMap(\.samples) == [0.5, 0, 0.3])
    }

    @Test func blocksPassThroughUntouchedWhenNothingChanges() async throws {
        let input: [Float] = [0.1, 0.2, 0.3, 0.4]
        let blocks = try await resample(
            input, format: AudioFormat(sampleRate: 16000, channels: 2), options: ["rate": 16000])
        #expect(blocks.flatMap(\.samples) == input)
        #expect(blocks.first?.format == AudioFormat(sampleRate: 16000, channels: 2))
    }

    @Test func qualityOfTheOtherEngineIsASpecError() throws {
        #expect(throws: VoxError.self) {
            try StageHarness(ResampleStage.self, options: ["engine": "soxr", "quality": "sinc-best"])
        }
        let error = #expect(throws: VoxError.self) {
            try StageHarness(ResampleStage.self, options: ["quality": "hold"])
        }
        #expect(
            error?.message
                == #"stages[0].quality: "hold" is not a quality of engine soxr (it takes quick | low | medium | "#
                + #"high | very-high)"#
        )
    }

    @Test func theEngineFlushesWhatItHoldsAtEndOfInput() async throws {
        // One short block: a streaming resampler holds most of it until the flush.
        let input = [Float](repeating: 0.3, count: 441)
        let blocks = try await resample(
            input, format: AudioFormat(sampleRate: 44100, channels: 1), options: ["rate": 16000])
        #expect(abs(blocks.reduce(0) { $0 + $1.frames } - 160) <= 1)
    }
}
