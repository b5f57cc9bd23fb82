import Foundation
import Testing
import VoxCore
import VoxFormats
import VoxResample
import VoxTestSupport
import VoxTesting

@testable import VoxChunk

/// Mode `speakers` on a made-up conversation of two real voices: a LibriVox reader (a woman
/// reading Austen) and espeak-ng answering her, with pauses between turns. Needs the diarization
/// models `make setup` converts; espeak-ng makes the second voice.
@Suite(.needs(.diarizationModels), .needs(.librivox), .startsProcess("espeak-ng"))
struct SpeakerChunkTests {
    static let mono16k = AudioFormat(sampleRate: 16000, channels: 1)

    /// Who speaks when in a made-up conversation, and its samples.
    struct Conversation {
        var samples: [Float] = []
        var turns: [(start: Double, end: Double, who: String)] = []

        var seconds: Double { Double(samples.count) / 16000 }

        mutating func pause(_ seconds: Double) {
            var state = UInt32(samples.count % 9973 + 1)
            samples += (0..<Int(seconds * 16000)).map { _ in
                state = state &* 1_664_525 &+ 1_013_904_223
                return Float(Int32(bitPattern: state)) / Float(Int32.max) * 0.0003
            }
        }

        mutating func say(_ line: [Float], _ who: String) {
            turns.append((seconds, seconds + Double(line.count) / 16000, who))
            samples += line
        }
    }

    /// A LibriVox line (16 kHz mono PCM) as samples.
    static func reader(_ id: String) throws -> [Float] {
        let url = InstalledFixture.librivox.url.appendingPathComponent("sense_and_sensibility_01_austen_64kb-\(id).wav")
        return try #require(WAVData.decodePCM16(try Data(contentsOf: url))).samples
    }

    /// espeak-ng saying `text` in `voice`, at 16 kHz.
    static func machine(_ text: String, voice: String = "en-us") async throws -> [Float] {
        let dir = URL(fileURLWithPath: temporaryDirectory().path, isDirectory: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let wav = try #require(
            WAVData.decodePCM16(try Data(contentsOf: try espeak(text, voice: voice, into: dir))))
        return try await StageHarness(ResampleStage.self, options: ["rate": 16000, "channels": 1]).run(
            blocks(wav.samples, format: wav.format), commit: false
        ).outputs.flatMap(\.samples)
    }

    static let questions = [
        "Good morning. Could you tell me what you read about the family yesterday evening?",
        "That is interesting. Why do you think he did not help his sisters more?",
        "I see. Please read the next sentence for me, slowly and clearly.",
    ]

    /// Reader, espeak, reader, espeak, reader, espeak (37 s), with pauses of 0.8 s.
    static func conversation() async throws -> Conversation {
        var c = Conversation()
        c.pause(0.5)
        for (line, question) in zip(["0870", "0890", "0920"], questions) {
            c.say(try reader(line), "reader")
            c.pause(0.8)
            c.say(try await machine(question), "espeak")
            c.pause(0.8)
        }
        return c
    }

    /// A conversation, its chunks and each speaker's talk time.
    typealias Diarized = (conversation: Conversation, chunks: [AudioChunk], talk: [SpeakerTalk]?)

    /// `conversation()` diarized with `speakers: 2`, once for the suite: the labels, the talk time
    /// and the repeat run are all checked on this one run.
    static let twoSpeakers = Task { () async throws -> Diarized in
        let c = try await conversation()
        let (chunks, talk) = try await SpeakerChunkTests().speakersAndTalk(c.samples, ["speakers": 2])
        return (c, chunks, talk)
    }

    func speakers(
        _ samples: [Float], _ options: [String: JSONValue] = [:], baseDirectory: URL? = nil
    )
        async throws -> [AudioChunk]
    {
        var all: [String: JSONValue] = ["mode": "speakers"]
        for (k, v) in options { all[k] = v }
        return try await StageHarness(ChunkStage.self, options: all, baseDirectory: baseDirectory, engines: testEngines)
            .run(blocks(samples, format: Self.mono16k, blockFrames: 4000), commit: false).outputs
    }

    /// Checks every turn of `c` is covered by chunks of one label, each chunk inside one turn
    /// (0.5 s either way), and returns the label of each turn.
    func labels(of c: Conversation, _ chunks: [AudioChunk]) -> [String?] {
        for chunk in chunks {
            #expect(
                c.turns.contains { chunk.start >= $0.start - 0.5 && chunk.end <= $0.end + 0.5 },
                "chunk \(chunk.start)…\(chunk.end) (\(chunk.speaker ?? "-")) spans two turns")
        }
        return c.turns.map { turn in
            let inside = chunks.filter { $0.end > turn.start && $0.start < turn.end }
            let covered = inside.reduce(0.0) { $0 + min($1.end, turn.end) - max($1.start, turn.start) }
            #expect(covered > 0.8 * (turn.end - turn.start), "turn \(turn) is covered \(covered) s: \(inside)")
            let names = Set(inside.compactMap(\.speaker))
            #expect(names.count == 1, "turn \(turn): \(names)")
            return names.first
        }
    }

    @Test func twoVoicesTakingTurnsAreLabelledInOrderOfFirstAppearance() async throws {
        let (c, chunks, _) = try await Self.twoSpeakers.value
        let labels = labels(of: c, chunks)
        #expect(labels == ["Speaker 1", "Speaker 2", "Speaker 1", "Speaker 2", "Speaker 1", "Speaker 2"])
        #expect(chunks.allSatisfy { $0.cut == .speaker && $0.format == Self.mono16k })
        #expect(chunks.map(\.index) == Array(0..<chunks.count))
        #expect(zip(chunks, chunks.dropFirst()).allSatisfy { $0.end <= $1.start })
        // The same labels from the threshold, without the count.
        #expect(labels == self.labels(of: c, try await speakers(c.samples)))
    }

    @Test func oneVoiceIsOneSpeakerWithoutACount() async throws {
        var c = Conversation()
        for line in ["0870", "0880", "0890", "0920", "0930"] {
            c.pause(0.8)
            c.say(try Self.reader(line), "reader")
        }
        let chunks = try await speakers(c.samples)
        #expect(labels(of: c, chunks) == [String?](repeating: "Speaker 1", count: 5))
    }

    @Test func theSameAudioGivesTheSameChunksEveryTime() async throws {
        let (c, first, _) = try await Self.twoSpeakers.value
        let second = try await speakers(c.samples, ["speakers": 2])
        #expect(first.map(\.start) == second.map(\.start) && first.map(\.end) == second.map(\.end))
        #expect(first.map(\.speaker) == second.map(\.speaker) && first.map(\.samples) == second.map(\.samples))
    }

    @Test func theTurnsAreTheSameOnOneThreadAsOnSeveral() async throws {
        let c = try await Self.conversation()
        let models = SpeakerModels.installed()
        let segmentation = try SpeakerSegmentation(model: models.segmentation)
        let embedder = try SpeakerEmbedder(model: models.embedding)
        func segments(lanes: Int) throws -> [Diarizer.Segment] {
            try Diarizer(
                segmentation: segmentation, embedder: embedder, speakers: 2, threshold: 0.8, windowShift: 0.25,
                lanes: lanes
            )
            .segments(c.samples[...])
        }
        let one = try segments(lanes: 1)
        #expect(Set(one.map(\.speaker)) == [0, 1])
        #expect(try segments(lanes: 3) == one)
    }

    @Test func aWindowsFramesAreTheSameAloneAndAnywhereInABatch() async throws {
        // Five windows of the conversation (at 0, 5, … 20 s): alone, then as batches of five
        // and of the last three.
        let c = try await Self.conversation()
        let segmentation = try SpeakerSegmentation(model: SpeakerModels.installed().segmentation)
        let size = SpeakerSegmentation.window
        let windows = (0..<5).map { w -> [Float] in
            var window = Array(c.samples[(w * size / 2)..<min(c.samples.count, w * size / 2 + size)])
            window += [Float](repeating: 0, count: size - window.count)
            return window
        }
        func run(_ batch: ArraySlice<[Float]>) throws -> [[Float]] {
            var samples = Array(batch.joined())
            return try samples.withUnsafeMutableBufferPointer { try segmentation.activity($0) }.map(\.likelihood)
        }
        let alone = try windows.indices.flatMap { try run(windows[$0...$0]) }
        #expect(Set(alone.map { $0.reduce(0, +) }).count == 5)
        #expect(try run(windows[...]) == alone)
        #expect(try run(windows[2...]) == Array(alone[2...]))
    }

    @Test func speakersKeepTheirLabelsAcrossBlocks() async throws {
        // The conversation twice (75 s), diarized 30 s at a time: three blocks.
        let once = try await Self.conversation()
        var c = once
        for turn in once.turns { c.turns.append((turn.start + once.seconds, turn.end + once.seconds, turn.who)) }
        c.samples += once.samples
        let chunks = try await speakers(c.samples, ["blockSeconds": 30])
        let labels = labels(of: c, chunks)
        #expect(labels == c.turns.map { $0.who == "reader" ? "Speaker 1" : "Speaker 2" }, "\(labels)")
    }

    @Test func anEnrolledVoiceIsNamedAndAnotherVoiceIsNot() async throws {
        // The reader enrolled from two lines the conversation does not have.
        let dir = URL(fileURLWithPath: temporaryDirectory().path, isDirectory: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = try Self.reader("0880") + [Float](repeating: 0, count: 8000) + Self.reader("0930")
        try WAVData.pcm16(clip, format: Self.mono16k).write(to: dir.appendingPathComponent("anna.wav"))
        let c = try await Self.conversation()
        let chunks = try await speakers(c.samples, ["voices": ["Anna": "anna.wav"]], baseDirectory: dir)
        #expect(labels(of: c, chunks) == ["Anna", "Speaker 1", "Anna", "Speaker 1", "Anna", "Speaker 1"])
    }

    @Test func anEnrolledClipWithoutSpeechFailsNamingTheOption() async throws {
        let dir = URL(fileURLWithPath: temporaryDirectory().path, isDirectory: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try WAVData.pcm16([Float](repeating: 0, count: 48000), format: Self.mono16k)
            .write(to: dir.appendingPathComponent("quiet.wav"))
        let error = await #expect(throws: VoxError.self) {
            try await speakers([], ["voices": ["Tutor": "quiet.wav"]], baseDirectory: dir)
        }
        #expect(error?.category == .invalidSpec)
        #expect(error?.message.hasPrefix("stages[0].voices.Tutor: \(dir.path)/quiet.wav: no speech found") == true)
    }

    @Test func silenceAndMusicGiveNoSpeakers() async throws {
        var quiet = Conversation()
        quiet.pause(20)
        #expect(try await speakers(quiet.samples).isEmpty)
        #expect(try await speakers([Float](repeating: 0, count: 16000 * 5), ["speakers": 2]).isEmpty)
        // A tune of notes with overtones and a sweep (the Silero tests' non-speech).
        for (name, samples) in SileroDetectorTests.nonSpeech() where name == "tune" || name == "sweep" {
            let chunks = try await speakers(samples + samples, ["speakers": 2])
            #expect(chunks.isEmpty, "\(name): \(chunks.map { ($0.start, $0.end, $0.speaker) })")
        }
    }
}
