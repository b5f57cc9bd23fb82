import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxChunk

@Suite struct WindowModeTests {
    let format = AudioFormat(sampleRate: 1000, channels: 2)

    @Test func fixedWindowsKeepTheLastShortOne() async throws {
        let samples = (0..<20_000 * 2).map { Float($0 / 2) / 20_000 }
        let chunks = try await chunk(samples, format: format, options: ["mode": "window", "seconds": 8])
        #expect(chunks.map(\.start) == [0, 8, 16])
        #expect(chunks.map(\.end) == [8, 16, 20])
        #expect(chunks.map(\.index) == [0, 1, 2])
        #expect(chunks.map(\.frames) == [8000, 8000, 4000])
        #expect(chunks[1].samples.first == Float(8000) / 20_000)
        #expect(chunks.allSatisfy { $0.cut == .window && $0.format == format })
    }

    @Test func overlappingWindowsShareTheirEdges() async throws {
        let samples = [Float](repeating: 0.1, count: 20_000 * 2)
        let chunks = try await chunk(samples, format: format, options: ["mode": "window", "seconds": 8, "overlap": 2])
        #expect(chunks.map(\.start) == [0, 6, 12])
        #expect(chunks.map(\.end) == [8, 14, 20])
    }

    @Test func overlapAsLongAsTheWindowIsASpecError() {
        #expect(throws: VoxError.self) {
            try StageHarness(ChunkStage.self, options: ["mode": "window", "seconds": 2, "overlap": 2])
        }
        #expect(throws: VoxError.self) {
            try StageHarness(ChunkStage.self, options: ["mode": "tail", "minSilence": 1])
        }
    }
}

@Suite struct VoiceModeTests {
    let format = AudioFormat(sampleRate: 16000, channels: 1)

    @Test func segmentsMatchKnownSpeechBoundariesWithin50ms() async throws {
        let speech: [ClosedRange<Double>] = [1.0...2.5, 4.0...4.8, 7.0...9.0]
        let samples = bursts(rate: 16000, seconds: 10, speech: speech)
        let chunks = try await chunk(
            samples, format: format, options: ["mode": "voice", "padding": 0, "minSilence": 0.3])
        #expect(chunks.count == 3)
        for (c, s) in zip(chunks, speech) {
            #expect(abs(c.start - s.lowerBound) <= 0.05, "start \(c.start) vs \(s.lowerBound)")
            #expect(abs(c.end - s.upperBound) <= 0.05, "end \(c.end) vs \(s.upperBound)")
            #expect(c.cut == .voice)
            #expect(c.frames == Int(((c.end - c.start) * 16000).rounded()))
        }
        #expect(chunks.map(\.index) == [0, 1, 2])
    }

    @Test func paddingAddsContextOnBothSides() async throws {
        let samples = bursts(rate: 16000, seconds: 6, speech: [2.0...3.0], channels: 1)
        let chunks = try await chunk(samples, format: format, options: ["mode": "voice", "padding": 0.25])
        #expect(chunks.count == 1)
        #expect(abs(chunks[0].start - 1.75) <= 0.05)
        #expect(abs(chunks[0].end - 3.25) <= 0.05)
    }

    @Test func speechThatStartsTheFileIsFound() async throws {
        let samples = bursts(rate: 16000, seconds: 4, speech: [0.0...1.5])
        let chunks = try await chunk(samples, format: format, options: ["mode": "voice", "padding": 0])
        #expect(chunks.count == 1)
        #expect(chunks[0].start <= 0.05)
        #expect(abs(chunks[0].end - 1.5) <= 0.05)
    }

    @Test func silenceAndSteadyNoiseGiveNoChunks() async throws {
        #expect(
            try await chunk([Float](repeating: 0, count: 16000 * 5), format: format, options: ["mode": "voice"]).isEmpty
        )
        #expect(
            try await chunk(bursts(rate: 16000, seconds: 5, speech: []), format: format, options: ["mode": "voice"])
                .isEmpty)
        // Loud but steady noise is background, not speech.
        #expect(
            try await chunk(
                bursts(rate: 16000, seconds: 8, speech: [0...8], steady: true), format: format,
                options: ["mode": "voice"]
            ).count <= 1)
    }

    @Test func aClickShorterThanMinSecondsIsDropped() async throws {
        let samples = bursts(rate: 16000, seconds: 5, speech: [1.0...1.1, 3.0...4.0])
        let chunks = try await chunk(
            samples, format: format, options: ["mode": "voice", "padding": 0, "minSeconds": 0.3])
        #expect(chunks.count == 1)
        #expect(abs(chunks[0].start - 3.0) <= 0.05)
    }

    @Test func aLongTurnIsSplitAtItsQuietestPoint() async throws {
        // 12 s of speech with a 100 ms dip at 6.5 s (shorter than minSilence).
        let samples = bursts(rate: 16000, seconds: 14, speech: [1.0...13.0], dips: [6.5...6.6])
        let chunks = try await chunk(
            samples, format: format, options: ["mode": "voice", "padding": 0, "maxSeconds": 8])
        #expect(chunks.count == 2)
        #expect(abs(chunks[0].start - 1.0) <= 0.05)
        #expect(chunks[0].end >= 6.5 && chunks[0].end <= 6.6)
        #expect(chunks[1].start == chunks[0].end)
        #expect(abs(chunks[1].end - 13.0) <= 0.05)
        #expect(chunks.allSatisfy { $0.end - $0.start <= 8 })
    }

    @Test func turnsNeverExceedMaxSecondsIncludingPadding() async throws {
        let samples = bursts(rate: 16000, seconds: 30, speech: [0.5...29.5])
        let chunks = try await chunk(
            samples, format: format, options: ["mode": "voice", "padding": 0.3, "maxSeconds": 8])
        #expect(chunks.count >= 4)
        #expect(chunks.allSatisfy { $0.end - $0.start <= 8.0001 })
        for (a, b) in zip(chunks, chunks.dropFirst()) { #expect(b.start >= a.end - 0.0001) }
    }

    @Test func joiningKeepsShortPausesInOneChunkAndCutsAtTheLastPauseThatFits() async throws {
        // Sentences of 3 s with pauses of 0.8-1.5 s, then a 6-s pause, then two more sentences.
        let speech: [ClosedRange<Double>] = [
            1.0...4.0, 5.0...8.0, 9.5...12.5, 13.3...16.3, 17.5...20.5, 26.5...29.5, 30.5...33.5,
        ]
        let samples = bursts(rate: 16000, seconds: 35, speech: speech)
        let options: [String: JSONValue] = [
            "mode": "voice", "padding": 0.1, "maxSeconds": 12, "minSilence": 0.5, "joinPause": 3,
        ]
        let chunks = try await chunk(samples, format: format, options: options)
        // 1-12.5 does not fit in 12 s with its padding: cut at the pause before 9.5; then
        // 9.5-20.5 (11 s); the 6-s pause ends that chunk; 26.5-33.5 is one.
        let expected: [ClosedRange<Double>] = [1.0...8.0, 9.5...20.5, 26.5...33.5]
        #expect(chunks.count == expected.count, "\(chunks.map { ($0.start, $0.end) })")
        for (c, e) in zip(chunks, expected) {
            #expect(abs(c.start - (e.lowerBound - 0.1)) <= 0.06, "start \(c.start) vs \(e.lowerBound)")
            #expect(abs(c.end - (e.upperBound + 0.1)) <= 0.06, "end \(c.end) vs \(e.upperBound)")
            #expect(c.end - c.start <= 12.0001)
        }
        // Without joining, each sentence is its own chunk.
        var plain = options
        plain["joinPause"] = nil
        #expect(try await chunk(samples, format: format, options: plain).count == speech.count)
        // Any block size, the same chunks.
        let small = try await StageHarness(ChunkStage.self, options: options).run(
            blocks(samples, format: format, blockFrames: 777), commit: false
        ).outputs
        #expect(small.map(\.start) == chunks.map(\.start) && small.map(\.end) == chunks.map(\.end))
    }

    @Test func aModesOptionOnAnotherModeFailsAtLoadNamingItsPath() {
        let error = #expect(throws: VoxError.self) {
            try StageHarness(ChunkStage.self, options: ["mode": "voice", "seconds": 5])
        }
        #expect(error?.message == "stages[0].seconds: applies only where mode is window, tail or whole (here: voice)")
        let energy = #expect(throws: VoxError.self) {
            try StageHarness(ChunkStage.self, options: ["mode": "voice", "speechProbability": 0.6])
        }
        #expect(energy?.message == "stages[0].speechProbability: applies only where detector is silero (here: energy)")
    }

    @Test func joinPauseMustBeLongerThanMinSilenceAndIsForVoiceOnly() {
        #expect(throws: VoxError.self) {
            try StageHarness(ChunkStage.self, options: ["mode": "voice", "minSilence": 1, "joinPause": 0.5])
        }
        #expect(throws: VoxError.self) {
            try StageHarness(ChunkStage.self, options: ["mode": "window", "joinPause": 2])
        }
    }

    @Test func stereoIsDetectedOnTheMixAndKeepsItsChannels() async throws {
        let stereo = AudioFormat(sampleRate: 16000, channels: 2)
        let samples = bursts(rate: 16000, seconds: 4, speech: [1.0...2.0], channels: 2)
        let chunks = try await chunk(samples, format: stereo, options: ["mode": "voice", "padding": 0])
        #expect(chunks.count == 1)
        #expect(chunks[0].format == stereo)
    }

    @Test func memoryStaysBoundedOnALongSilentStream() async throws {
        let cutter = try VoiceCutter(format: AudioFormat(sampleRate: 8000, channels: 1), settings: .init())
        let quiet = bursts(rate: 8000, seconds: 10, speech: [])
        for i in 0..<60 {
            _ = try cutter.push(AudioBlock(format: cutter.format, samples: quiet, frameOffset: Int64(i * 80000)))
        }
        #expect(cutter.bufferedSamples < 8000 * 12)
        #expect(cutter.bufferedEnergies < 100 * 6)
    }
}

@Suite struct TailModeTests {
    let format = AudioFormat(sampleRate: 1000, channels: 1)

    @Test func theLastSecondsOfALongStream() async throws {
        let samples = (0..<20_000).map { Float($0) }
        let chunks = try await chunk(samples, format: format, options: ["mode": "tail", "seconds": 5])
        #expect(chunks.count == 1)
        #expect(chunks[0].start == 15)
        #expect(chunks[0].end == 20)
        #expect(chunks[0].samples == (15_000..<20_000).map { Float($0) })
        #expect(chunks[0].cut == .tail)
    }

    @Test func aShorterStreamIsKeptWhole() async throws {
        let chunks = try await chunk(
            [Float](repeating: 0.5, count: 3000), format: format, options: ["mode": "tail", "seconds": 5])
        #expect(chunks.map(\.start) == [0])
        #expect(chunks.map(\.end) == [3])
    }

    @Test func memoryDoesNotGrowWithInputLength() {
        func capacityAfter(minutes: Int) -> Int {
            let cutter = TailCutter(format: AudioFormat(sampleRate: 48000, channels: 1), seconds: 300)
            let block = [Float](repeating: 0.1, count: 48000 * 60)
            for i in 0..<minutes {
                _ = cutter.push(AudioBlock(format: cutter.format, samples: block, frameOffset: Int64(i * 48000 * 60)))
            }
            return cutter.ring.capacity
        }
        #expect(capacityAfter(minutes: 1) == 48000 * 300)
        #expect(capacityAfter(minutes: 20) == 48000 * 300)
    }

    @Test func ringBufferKeepsTheNewestSamplesInOrder() {
        var ring = RingBuffer(capacity: 5)
        ring.append([1, 2, 3])
        #expect(ring.contents() == [1, 2, 3])
        ring.append([4, 5, 6, 7])
        #expect(ring.contents() == [3, 4, 5, 6, 7])
        ring.append((10..<20).map(Float.init))
        #expect(ring.contents() == [15, 16, 17, 18, 19])
    }
}

@Suite struct WholeModeTests {
    let format = AudioFormat(sampleRate: 1000, channels: 2)

    @Test func aClipWithPausesAndLongerThanAVoiceTurnIsOneChunk() async throws {
        // 12 s: speech, a 2-s pause, speech; voice mode with maxSeconds 8 would cut it.
        let samples =
            sine(rate: 1000, channels: 2, seconds: 5, frequency: 50)
            + [Float](repeating: 0, count: 2 * 2000) + sine(rate: 1000, channels: 2, seconds: 5, frequency: 50)
        let chunks = try await chunk(samples, format: format, options: ["mode": "whole"])
        #expect(chunks.count == 1)
        #expect(chunks.first?.cut == .whole)
        #expect(chunks.first?.start == 0 && chunks.first?.end == 12)
        #expect(chunks.first?.samples == samples)
    }

    @Test func aStreamLongerThanSecondsFailsInsteadOfGrowing() async throws {
        let error = await #expect(throws: ChunkError.self) {
            _ = try await chunk(
                [Float](repeating: 0.1, count: 2 * 3500), format: format, options: ["mode": "whole", "seconds": 3])
        }
        #expect(error?.message == "the audio is longer than 3 s, the most mode whole takes as one chunk")
    }
}
