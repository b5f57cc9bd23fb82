import Foundation
import Testing
import VoxCore
import VoxFormats
import VoxTestSupport
import VoxTesting

@testable import VoxChunk

/// The `silero` voice detector (Silero VAD through whisper.cpp, installed by `make setup`) on real
/// read speech, silence, noise and music-like tones.
@Suite(.needs(.sileroModel))
struct SileroDetectorTests {
    static let mono16k = AudioFormat(sampleRate: 16000, channels: 1)
    static let silero: [String: JSONValue] = ["mode": "voice", "detector": "silero", "maxSeconds": 8]

    /// A LibriVox line (16 kHz mono PCM) as samples.
    static func line(_ id: String) throws -> [Float] {
        let url = InstalledFixture.librivox.url.appendingPathComponent("sense_and_sensibility_01_austen_64kb-\(id).wav")
        return try #require(WAVData.decodePCM16(try Data(contentsOf: url))).samples
    }

    /// Quiet background (-70 dBFS noise) of `seconds`.
    static func quiet(_ seconds: Double, seed: UInt32 = 7) -> [Float] {
        var state = seed
        return (0..<Int(seconds * 16000)).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return Float(Int32(bitPattern: state)) / Float(Int32.max) * 0.0003
        }
    }

    @Test(.needs(.librivox))
    func twoSpokenLinesBetweenPausesAreFoundWhereTheyAre() async throws {
        // Given 1 s of quiet, a line of 2.99 s, 2 s of quiet, a line of 3.29 s, 1 s of quiet.
        let first = try Self.line("0880"), second = try Self.line("0930")
        let samples = Self.quiet(1) + first + Self.quiet(2, seed: 8) + second + Self.quiet(1, seed: 9)
        let secondStart = 1 + Double(first.count) / 16000 + 2
        // When the silero detector cuts it.
        let chunks = try await chunk(samples, format: Self.mono16k, options: Self.silero)
        // Then one chunk per line, each covering its line's speech and not much more.
        #expect(chunks.count == 2, "\(chunks.map { ($0.start, $0.end) })")
        guard chunks.count == 2 else { return }
        #expect(chunks[0].start > 0.5 && chunks[0].start < 1.3, "\(chunks[0].start)")
        #expect(chunks[0].end > 3.6 && chunks[0].end < 4.6, "\(chunks[0].end)")
        #expect(chunks[1].start > secondStart - 0.5 && chunks[1].start < secondStart + 0.3, "\(chunks[1].start)")
        #expect(chunks[1].end > secondStart + 2.9 && chunks[1].end <= Double(samples.count) / 16000)
        #expect(chunks.allSatisfy { $0.cut == .voice && $0.format == Self.mono16k })
    }

    /// Six seconds each of silence, quiet, loud noise, a tune of notes with overtones, a sweep.
    static func nonSpeech() -> [(name: String, samples: [Float])] {
        let seconds = 6.0
        let n = Int(seconds * 16000)
        var state: UInt32 = 99
        let noise = (0..<n).map { _ -> Float in
            state = state &* 1_664_525 &+ 1_013_904_223
            return Float(Int32(bitPattern: state)) / Float(Int32.max) * 0.3
        }
        // A tune: a bar of notes of half a second, each a tone with two overtones.
        let notes: [Double] = [262, 330, 392, 523, 392, 330, 294, 349, 440, 523, 440, 349]
        let tune = (0..<n).map { i -> Float in
            let t = Double(i) / 16000
            let f = notes[Int(t / 0.5) % notes.count]
            return Float(0.3 * sin(2 * .pi * f * t) + 0.15 * sin(4 * .pi * f * t) + 0.07 * sin(6 * .pi * f * t))
        }
        let sweep = (0..<n).map { i -> Float in
            let t = Double(i) / 16000
            return Float(0.5 * sin(2 * .pi * (100 * t + 300 * t * t)))
        }
        return [
            ("silence", [Float](repeating: 0, count: n)), ("quiet", Self.quiet(seconds)), ("noise", noise),
            ("tune", tune), ("sweep", sweep),
        ]
    }

    @Test func silenceNoiseAndTonesGiveNoChunks() async throws {
        for (name, samples) in Self.nonSpeech() {
            let chunks = try await chunk(samples, format: Self.mono16k, options: Self.silero)
            #expect(chunks.isEmpty, "\(name): \(chunks.map { ($0.start, $0.end) })")
        }
    }

    /// A served turn (mode whole, as `ChunkStage.oneTurn` makes it for serve) of a spec that cuts
    /// voice turns with Silero: the clip from where Silero hears speech start to where it ends;
    /// nothing for silence, noise or music, so serve answers an empty turn without decoding one.
    /// With the energy detector every clip is given whole.
    @Test(.needs(.librivox))
    func aServedTurnIsTheStretchSileroHearsSpeechInAndNothingWithoutSpeech() async throws {
        func served(_ options: [String: JSONValue]) throws -> ChunkStage.Configuration {
            ChunkStage.oneTurn(
                try ChunkStage.configure(
                    StageOptions(
                        stageID: "turns", path: "stages[2]", baseDirectory: URL(fileURLWithPath: "/"), values: options,
                        specs: ChunkStage.options)), maxSeconds: 60)
        }
        let turn = try served(Self.silero)
        #expect(turn.mode == .whole && turn.speechOnly)
        let stage = ChunkStage(id: "turns", configuration: turn, context: StageContext(logger: .init(label: "t")))
        func cut(_ samples: [Float]) throws -> [AudioChunk] {
            let cutter = try stage.makeCutter(Self.mono16k)
            var out: [AudioChunk] = []
            for block in blocks(samples, format: Self.mono16k, blockFrames: 3000) { out += try cutter.push(block) }
            return out + cutter.finish()
        }
        // One utterance: the chunk mode voice cuts from it, the quiet around it left out.
        let spoken = Self.quiet(0.5) + (try Self.line("0890")) + Self.quiet(1.5)
        let chunks = try cut(spoken)
        let voiced = try await chunk(spoken, format: Self.mono16k, options: Self.silero)
        #expect(voiced.count == 1 && chunks.count == 1 && chunks.first?.cut == .whole)
        #expect(chunks.first?.samples == voiced.first?.samples && chunks.first?.samples.count ?? 0 < spoken.count)
        #expect(chunks.first?.start == voiced.first?.start && chunks.first?.end == voiced.first?.end)
        // Two, with a pause: one chunk from the first's start to the second's end, the pause kept.
        let two =
            Self.quiet(1) + (try Self.line("0880")) + Self.quiet(2, seed: 8) + (try Self.line("0930"))
            + Self.quiet(1, seed: 9)
        let both = try cut(two), parts = try await chunk(two, format: Self.mono16k, options: Self.silero)
        #expect(parts.count == 2 && both.count == 1)
        if let first = parts.first, let last = parts.last, let whole = both.first {
            #expect(whole.start == first.start && whole.end == last.end)
            let from = Int((first.start * 16000).rounded())
            #expect(whole.samples == Array(two[from..<(from + whole.samples.count)]))
        }
        for (name, samples) in Self.nonSpeech() {
            #expect(try cut(samples).isEmpty, "\(name)")
        }
        #expect(try served(["mode": "voice", "maxSeconds": 8]).speechOnly == false)
    }

    @Test(.needs(.librivox))
    func theSameAudioGivesTheSameChunksWhateverTheBlockSizes() async throws {
        let samples = Self.quiet(0.7) + (try Self.line("0890")) + Self.quiet(1.3)
        func run(_ blockFrames: Int) async throws -> [AudioChunk] {
            try await StageHarness(ChunkStage.self, options: Self.silero).run(
                blocks(samples, format: Self.mono16k, blockFrames: blockFrames), commit: false
            ).outputs
        }
        let a = try await run(3000), b = try await run(777), c = try await run(3000)
        #expect(!a.isEmpty)
        #expect(a.map(\.samples) == b.map(\.samples) && a.map(\.samples) == c.map(\.samples))
        #expect(a.map(\.start) == b.map(\.start) && a.map(\.end) == c.map(\.end))
    }

    @Test func aMissingModelIsUnavailableAtPrepareAndOtherRatesAreAPlanError() async throws {
        let harness = try StageHarness(
            ChunkStage.self, id: "turns",
            options: ["mode": "voice", "detector": "silero", "vadModel": "no-such/ggml-silero.bin"],
            baseDirectory: URL(fileURLWithPath: "/tmp"))
        let stage = harness.stage
        let error = await #expect(throws: ChunkError.self) { try await stage.prepare() }
        #expect(error?.code == .modelUnavailable && error?.exitCode == 69)
        #expect(
            error?.message
                == "the Silero VAD model is not installed: /tmp/no-such/ggml-silero.bin (run make setup, or name a "
                + "file with vadModel)")
        #expect(throws: PlanError.self) {
            try ChunkStage.outputFormat(stage.configuration, input: StreamFormat(sampleRate: 48000, channels: 1))
        }
        // The energy detector's threshold with silero: refused when the options load.
        #expect(throws: VoxError.self) {
            try StageOptions.validated(
                ["mode": "voice", "detector": "silero", "threshold": 10], against: ChunkStage.options,
                stageID: "turns", path: "stages[2]", owner: "chunk", baseDirectory: URL(fileURLWithPath: "/tmp"))
        }
    }
}
