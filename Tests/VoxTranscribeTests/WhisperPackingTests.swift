import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxTranscribe

/// `packSeconds`: short chunks of one item decoded together in one Whisper window and split back
/// by word times. With Whisper base (installed by `make setup`) on espeak-ng sentences and the
/// LibriVox lines; the splitting and the batching also alone, on made-up tokens and lengths.
/// Not serialized, as WhisperTests.
@Suite(.needs(.whisperModels)) struct WhisperPackingTests {
    /// Six short English sentences, each with a word no other one has.
    static let sentences: [(text: String, keyword: String)] = [
        ("The train to Boston leaves at noon.", "boston"),
        ("My sister plays the violin every evening.", "violin"),
        ("Please close the window before you leave.", "window"),
        ("We bought fresh apples at the market.", "apples"),
        ("The doctor told him to rest for a week.", "doctor"),
        ("Turn left at the old church and walk straight on.", "church"),
    ]

    /// The sentences as chunks of one item, 5 s apart in the file from 100 s on.
    static func sentenceChunks() async throws -> [AudioChunk] {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var chunks: [AudioChunk] = []
        for (i, sentence) in sentences.enumerated() {
            var chunk = try await chunk16k(try espeak(sentence.text, into: dir), start: 100 + Double(i) * 5)
            chunk.index = i
            chunk.cut = .voice
            chunks.append(chunk)
        }
        return chunks
    }

    /// Runs the chunks through a transcribe stage; also how many decodes its provider began.
    func transcribe(
        _ chunks: [AudioChunk], _ provider: [String: JSONValue]
    ) async throws -> (
        transcripts: [Transcript], decodes: Int
    ) {
        var block: [String: JSONValue] = ["name": "whisper", "language": "en"]
        for (k, v) in provider { block[k] = v }
        let harness = try StageHarness(
            TranscribeStage.self, options: ["provider": .object(block)], engines: testEngines)
        let transcripts = try await harness.run(chunks, commit: false).outputs
        let whisper = try #require(harness.stage.provider as? WhisperProvider)
        return (transcripts, whisper.decodesStarted)
    }

    @Test func packedShortTurnsComeBackOnePerChunkWithTheirOwnWordsAndTimes() async throws {
        let chunks = try await Self.sentenceChunks()
        let (transcripts, decodes) = try await transcribe(chunks, ["packSeconds": 30])
        // Six turns of about 2.5 s and five gaps of 1 s fit in one window: one decode, not six.
        #expect(decodes < chunks.count, "\(decodes) decodes for \(chunks.count) chunks")
        try #require(transcripts.count == chunks.count)
        for (i, (t, chunk)) in zip(transcripts, chunks).enumerated() {
            #expect(t.chunk.index == i && t.chunk.start == chunk.start && t.language == "en")
            let words = scoringWords(t.text)
            #expect(words.contains(Self.sentences[i].keyword), "chunk \(i) heard: \(t.text)")
            for (k, other) in Self.sentences.enumerated() where k != i {
                #expect(!words.contains(other.keyword), "chunk \(i) has chunk \(k)'s \(other.keyword): \(t.text)")
            }
            let wer = wordErrorRate(reference: Self.sentences[i].text, hypothesis: t.text)
            #expect(wer <= 0.2, "chunk \(i) WER \(wer): \(t.text)")
            #expect(!t.words.isEmpty)
            #expect(
                t.words.allSatisfy { $0.start >= chunk.start && $0.end <= chunk.end && $0.start <= $0.end },
                "chunk \(i) [\(chunk.start), \(chunk.end)]: \(t.words)")
            #expect(zip(t.words, t.words.dropFirst()).allSatisfy { $0.start <= $1.start })
            // Where in the chunk: espeak-ng speaks from its first tenth of a second to its end.
            if let first = t.words.first, let last = t.words.last {
                #expect(first.start < chunk.start + 1, "chunk \(i) starts at \(chunk.start): \(t.words)")
                #expect(last.start - first.start > (chunk.end - chunk.start) / 2, "chunk \(i): \(t.words)")
            }
            #expect(t.segments.allSatisfy { $0.start >= chunk.start && $0.end <= chunk.end }, "\(t.segments)")
        }
    }

    @Test(.needs(.librivox))
    func packedDecodingHearsAsWellAsDecodingEachChunkAlone() async throws {
        // The LibriVox lines (real read speech, 2–5 s) as one item: packed into Whisper windows, and
        // each alone (decoded once for WhisperTests' WER too). The espeak-ng sentences packed are
        // checked one by one above.
        let lines = try await WhisperTests.librivoxAlone.value
        let reference = lines.references.joined(separator: " ")
        let packed = try await transcribe(lines.chunks, ["packSeconds": 30])
        let aloneWER = wordErrorRate(
            reference: reference, hypothesis: lines.transcripts.map(\.text).joined(separator: " "))
        let packedWER = wordErrorRate(
            reference: reference, hypothesis: packed.transcripts.map(\.text).joined(separator: " "))
        print("WER on \(lines.chunks.count) chunks: alone \(aloneWER), packed \(packedWER) (\(packed.decodes) decodes)")
        #expect(packed.decodes < lines.chunks.count)
        #expect(
            packedWER <= aloneWER + 0.01,
            "alone: \(lines.transcripts.map(\.text))\npacked: \(packed.transcripts.map(\.text))")
    }

    @Test func aTwoTenthSecondChunkAndASilentOneAmongPackedTurnsGiveNoText() async throws {
        let speech = try await Self.sentenceChunks()
        let mono16k = AudioFormat(sampleRate: 16000, channels: 1)
        var state: UInt64 = 7
        let hiss = (0..<3200).map { _ -> Float in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state >> 11) % 3 - 1) * 0.003  // -50 dBFS noise
        }
        let short = AudioChunk(format: mono16k, samples: hiss, start: 104, end: 104.2, index: 1, cut: .voice)
        let silent = AudioChunk(
            format: mono16k, samples: [Float](repeating: 0, count: 32000), start: 104.5, end: 106.5, index: 2,
            cut: .voice)
        var chunks = [speech[0], short, silent, speech[1], speech[2]]
        for k in chunks.indices { chunks[k].index = k }
        let (transcripts, decodes) = try await transcribe(chunks, ["packSeconds": 30])
        print("0.2 s and silence among 3 turns: \(decodes) decodes")
        #expect(transcripts.map(\.chunk.index) == [0, 1, 2, 3, 4])
        #expect(transcripts[1].text == "" && transcripts[1].words.isEmpty, "0.2 s: \(transcripts[1].text)")
        #expect(transcripts[2].text == "" && transcripts[2].words.isEmpty, "silence: \(transcripts[2].text)")
        #expect(scoringWords(transcripts[0].text).contains("boston"), "\(transcripts[0].text)")
        #expect(scoringWords(transcripts[3].text).contains("sister"), "\(transcripts[3].text)")
        #expect(scoringWords(transcripts[4].text).contains("window"), "\(transcripts[4].text)")
    }

    @Test func aWindowThatRepeatsItselfIsNotSplitAndItsTurnsAreDecodedAlone() async throws {
        // Found in a trial: German speech, -50 dBFS noise, the sine sweep of Samples/, the speech
        // again. Packed, Whisper lost the first turn's last sentence and aligned a repetition loop
        // ("Ist nicht noch Deutsch. Guten Morgen! …" five times) into the last turn.
        let mono16k = AudioFormat(sampleRate: 16000, channels: 1)
        var german = try await chunk16k(WhisperTests.samples.appendingPathComponent("speech-de-44k-stereo.flac"))
        var state: UInt64 = 42
        let hiss = (0..<(16000 * 3)).map { _ -> Float in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state >> 11) % 3 - 1) * 0.003
        }
        var tones = try await chunk16k(WhisperTests.samples.appendingPathComponent("sweep-8k.aiff"), start: 12)
        tones.index = 2
        var again = german
        again.start = 30
        again.end = 30 + german.end
        again.index = 3
        german.index = 0
        let noise = AudioChunk(format: mono16k, samples: hiss, start: 9, end: 12, index: 1, cut: .voice)
        let (transcripts, _) = try await transcribe(
            [german, noise, tones, again], ["language": "de", "packSeconds": 30])
        let reference = "Guten Morgen! Wie geht es dir heute? Ich lerne Deutsch."
        #expect(transcripts.map(\.text.isEmpty) == [false, true, true, false], "\(transcripts.map(\.text))")
        for t in [transcripts[0], transcripts[3]] {
            // Each turn has its own sentences, once: none lost to the other turn, none taken from it
            // (a misplaced last sentence showed as no "ich" in one turn and two in the other).
            let words = scoringWords(t.text)
            #expect(words.filter { $0 == "guten" }.count == 1, "heard: \(t.text)")
            #expect(words.filter { $0 == "ich" }.count == 1, "heard: \(t.text)")
            // Whisper base hears espeak-ng's "Ich lerne Deutsch" a little wrong ("Ich lebe da heute").
            #expect(wordErrorRate(reference: reference, hypothesis: t.text) <= 0.3, "heard: \(t.text)")
        }
    }

    @Test func packedDecodingGivesTheSameTranscriptsEveryTime() async throws {
        let chunks = try await Self.sentenceChunks()
        let a = try await transcribe(chunks, ["packSeconds": 12])
        let b = try await transcribe(chunks, ["packSeconds": 12])
        #expect(a.transcripts.count == chunks.count && !a.transcripts[0].text.isEmpty)
        #expect(a.transcripts.map(\.text) == b.transcripts.map(\.text))
        #expect(a.transcripts.map(\.words) == b.transcripts.map(\.words))
        #expect(a.transcripts.map(\.segments) == b.transcripts.map(\.segments))
        #expect(a.decodes == b.decodes)
    }

    @Test func chunksAreBatchedByTheirLengthsWithTheGapsBetweenThem() {
        let mono16k = AudioFormat(sampleRate: 16000, channels: 1)
        func batches(_ seconds: [Double], _ batching: ChunkBatching) -> [[Int]] {
            let chunks = seconds.enumerated().map { i, s in
                AudioChunk(
                    format: mono16k, samples: [Float](repeating: 0, count: Int(s * 16000)), start: 0, end: s,
                    index: i, cut: .voice)
            }
            var batches: [[Int]] = []
            var batch: [AudioChunk] = []
            for chunk in chunks {
                if !batch.isEmpty && !batching.accepts(batch, chunk) {
                    batches.append(batch.map(\.index))
                    batch = []
                }
                batch.append(chunk)
            }
            return batches + [batch.map(\.index)]
        }
        let thirty = ChunkBatching(seconds: 30, gap: 1)
        // 10 + 1 + 10 + 1 + 9 = 31 s: the third one starts a new window.
        #expect(batches([10, 10, 9], thirty) == [[0, 1], [2]])
        #expect(batches([3, 3, 3, 25, 2, 2], thirty) == [[0, 1, 2], [3, 4], [5]])
        #expect(batches([40, 2], thirty) == [[0], [1]])
        #expect(batches([10, 10, 8], thirty) == [[0, 1, 2]])
    }

    @Test func wordsGoToTheChunkTheyWereHeardInAndAStrayWordSendsItsChunksToBeDecodedAlone() {
        func token(_ s: String, _ t: Double) -> WhisperEngine.Token {
            WhisperEngine.Token(bytes: Array(s.utf8), start: t, end: t + 0.2, probability: 0.9, aligned: t)
        }
        func segment(_ tokens: [WhisperEngine.Token]) -> WhisperEngine.Segment {
            WhisperEngine.Segment(
                start: 0, end: 30, text: String(decoding: tokens.flatMap(\.bytes), as: UTF8.self),
                noSpeechProbability: 0.01, averageLogprob: -0.2, tokens: tokens)
        }
        // Three chunks: 0–2 s, 3–5 s, 6–8 s of the window.
        let spans: [ClosedRange<Double>] = [0...2, 3...5, 6...8]
        let clean = WhisperProvider.split(
            [
                // Punctuation is aligned where the next sound starts (here in the gap): it stays with its word.
                segment([token(" Good", 0.2), token(" morning", 0.9), token(".", 2.6), token(" How", 3.1)]),
                segment([token(" are", 3.6), token(" you", 4.1), token(" to", 6.2), token("day", 6.5)]),
            ], spans: spans)
        #expect(clean.map { $0?.map(\.text) } == [[" Good morning."], [" How", " are you"], [" today"]])
        // Times from the chunk's own start: " How" was heard 0.1 s into the second chunk.
        #expect(clean[1]?.first?.tokens.first?.aligned.map { abs($0 - 0.1) < 1e-9 } == true)
        let words = clean[1].map { WhisperProvider.Session.words($0, offset: 100, end: 102) } ?? []
        #expect(words.map(\.text) == ["How", "are", "you"])
        #expect(words.allSatisfy { $0.start >= 100 && $0.end <= 102 }, "\(words)")
        // A word heard in the middle of the gap between the first two chunks: both decoded alone.
        let gap = WhisperProvider.split(
            [segment([token(" Good", 0.2), token(" well", 2.5), token(" How", 3.1), token(" to", 6.2)])], spans: spans)
        #expect(gap.map { $0 == nil } == [true, true, false])
        // A word whose tokens were heard in two chunks.
        let straddling = WhisperProvider.split(
            [segment([token(" Good", 0.2), token(" How", 3.1), token(" to", 4.5), token("day", 6.5)])], spans: spans)
        #expect(straddling.map { $0 == nil } == [false, true, true])
        // No words for the last chunk; no times at all.
        let missing = WhisperProvider.split([segment([token(" Good", 0.2), token(" How", 3.1)])], spans: spans)
        #expect(missing.map { $0 == nil } == [false, false, true])
        var untimed = token(" Good", -0.01)
        untimed.aligned = nil
        let noTimes = WhisperProvider.split([segment([untimed, token(" How", 3.1), token(" to", 6.2)])], spans: spans)
        #expect(noTimes.map { $0 == nil } == [true, true, true])
        // A sentence whose segment Whisper heard at 0.5–1.8 s, aligned into the third chunk: the
        // first and third chunks are decoded alone, the second keeps its words.
        var astray = segment([token(" Ich", 6.2), token(" lerne", 6.5)])
        (astray.start, astray.end) = (0.5, 1.8)
        var first = segment([token(" Good", 0.2)])
        (first.start, first.end) = (0, 0.5)
        var middle = segment([token(" How", 3.1)])
        (middle.start, middle.end) = (3, 4)
        let misaligned = WhisperProvider.split([first, astray, middle], spans: spans)
        #expect(misaligned.map { $0 == nil } == [true, false, true])
    }
}
