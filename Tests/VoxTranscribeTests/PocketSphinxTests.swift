import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxTranscribe

@Suite struct PocketSphinxTests {
    let recording = InstalledFixture.alsaFrontLeft.url

    func transcribe(
        _ chunks: [AudioChunk], options: [String: JSONValue] = ["provider": ["name": "pocketsphinx"]]
    ) async throws -> [Transcript] {
        try await StageHarness(TranscribeStage.self, options: options).run(chunks, commit: false).outputs
    }

    @Test(.needs(.pocketsphinxModel), .needs(.alsaFrontLeft))
    func aRecordedVoiceIsRecognisedWithWordTimesInFileTime() async throws {
        // A real recording (alsa-utils): a man saying "front left".
        let chunk = try await chunk16k(recording, start: 12.0)
        let transcripts = try await transcribe([chunk])
        #expect(transcripts.count == 1)
        let t = transcripts[0]
        #expect(t.text.split(separator: " ").contains("left"), "heard: \(t.text)")
        #expect(t.provider == "pocketsphinx")
        #expect(t.language == "en")
        #expect(!t.words.isEmpty)
        #expect(t.words.allSatisfy { $0.start >= 12.0 && $0.end <= chunk.end + 0.02 && $0.start < $0.end })
        #expect(t.words.allSatisfy { ($0.confidence ?? -1) >= 0 && ($0.confidence ?? 2) <= 1 })
        #expect(zip(t.words, t.words.dropFirst()).allSatisfy { $0.start <= $1.start })
        #expect(t.text == t.words.map(\.text).joined(separator: " "))
    }

    @Test func fillerAndSilenceTokensAreLeftOut() {
        #expect(PocketSphinxDecoder.spokenWord("<s>") == nil)
        #expect(PocketSphinxDecoder.spokenWord("<sil>") == nil)
        #expect(PocketSphinxDecoder.spokenWord("[NOISE]") == nil)
        #expect(PocketSphinxDecoder.spokenWord("++BREATH++") == nil)
        #expect(PocketSphinxDecoder.spokenWord("read(2)") == "read")
        #expect(PocketSphinxDecoder.spokenWord("hello") == "hello")
    }

    @Test(.needs(.pocketsphinxModel))
    func aSilentChunkGivesAnEmptyTranscript() async throws {
        let silence = AudioChunk(
            format: AudioFormat(sampleRate: 16000, channels: 1), samples: [Float](repeating: 0, count: 16000), start: 0,
            end: 1, index: 0, cut: .window)
        let tiny = AudioChunk(
            format: AudioFormat(sampleRate: 16000, channels: 1), samples: [Float](repeating: 0, count: 800), start: 1,
            end: 1.05, index: 1, cut: .window)
        let transcripts = try await transcribe([silence, tiny])
        #expect(transcripts.map(\.text) == ["", ""])
    }

    @Test(.needs(.pocketsphinxModel), .needs(.alsaFrontLeft))
    func oneDecoderServesEveryChunkAndItemOfAWorker() async throws {
        let provider = PocketSphinxProvider(
            settings: PocketSphinxProvider.settings(
                StageOptions(
                    stageID: "asr", path: "stages[0].provider", baseDirectory: URL(fileURLWithPath: "/"), values: [:],
                    specs: PocketSphinxProvider.options)))
        try await provider.prepare()
        let chunk = try await chunk16k(recording)
        var texts: [String] = []
        for _ in 0..<3 {
            let session = try await provider.beginItem()
            texts.append(try await session.transcribe(chunk).text)
            texts.append(try await session.transcribe(chunk).text)
            session.end()
        }
        #expect(provider.decodersCreated == 1)
        // Each chunk is decoded on its own: the same audio gives the same words every time.
        #expect(Set(texts).count == 1)
    }

    @Test func aMissingModelIsUnavailableAtPrepareNamingThePath() async throws {
        do {
            _ = try await StageHarness(
                TranscribeStage.self,
                options: ["provider": ["name": "pocketsphinx", "dictionary": "/nonexistent/words.dict"]]
            ).run([])
            Issue.record("expected an error")
        } catch let error as TranscribeError {
            #expect(error.code == .modelUnavailable && error.exitCode == 69)
            #expect(error.message == "pocketsphinx dictionary not found: /nonexistent/words.dict")
        }
    }

    @Test func theSpecMustFeedSixteenKilohertzMono() throws {
        #expect(throws: PlanError.self) {
            let options = StageOptions(
                stageID: "a", path: "p", baseDirectory: URL(fileURLWithPath: "/"),
                values: ["provider": ["name": "pocketsphinx"]], specs: TranscribeStage.options)
            _ = try TranscribeStage.outputFormat(
                try TranscribeStage.configure(options), input: StreamFormat(sampleRate: 48000, channels: 1))
        }
    }

    @Test func anUnknownProviderOptionIsASpecError() {
        #expect(throws: VoxError.self) {
            try StageHarness(TranscribeStage.self, options: ["provider": ["name": "pocketsphinx", "beam": 3]])
        }
        #expect(throws: VoxError.self) {
            try StageHarness(TranscribeStage.self, options: ["provider": ["name": "whisper-magic"]])
        }
    }
}
