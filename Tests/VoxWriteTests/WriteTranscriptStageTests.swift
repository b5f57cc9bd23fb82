import Foundation
import Testing
import VoxCore
import VoxResample
import VoxTestSupport
import VoxTesting

@testable import VoxWrite

@Suite struct WriteTranscriptStageTests {
    func transcript(_ text: String, start: Double, end: Double, index: Int) -> Transcript {
        let chunk = AudioChunk(
            format: AudioFormat(sampleRate: 16000, channels: 1), samples: [], start: start, end: end, index: index,
            cut: .voice)
        let words = text.split(separator: " ").enumerated().map { i, w in
            Word(text: String(w), start: start + Double(i) * 0.3, end: start + Double(i) * 0.3 + 0.25, confidence: 0.9)
        }
        return Transcript(
            chunk: chunk, text: text, words: words, language: "en", provider: "pocketsphinx", model: "en-us")
    }

    var segments: [Transcript] {
        [
            transcript("hello there", start: 1.25, end: 2.5, index: 0), transcript("", start: 3, end: 4, index: 1),
            transcript("call me back", start: 3725.5, end: 3729.004, index: 2),
        ]
    }

    func write(_ formats: [String]) async throws -> (URL, [Artifact]) {
        let out = temporaryDirectory()
        let harness = try StageHarness(
            WriteTranscriptStage.self, id: "subs", options: ["formats": .array(formats.map { .string($0) })],
            outputDirectory: out)
        let (artifacts, _) = try await harness.run(segments)
        return (out.appendingPathComponent("item"), artifacts)
    }

    @Test func aTranscriptWithSegmentsGivesOneCuePerSegmentWithItsWords() async throws {
        // A 30-s chunk that Whisper decoded as two segments.
        var long = transcript("one two three four", start: 10, end: 40, index: 0)
        long.words = [
            Word(text: "one", start: 11, end: 11.5, confidence: 0.9),
            Word(text: "two", start: 12, end: 12.5, confidence: 0.9),
            Word(text: "three", start: 31, end: 31.5, confidence: 0.9),
            Word(text: "four", start: 32, end: 33, confidence: 0.9),
        ]
        long.segments = [
            TranscriptSegment(text: "one two", start: 11, end: 12.5),
            TranscriptSegment(text: "three four", start: 31, end: 33),
        ]
        let out = temporaryDirectory()
        let harness = try StageHarness(
            WriteTranscriptStage.self, id: "subs", options: ["formats": ["srt", "json", "txt"]], outputDirectory: out)
        _ = try await harness.run([long])
        let srt = try String(contentsOf: out.appendingPathComponent("item/subs.srt"), encoding: .utf8)
        #expect(srt == "1\n00:00:11,000 --> 00:00:12,500\none two\n\n2\n00:00:31,000 --> 00:00:33,000\nthree four\n\n")
        #expect(
            try String(contentsOf: out.appendingPathComponent("item/subs.txt"), encoding: .utf8)
                == "one two three four\n")
        let object =
            try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("item/subs.json")))
            as? [String: Any]
        let segs = object?["segments"] as? [[String: Any]] ?? []
        #expect(
            segs.map { ($0["words"] as? [[String: Any]] ?? []).compactMap { $0["word"] as? String } } == [
                ["one", "two"], ["three", "four"],
            ])
    }

    @Test func srtHasNumberedCuesWithChunkSpans() async throws {
        let (dir, artifacts) = try await write(["srt"])
        #expect(artifacts.map(\.path) == ["item/subs.srt"])
        let srt = try String(contentsOf: dir.appendingPathComponent("subs.srt"), encoding: .utf8)
        #expect(
            srt == "1\n00:00:01,250 --> 00:00:02,500\nhello there\n\n2\n01:02:05,500 --> 01:02:09,004\ncall me back\n\n"
        )
    }

    @Test func vttStartsWithItsHeaderAndUsesDots() async throws {
        let (dir, _) = try await write(["vtt"])
        let vtt = try String(contentsOf: dir.appendingPathComponent("subs.vtt"), encoding: .utf8)
        #expect(
            vtt
                == "WEBVTT\n\n00:00:01.250 --> 00:00:02.500\nhello there\n\n01:02:05.500 --> 01:02:09.004\ncall me "
                + "back\n\n"
        )
    }

    @Test func tsvAndTxtMatchWhisper() async throws {
        let (dir, _) = try await write(["tsv", "txt"])
        #expect(
            try String(contentsOf: dir.appendingPathComponent("subs.tsv"), encoding: .utf8)
                == "start\tend\ttext\n1250\t2500\thello there\n3725500\t3729004\tcall me back\n")
        #expect(
            try String(contentsOf: dir.appendingPathComponent("subs.txt"), encoding: .utf8)
                == "hello there\ncall me back\n")
    }

    @Test func jsonParsesInWhispersShapeWithWordTimes() async throws {
        let (dir, _) = try await write(["json"])
        let data = try Data(contentsOf: dir.appendingPathComponent("subs.json"))
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        #expect(object?["text"] as? String == "hello there call me back")
        #expect(object?["language"] as? String == "en")
        let segs = object?["segments"] as? [[String: Any]] ?? []
        #expect(segs.count == 2)
        #expect(segs.first?["start"] as? Double == 1.25)
        #expect(segs.first?["end"] as? Double == 2.5)
        #expect(segs.last?["start"] as? Double == 3725.5)
        let words = segs.first?["words"] as? [[String: Any]] ?? []
        #expect(words.map { $0["word"] as? String } == ["hello", "there"])
        #expect(words.first?["probability"] as? Double == 0.9)
    }

    /// A tutor and a learner taking turns, as chunk mode speakers labels them; the learner's
    /// long turn came as two chunks.
    var conversation: [Transcript] {
        [("Tutor", "guten Morgen", 0.5, 2.25), ("Speaker 1", "Morgen", 3, 4), ("Speaker 1", "wie geht es", 4, 6.5)]
            .enumerated().map { i, turn in
                var t = transcript(turn.1, start: turn.2, end: turn.3, index: i)
                t.chunk.speaker = turn.0
                t.chunk.cut = .speaker
                return t
            }
    }

    @Test func speakersLeadSRTLinesAndAreWebVTTVoicesAndJSONFields() async throws {
        let out = temporaryDirectory()
        let harness = try StageHarness(
            WriteTranscriptStage.self, id: "subs", options: ["formats": ["srt", "vtt", "json", "txt"]],
            outputDirectory: out)
        _ = try await harness.run(conversation)
        func file(_ ext: String) throws -> String {
            try String(contentsOf: out.appendingPathComponent("item/subs.\(ext)"), encoding: .utf8)
        }
        #expect(
            try file("srt")
                == "1\n00:00:00,500 --> 00:00:02,250\nTutor: guten Morgen\n\n2\n00:00:03,000 --> 00:00:04,000\n"
                + "Speaker 1: Morgen\n\n3\n00:00:04,000 --> 00:00:06,500\nSpeaker 1: wie geht es\n\n")
        #expect(
            try file("vtt")
                == "WEBVTT\n\n00:00:00.500 --> 00:00:02.250\n<v Tutor>guten Morgen\n\n00:00:03.000 --> 00:00:04.000\n"
                + "<v Speaker 1>Morgen\n\n00:00:04.000 --> 00:00:06.500\n<v Speaker 1>wie geht es\n\n")
        let object = try JSONSerialization.jsonObject(with: Data(try file("json").utf8)) as? [String: Any]
        let segments = object?["segments"] as? [[String: Any]] ?? []
        #expect(segments.compactMap { $0["speaker"] as? String } == ["Tutor", "Speaker 1", "Speaker 1"])
        #expect(try file("txt") == "guten Morgen\nMorgen\nwie geht es\n")
    }

    @Test func rttmHasOneLinePerSpeakerTurnWithUnderscoresForSpaces() async throws {
        let out = temporaryDirectory()
        let harness = try StageHarness(
            WriteTranscriptStage.self, id: "turns", options: ["formats": ["rttm"]], outputDirectory: out,
            item: InputFile(
                url: URL(fileURLWithPath: "/in/lesson 3.wav"), relativePath: "week 1/lesson 3.wav",
                outputName: "week 1/lesson 3"))
        _ = try await harness.run(conversation)
        let rttm = try String(contentsOf: out.appendingPathComponent("week 1/lesson 3/turns.rttm"), encoding: .utf8)
        #expect(
            rttm
                == "SPEAKER lesson_3 1 0.500 1.750 <NA> <NA> Tutor <NA> <NA>\n"
                + "SPEAKER lesson_3 1 3.000 3.500 <NA> <NA> Speaker_1 <NA> <NA>\n")
    }

    @Test func withoutSpeakersTheFilesAreAsBeforeAndRTTMIsEmpty() async throws {
        let (dir, _) = try await write(["srt", "vtt", "json", "rttm"])
        let json = try String(contentsOf: dir.appendingPathComponent("subs.json"), encoding: .utf8)
        #expect(!json.contains("speaker"))
        #expect(!(try String(contentsOf: dir.appendingPathComponent("subs.vtt"), encoding: .utf8)).contains("<v "))
        #expect(try String(contentsOf: dir.appendingPathComponent("subs.rttm"), encoding: .utf8) == "")
    }

    @Test func aTranscriptCarriedByTwoRepliesIsWrittenOnce() async throws {
        let out = temporaryDirectory()
        let t = transcript("wie geht es dir", start: 0, end: 2, index: 0)
        let replies = [Reply(transcript: t, text: "gut"), Reply(transcript: t, text: "sehr gut")]
        _ = try await StageHarness(
            WriteTranscriptStage.self, id: "subs", options: ["formats": ["txt"]], outputDirectory: out
        ).run(replies)
        #expect(
            try String(contentsOf: out.appendingPathComponent("item/subs.txt"), encoding: .utf8) == "wie geht es dir\n")
    }
}

@Suite struct WriteRepliesAndRateTests {
    func speech(index: Int, text: String) -> Speech {
        let source = AudioChunk(
            format: AudioFormat(sampleRate: 16000, channels: 1), samples: [], start: Double(index) * 4,
            end: Double(index) * 4 + 3, index: index, cut: .voice)
        let transcript = Transcript(
            chunk: source, text: "turn \(index)", words: [], language: "de", provider: "test", model: nil)
        let audio = AudioChunk(
            format: AudioFormat(sampleRate: 22050, channels: 1), samples: sine(rate: 22050, channels: 1, seconds: 0.5),
            start: source.start, end: source.start + 0.5, index: index, cut: .synthesized)
        return Speech(audio: audio, reply: Reply(transcript: transcript, text: text))
    }

    @Test func repliesJSONUsesTheRESTFieldNamesAndEmbedsAudio() async throws {
        let out = temporaryDirectory()
        let harness = try StageHarness(
            WriteRepliesStage.self, id: "replies", options: ["embedAudio": true, "audioFrom": "speech"],
            outputDirectory: out)
        _ = try await harness.run([speech(index: 0, text: "Hallo!"), speech(index: 2, text: "Gut!")])
        let object =
            try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("item/replies.json")))
            as? [String: Any]
        #expect(object?["success"] as? Bool == true)
        let turns = object?["turns"] as? [[String: Any]] ?? []
        #expect(turns.count == 2)
        #expect(turns[1]["transcription"] as? String == "turn 2")
        #expect(turns[1]["reply"] as? String == "Gut!")
        #expect(turns[1]["start"] as? Double == 8)
        #expect(turns[1]["audioFile"] as? String == "speech-0003.wav")
        let wav = Data(base64Encoded: turns[0]["audio"] as? String ?? "") ?? Data()
        #expect(String(decoding: wav.prefix(4), as: UTF8.self) == "RIFF")
        #expect(wav.count == 44 + 11025 * 2)
    }

    @Test func eachTurnNamesItsSpokenReplyWithTheExtensionTheAudioFromStageDeclares() async throws {
        let out = temporaryDirectory()
        let m4a = try WriteAudioStage.configure(
            StageOptions.validated(
                ["format": "m4a"], against: WriteAudioStage.options, stageID: "speech", path: "stages[3]",
                owner: WriteAudioStage.kind, baseDirectory: out))
        let planned = PlannedStage(
            id: "speech", kind: WriteAudioStage.kind, declarations: WriteAudioStage.declarations(m4a))
        let harness = try StageHarness(
            WriteRepliesStage.self, id: "replies", options: ["audioFrom": "speech"], outputDirectory: out,
            provenance: Provenance(stages: [planned]))
        _ = try await harness.run([speech(index: 2, text: "Gut!")])
        let object =
            try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("item/replies.json")))
            as? [String: Any]
        let turns = object?["turns"] as? [[String: Any]] ?? []
        #expect(turns.first?["audioFile"] as? String == "speech-0003.m4a")
    }

    @Test func writeWAVConvertsSpeechToTheRateAsked() async throws {
        let out = temporaryDirectory()
        let harness = try StageHarness(
            WriteWAVStage.self, id: "speech", options: ["rate": 48000], outputDirectory: out,
            rateConversion: SoxrRateConversion())
        let (artifacts, _) = try await harness.run([speech(index: 0, text: "x")])
        #expect(artifacts.map(\.path) == ["item/speech-0001.wav"])
        let (format, samples) = try await readAll(out.appendingPathComponent("item/speech-0001.wav"))
        #expect(format == AudioFormat(sampleRate: 48000, channels: 1))
        #expect(abs(samples.count - 24000) <= 1)
        #expect(abs(rms(samples[2000..<22000]) - 0.3536) < 0.01)
    }

    @Test func writeWAVConvertsAStreamOfBlocksToo() async throws {
        let out = temporaryDirectory()
        let harness = try StageHarness(
            WriteWAVStage.self, id: "audio", options: ["rate": 16000], outputDirectory: out,
            rateConversion: SoxrRateConversion())
        let input = blocks(
            sine(rate: 44100, channels: 2, seconds: 2), format: AudioFormat(sampleRate: 44100, channels: 2),
            blockFrames: 5000)
        _ = try await harness.run(input)
        let (format, samples) = try await readAll(out.appendingPathComponent("item/audio.wav"))
        #expect(format == AudioFormat(sampleRate: 16000, channels: 2))
        #expect(abs(samples.count / 2 - 32000) <= 1)
    }
}
