import Foundation
import Testing
import VoxCore
import VoxResample
import VoxTestSupport
import VoxTesting

@testable import VoxSynthesize
@testable import VoxTranscribe

/// The Piper voice `make setup` installs, spoken through sherpa-onnx and heard back by Whisper base.
@Suite(
    .serialized,
    .needs(.piperVoices),
    .needs(.whisperModels)
) struct PiperProviderTests {
    /// The English replies the rules agents give in the field-service sample sessions
    /// (Samples/field-service, `make demo`), without the ones whose digits Whisper writes in another
    /// form ("2026-03-05 at 09:00", "340.00 USD"): those measure the recogniser's number style, not the voice.
    static let agentReplies = [
        "What is the name?",
        "What is the phone number or e-mail address?",
        "I saved Maria Lopez as a contact.",
        "Hello! I can add contacts, book jobs, write estimates and schedule appointments. What do you need?",
        "I booked the job for John Miller at 42 Main Street.",
        "What should the estimate include?",
        "Anything else on the estimate?",
    ]

    /// The speech of each text, in the parts the stage gives.
    func parts(_ texts: [String], provider: [String: JSONValue], language: String = "en") async throws -> [Speech] {
        let harness = try StageHarness(
            SynthesizeStage.self, options: ["provider": .object(provider)], rateConversion: SoxrRateConversion(),
            engines: testEngines)
        let replies = texts.enumerated().map { testReply($1, index: $0, language: language) }
        return try await harness.run(replies, commit: false).outputs
    }

    /// The speech of each text, whole.
    func speak(_ texts: [String], provider: [String: JSONValue], language: String = "en") async throws -> [Speech] {
        wholeReplies(try await parts(texts, provider: provider, language: language))
    }

    /// Each speech resampled to 16 kHz and transcribed by Whisper base in English.
    func hear(_ speech: [Speech]) async throws -> [String] {
        let chunks = try speech.map { s in
            let samples = try SoxrRateConversion().converter(channels: 1, from: s.audio.format.sampleRate, to: 16000)
                .convertAll(s.audio.samples)
            return AudioChunk(
                format: AudioFormat(sampleRate: 16000, channels: 1), samples: samples, start: 0,
                end: Double(samples.count) / 16000, index: s.audio.index, cut: .whole)
        }
        let harness = try StageHarness(
            TranscribeStage.self,
            options: ["provider": ["name": "whisper", "model": "base", "language": "en", "shrinkEncoderSeconds": 10]],
            engines: testEngines)
        return try await harness.run(chunks, commit: false).outputs.map(\.text)
    }

    /// Pooled WER: all errors over all reference words.
    func pooledWER(_ references: [String], _ heard: [String]) -> Double {
        let words = references.map { Double(scoringWords($0).count) }
        let errors = zip(references, heard).map { wordErrorRate(reference: $0, hypothesis: $1) }
        return zip(errors, words).map(*).reduce(0, +) / words.reduce(0, +)
    }

    /// Given the agents' replies, when Piper and espeak-ng (the field-service pipeline's former
    /// voice) speak them and Whisper base listens (each reply in a context of its own length, as the
    /// lesson pipelines decode short turns), then Piper's words come back within 10% WER and
    /// better than espeak-ng's.
    @Test func whisperHearsPiperBetterThanEspeak() async throws {
        let piper = try await hear(try await speak(Self.agentReplies, provider: ["name": "piper"]))
        let espeak = try await hear(
            try await speak(Self.agentReplies, provider: ["name": "espeak-ng", "voice": "en-us", "rate": 160]))
        let (piperWER, espeakWER) = (pooledWER(Self.agentReplies, piper), pooledWER(Self.agentReplies, espeak))
        for (i, text) in Self.agentReplies.enumerated() {
            print("said:   \(text)\npiper:  \(piper[i])\nespeak: \(espeak[i])")
        }
        print(
            String(
                format: "round-trip WER through Whisper base: piper %.1f%%, espeak-ng %.1f%%", piperWER * 100,
                espeakWER * 100))
        #expect(piperWER <= 0.10, "piper: \(piper)")
        #expect(piperWER < espeakWER)
    }

    @Test func speechIsTheVoicesRateAndSentencesArePaused() async throws {
        let speech = try await speak(["Yes.", "Yes. Yes."], provider: ["name": "piper"])
        #expect(speech.map(\.audio.format) == Array(repeating: AudioFormat(sampleRate: 22050, channels: 1), count: 2))
        #expect(speech.allSatisfy { rms($0.audio.samples) > 0.02 })
        // Two sentences: twice the speech and the pause between them.
        let pause = Int(PiperProvider.sentencePause * 22050)
        #expect(speech[1].audio.samples.count == 2 * speech[0].audio.samples.count + pause)
    }

    /// Given a reply of three sentences, then its speech comes out a sentence at a time: three parts,
    /// the first two continuing, the later ones the pause and the same "Yes." again.
    @Test func aReplyStreamsOutSentenceBySentence() async throws {
        let parts = try await parts(["Yes. Yes. Yes."], provider: ["name": "piper"])
        #expect(parts.map(\.audio.continues) == [true, true, false])
        let pause = [Float](repeating: 0, count: Int(PiperProvider.sentencePause * 22050))
        #expect(parts[1].audio.samples == pause + parts[0].audio.samples)
        #expect(parts[2].audio.samples == parts[1].audio.samples)
    }

    /// Given a reply whose transcript is German, then espeak-ng's German voice speaks it (no German
    /// Piper voice is installed), sample for sample as the espeak-ng provider would; with
    /// `otherLanguages: voice` the Piper voice reads it anyway.
    @Test func aGermanReplyIsSpokenByEspeakInGermanUnlessTheVoiceIsAsked() async throws {
        let text = "Der Termin ist am Montag um neun Uhr. Bis dann!"
        let piper = try await speak([text], provider: ["name": "piper"], language: "de")
        let espeak = try await speak([text], provider: ["name": "espeak-ng", "voice": "de"], language: "de")
        #expect(piper.count == 1 && espeak.count == 1)
        #expect(piper[0].audio.samples == espeak[0].audio.samples)
        let english = try await speak([text], provider: ["name": "piper"], language: "en")
        let kept = try await speak([text], provider: ["name": "piper", "otherLanguages": "voice"], language: "de")
        #expect(kept[0].audio.samples == english[0].audio.samples)
        #expect(kept[0].audio.samples != espeak[0].audio.samples)
        #expect(PiperProvider.family("en_US") == "en" && PiperProvider.family("de-DE") == "de")
    }

    @Test func theSameTextGivesTheSameSamplesAndSpeedShortensIt() async throws {
        let text = "A technician will come by tomorrow at nine."
        let first = try await speak([text], provider: ["name": "piper"])[0].audio.samples
        let second = try await speak([text], provider: ["name": "piper"])[0].audio.samples
        #expect(first == second)
        let fast = try await speak([text], provider: ["name": "piper", "speed": 2])[0].audio.samples
        #expect(fast.count < first.count * 2 / 3)
    }

    @Test func aMissingVoiceIsUnavailableAtPrepareAndSaysWhere() async throws {
        do {
            _ = try await speak(["x"], provider: ["name": "piper", "voice": "xx_XX-nobody-low"])
            Issue.record("expected an error")
        } catch let error as SynthesizeError {
            #expect(error.code == .voice && error.exitCode == 69)
            #expect(error.message.hasPrefix("Piper voice 'xx_XX-nobody-low' is not installed (looked in "))
        }
        do {
            _ = try await speak(["x"], provider: ["name": "piper", "voice": "/nonexistent/voice"])
            Issue.record("expected an error")
        } catch let error as SynthesizeError {
            #expect(error.code == .voice && error.exitCode == 69)
            #expect(
                error.message
                    == "Piper voice not found: /nonexistent/voice (a folder holding a voice's .onnx and .onnx.json)")
        }
    }

    @Test func aSpeakerTheVoiceLacksIsABadSpec() throws {
        #expect(throws: VoxError.self) {
            _ = try StageHarness(
                SynthesizeStage.self, options: ["provider": ["name": "piper", "speaker": 1]], engines: testEngines)
        }
    }

    @Test func clausePunctuationIsKeptAndSentencesEndAtStops() {
        #expect(PiperEngine.terminator("Hi Dana, a") == ",")
        #expect(PiperEngine.terminator(" at 9:30 on March 3rd. I") == ".")
        #expect(PiperEngine.terminator("s 42 Elm Street right? Y") == "?")
        #expect(PiperEngine.terminator(" 9:30") == nil)
        #expect(PiperEngine.terminator("es!") == "!")
        let known: [Unicode.Scalar: Int] = ["a": 1, "b": 2, ",": 3, ".": 4, " ": 5, "?": 6]
        let sentences = PiperEngine.sentences(
            [("a", "A, b"), ("b", " B. c"), ("ab", "c"), ("ba", " d?")], known: known)
        #expect(
            sentences.map { String(String.UnicodeScalarView($0.compactMap { Unicode.Scalar(UInt32($0)) })) } == [
                "a, b.", "ab ba?",
            ])
    }

    @Test func aPiperModelGetsSherpaMetadataAppendedOnce() throws {
        let voice = try #require(
            PiperVoice.resolve(PiperProvider.defaultVoice, baseDirectory: URL(fileURLWithPath: "/")))
        #expect(!PiperVoice.hasMetadata(voice.model))
        let copy = temporaryDirectory().appendingPathComponent("model.onnx")
        let config = try PiperVoice.Config(Data(contentsOf: voice.config))
        try PiperVoice.writeModel(from: voice.model, to: copy, metadata: config.metadata)
        #expect(PiperVoice.hasMetadata(copy))
        let original = try FileManager.default.attributesOfItem(atPath: voice.model.path)[.size] as? Int ?? 0
        let converted = try FileManager.default.attributesOfItem(atPath: copy.path)[.size] as? Int ?? 0
        #expect(converted > original && converted < original + 1000)
        #expect(config.tokens.hasPrefix("_ 0\n^ 1\n$ 2\n  3\n"))
    }
}
