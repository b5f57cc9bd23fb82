import Foundation
import Testing
import VoxCore
import VoxRequest
import VoxResample
import VoxTestSupport
import VoxTesting

@testable import VoxSynthesize
@testable import VoxTranscribe

@Suite(.serialized) struct SynthesizeStageTests {
    func reply(_ text: String, index: Int = 0) -> Reply { testReply(text, index: index, start: 2, language: "de") }

    func speak(_ texts: [String], voice: String = "en-us", rate: Int = 175) async throws -> [Speech] {
        let harness = try StageHarness(
            SynthesizeStage.self,
            options: ["provider": ["name": "espeak-ng", "voice": .string(voice), "rate": .number(Double(rate))]])
        return try await harness.run(texts.enumerated().map { reply($1, index: $0) }, commit: false).outputs
    }

    @Test(.startsProcess("espeak-ng"))
    func speechIsNonSilentAndGrowsWithTheText() async throws {
        let speech = try await speak(
            ["Hallo.", "Hallo, wie geht es dir heute? Ich lerne seit einem Jahr Deutsch und es macht mir viel Spaß."],
            voice: "de")
        #expect(speech.count == 2)
        #expect(speech.allSatisfy { $0.audio.format == AudioFormat(sampleRate: 22050, channels: 1) })
        #expect(speech.allSatisfy { rms($0.audio.samples) > 0.02 })
        #expect(speech[1].audio.samples.count > 3 * speech[0].audio.samples.count)
        #expect(speech.map(\.audio.index) == [0, 1])
        #expect(speech[0].audio.start == 2)
        #expect(speech[0].reply.text == "Hallo.")
    }

    @Test(.startsProcess("espeak-ng"))
    func emptyTextGivesNoSpeechAndOddCharactersNoError() async throws {
        let speech = try await speak(["", "   ", "Ok."])
        #expect(speech.map(\.audio.index) == [2])
        // Symbols and a control character: espeak-ng names them; nothing fails, nothing is empty.
        let odd = try await speak(["🙂🙂 ✓", "\u{7}"])
        #expect(odd.map(\.audio.index) == [0, 1])
        #expect(odd.allSatisfy { !$0.audio.samples.isEmpty })
    }

    @Test(.startsProcess("espeak-ng"))
    func aReplySoundsTheSameWhateverWasSpokenBeforeIt() async throws {
        // libespeak-ng's pitch flutter and wave phase run on from one utterance to the next: the
        // same reply came out different each time in one process, so a run's audio depended on
        // the order its items reached the voice.
        let reply = "Mir geht es gut, danke der Nachfrage! Und wie geht es dir?"
        let speech = try await speak([reply, "Something else, of another length.", reply, reply], voice: "de")
        let first = speech[0].audio.samples
        let again = [
            speech[2].audio.samples, speech[3].audio.samples, try await speak([reply], voice: "de")[0].audio.samples,
        ]
        #expect(again.map { $0 == first } == [true, true, true], "lengths \(first.count) vs \(again.map(\.count))")
    }

    @Test func aServedRequestsVoiceAndSpeedApplyWhenEspeakHasThem() throws {
        let provider = EspeakProvider(
            StageOptions(
                stageID: "tts", path: "p", baseDirectory: URL(fileURLWithPath: "/"),
                values: ["voice": "de", "rate": 150], specs: EspeakProvider.options))
        #expect(try provider.requested(nil) == provider.voice)
        #expect(try provider.requested(SpeechRequest(voice: "alloy")).name == "de")
        #expect(try provider.requested(SpeechRequest(voice: "en-us")).name == "en-us")
        #expect(try provider.requested(SpeechRequest(speed: 2)).rate == 300)
        #expect(try provider.requested(SpeechRequest(speed: 4)).rate == 450)
        #expect(try provider.requested(SpeechRequest(speed: 0.25)).rate == 80)
    }

    @Test(.startsProcess("espeak-ng"))
    func longTextIsSplitAtSentenceEnds() async throws {
        #expect(
            TextPieces.sentences("One. Two! Three? Four\nFive", maxCharacters: 600) == [
                "One.", "Two!", "Three?", "Four", "Five",
            ])
        #expect(EspeakProvider.pieces("One. Two! Three? Four\nFive") == ["One. Two! Three? Four Five"])
        let sentences = String(repeating: "This is one sentence of a long reply. ", count: 50)
        let packed = EspeakProvider.pieces(sentences)
        #expect(packed.count > 1 && packed.allSatisfy { $0.count <= EspeakProvider.maxPiece && $0.hasSuffix(".") })
        let long = String(repeating: "word ", count: 400)
        let pieces = EspeakProvider.pieces(long)
        #expect(pieces.count >= 4)
        #expect(pieces.allSatisfy { $0.count <= EspeakProvider.maxPiece && !$0.hasPrefix(" ") })
        #expect(pieces.joined(separator: " ") == long.trimmingCharacters(in: .whitespaces))
        let speech = try await speak([String(repeating: "This is a sentence. ", count: 60)])
        #expect(Double(speech.map(\.audio.samples.count).reduce(0, +)) / 22050 > 40)
    }

    /// A long reply streams out piece by piece: parts of one index, each a piece's speech, all but
    /// the last continuing, back to back in time, the whole equal to the reply spoken at once; the
    /// reply rides on the last part only, so a transcript or reply stage sees it once.
    @Test(.startsProcess("espeak-ng"))
    func aLongReplyComesOutInPartsThatMakeTheWholeReply() async throws {
        let long = String(repeating: "This is one sentence of a long reply. ", count: 64)
        let speech = try await speak([long, "Short."])
        let parts = speech.filter { $0.audio.index == 0 }
        #expect(parts.count == EspeakProvider.pieces(long).count && parts.count >= 4)
        #expect(parts.map(\.audio.continues) == Array(repeating: true, count: parts.count - 1) + [false])
        #expect(speech.last?.audio.index == 1 && speech.last?.audio.continues == false)
        for (a, b) in zip(parts, parts.dropFirst()) { #expect(abs(a.audio.end - b.audio.start) < 1e-9) }
        #expect(parts[0].audio.start == 2)
        let whole = try await EspeakProvider(voice: .init(name: "en-us", rate: 175, pitch: 50, volume: 100))
            .synthesize(long)
        #expect(parts.flatMap(\.audio.samples) == whole.samples)
        #expect(parts.allSatisfy { $0.audio.samples.count < whole.samples.count / 3 })
        #expect(parts.map { $0.carried(Reply.self) != nil } == parts.map { !$0.audio.continues })
        #expect(parts.map { $0.carried(AudioChunk.self) != nil } == Array(repeating: true, count: parts.count))
    }

    @Test func anUnknownVoiceIsUnavailableAtPrepare() async throws {
        do {
            _ = try await speak(["x"], voice: "klingon-xx")
            Issue.record("expected an error")
        } catch let error as SynthesizeError {
            #expect(error.code == .voice && error.exitCode == 69)
            #expect(
                error.message
                    == "espeak-ng has no voice \"klingon-xx\"; list the voices with `espeak-ng --voices` (or "
                    + "`espeak-ng --voices=de` for one language)"
            )
        }
    }

    /// Given espeak-ng's English voice, when its speech goes through voxpipe's resampler and
    /// pocketsphinx, then the words of a short command come back.
    @Test(.needs(.pocketsphinxModel), .startsProcess("espeak-ng"))
    func roundTripThroughTheRecogniserKeepsTheCommand() async throws {
        let speech = try await speak(["stop the music"], rate: 140)
        let chunk = speech[0].audio
        let resampled = try SoxrRateConversion().converter(channels: 1, from: chunk.format.sampleRate, to: 16000)
            .convertAll(chunk.samples)
        let audio = AudioChunk(
            format: AudioFormat(sampleRate: 16000, channels: 1), samples: resampled, start: 0,
            end: Double(resampled.count) / 16000, index: 0, cut: .whole)
        let transcripts = try await StageHarness(TranscribeStage.self, options: ["provider": ["name": "pocketsphinx"]])
            .run([audio], commit: false).outputs
        let words = Set(transcripts[0].text.split(separator: " ").map(String.init))
        // pocketsphinx_continuous hears "stop the music" in the same audio; the command word must survive.
        #expect(words.contains("stop"), "heard: \(transcripts[0].text)")
        #expect(words.count >= 2)
    }
}
