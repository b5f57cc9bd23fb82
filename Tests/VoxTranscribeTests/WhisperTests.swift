import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxTranscribe

/// Whisper base (installed by `make setup`) on real recordings, espeak-ng speech, silence and
/// noise. Word assertions carry a WER bound; times are checked in the original file's time. Not
/// serialized: its tests share the cores with the rest of the suite as the engine's decodes share
/// them (a serialized chain of them was the last minute of `swift test`).
@Suite(.needs(.whisperModels)) struct WhisperTests {
    static let librivox = InstalledFixture.librivox.url
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Samples")
    static let mono16k = AudioFormat(sampleRate: 16000, channels: 1)

    func transcribe(_ chunks: [AudioChunk], _ provider: [String: JSONValue] = [:]) async throws -> [Transcript] {
        var block: [String: JSONValue] = ["name": "whisper"]
        for (k, v) in provider { block[k] = v }
        let harness = try StageHarness(
            TranscribeStage.self, options: ["provider": .object(block)], engines: testEngines)
        return try await harness.run(chunks, commit: false).outputs
    }

    /// The LibriVox lines of Debian's pocketsphinx-testdata with their reference text.
    static func librivoxLines() throws -> [(url: URL, text: String)] {
        let lines = try String(contentsOf: librivox.appendingPathComponent("transcription"), encoding: .utf8).split(
            separator: "\n")
        return lines.compactMap { line in
            guard let open = line.lastIndex(of: "("), let close = line.lastIndex(of: ")") else { return nil }
            let id = line[line.index(after: open)..<close]
            let text = line[..<open].replacingOccurrences(of: "<s>", with: "").replacingOccurrences(
                of: "</s>", with: "")
            return (librivox.appendingPathComponent("\(id).wav"), text.trimmingCharacters(in: .whitespaces))
        }
    }

    /// The LibriVox lines as chunks of one item, 10 s apart, with their reference texts, each
    /// decoded alone (language en, the full window): decoded once for the two tests that read them,
    /// this suite's WER and the packed decoding's comparison (WhisperPackingTests).
    static let librivoxAlone = Task { () async throws -> LibriVoxDecodes in
        let lines = try librivoxLines()
        try #require(lines.count == 5, "pocketsphinx-testdata is installed by make setup")
        var chunks: [AudioChunk] = []
        for (i, line) in lines.enumerated() {
            var chunk = try await chunk16k(line.url, start: Double(i) * 10)
            chunk.index = i
            chunks.append(chunk)
        }
        let transcripts = try await WhisperTests().transcribe(chunks, ["language": "en"])
        return LibriVoxDecodes(chunks: chunks, references: lines.map(\.text), transcripts: transcripts)
    }

    struct LibriVoxDecodes: Sendable {
        var chunks: [AudioChunk]
        var references: [String]
        var transcripts: [Transcript]
    }

    @Test(.needs(.librivox))
    func realReadSpeechFromLibriVoxComesBackWithinTenPercentWER() async throws {
        let lines = try await Self.librivoxAlone.value
        let (chunks, transcripts) = (lines.chunks, lines.transcripts)
        let reference = lines.references.joined(separator: " ")
        let hypothesis = transcripts.map(\.text).joined(separator: " ")
        let wer = wordErrorRate(reference: reference, hypothesis: hypothesis)
        #expect(wer <= 0.10, "WER \(wer): \(hypothesis)")
        #expect(scoringWords(transcripts[1].text).contains("disposed"), "heard: \(transcripts[1].text)")
        for (t, chunk) in zip(transcripts, chunks) {
            #expect(t.provider == "whisper" && t.model == "base" && t.language == "en")
            #expect(!t.words.isEmpty)
            #expect(
                t.words.allSatisfy { $0.start >= chunk.start && $0.end <= chunk.end && $0.start <= $0.end },
                "\(t.words)")
            #expect(zip(t.words, t.words.dropFirst()).allSatisfy { $0.start <= $1.start })
            #expect(t.words.allSatisfy { ($0.confidence ?? -1) > 0 && ($0.confidence ?? 2) <= 1 })
        }
    }

    @Test func germanSpeechIsTranscribedAsGermanAndItsLanguageDetected() async throws {
        let chunk = try await chunk16k(Self.samples.appendingPathComponent("speech-de-44k-stereo.flac"))
        let reference = "Guten Morgen! Wie geht es dir heute? Ich lerne Deutsch."
        let fixed = try await transcribe([chunk], ["language": "de"])[0]
        #expect(wordErrorRate(reference: reference, hypothesis: fixed.text) <= 0.25, "heard: \(fixed.text)")
        #expect(fixed.language == "de")
        let detected = try await transcribe([chunk])[0]
        #expect(detected.language == "de", "detected \(detected.language ?? "nothing"): \(detected.text)")
        #expect(scoringWords(detected.text).contains("morgen"), "heard: \(detected.text)")
    }

    @Test func englishSpeechFromEspeakComesBackWordForWord() async throws {
        let chunk = try await chunk16k(Self.samples.appendingPathComponent("speech-en-22k-mono.wav"))
        let t = try await transcribe([chunk])[0]
        let wer = wordErrorRate(
            reference: "The quick brown fox jumps over the lazy dog. Please call me back tomorrow morning.",
            hypothesis: t.text)
        #expect(wer <= 0.15, "WER \(wer): \(t.text)")
        #expect(t.language == "en")
    }

    @Test func silenceGivesNoTextAndOddChunksDoNotCrash() async throws {
        let silence = AudioChunk(
            format: Self.mono16k, samples: [Float](repeating: 0, count: 16000 * 5), start: 0, end: 5, index: 0,
            cut: .window)
        let tenth = AudioChunk(
            format: Self.mono16k, samples: [Float](repeating: 0, count: 1600), start: 5, end: 5.1, index: 1,
            cut: .window)
        let tiny = AudioChunk(
            format: Self.mono16k, samples: [Float](repeating: 0.01, count: 10), start: 5.1, end: 5.1006, index: 2,
            cut: .window)
        var state: UInt64 = 42
        let clipped = (0..<(16000 * 3)).map { _ -> Float in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state >> 11) % 3 - 1)  // full-scale, clipped noise
        }
        let noise = AudioChunk(format: Self.mono16k, samples: clipped, start: 6, end: 9, index: 3, cut: .window)
        // Quiet noise (-50 dBFS) and the sine sweep of Samples/, with a language forced: Whisper invents
        // confident German sentences for both unless its no-speech probability is heeded.
        let hiss = AudioChunk(
            format: Self.mono16k, samples: clipped.prefix(16000 * 3).map { $0 * 0.003 }, start: 9, end: 12, index: 4,
            cut: .window)
        var tones = try await chunk16k(Self.samples.appendingPathComponent("sweep-8k.aiff"), start: 12)
        tones.index = 5
        let forced = try await transcribe([hiss, tones], ["language": "de"])
        #expect(forced.map(\.text) == ["", ""])
        let transcripts = try await transcribe([silence, tenth, tiny, noise], ["language": "en"])
        #expect(transcripts.count == 4)
        #expect(
            transcripts[0].text == "" && transcripts[0].words.isEmpty, "hallucinated on silence: \(transcripts[0].text)"
        )
        #expect(transcripts[1].text == "", "hallucinated on 0.1 s of silence: \(transcripts[1].text)")
        #expect(transcripts[3].words.allSatisfy { $0.start >= 6 && $0.end <= 9 })
    }

    @Test(.needs(.librivox))
    func aFortyFiveSecondChunkIsDecodedInWindowsWithTimesInTheFile() async throws {
        // Speech at 2 s and at 36 s of a 45-s chunk that starts 100 s into the file.
        let lines = try Self.librivoxLines()
        try #require(lines.count == 5)
        let first = try await chunk16k(lines[1].url).samples  // "he was not an ill disposed young man"
        let second = try await chunk16k(lines[4].url).samples  // "he might even have been made amiable himself"
        var samples = [Float](repeating: 0, count: 16000 * 45)
        samples.replaceSubrange((16000 * 2)..<(16000 * 2 + first.count), with: first)
        samples.replaceSubrange((16000 * 36)..<(16000 * 36 + second.count), with: second)
        let chunk = AudioChunk(format: Self.mono16k, samples: samples, start: 100, end: 145, index: 0, cut: .voice)
        let t = try await transcribe([chunk], ["language": "en"])[0]
        let words = t.words.map { (scoringWords($0.text).first ?? "", $0.start) }
        let he = words.first { $0.0 == "he" }
        let young = words.first { $0.0 == "young" }
        let amiable = words.first { $0.0 == "amiable" }
        // Whisper's timestamp tokens would put the first word at the window's start (100 s, 130 s).
        #expect(he.map { $0.1 > 101.9 && $0.1 < 103 } == true, "\(t.words)")
        #expect(young.map { $0.1 > 103 && $0.1 < 106 } == true, "\(t.words)")
        #expect(amiable.map { $0.1 > 136 && $0.1 < 141 } == true, "\(t.words)")
        // Subtitle lines: one segment per sentence, each spanning its own speech.
        #expect(t.segments.count >= 2, "\(t.segments)")
        #expect(t.segments.first.map { $0.start > 101.9 && $0.end < 106 } == true, "\(t.segments)")
        #expect(t.segments.last.map { $0.start > 135.5 && $0.end <= 145 } == true, "\(t.segments)")
        #expect(
            wordErrorRate(reference: lines[1].text + " " + lines[4].text, hypothesis: t.text) <= 0.2, "heard: \(t.text)"
        )
    }

    @Test func theSameInputGivesTheSameTranscriptEveryTime() async throws {
        // Two chunks of one item: the second is decoded with the first's text as its prompt.
        let german = try await chunk16k(Self.samples.appendingPathComponent("speech-de-44k-stereo.flac"))
        var second = german
        second.index = 1
        second.start = german.end + 1
        second.end = second.start + german.end
        let a = try await transcribe([german, second], ["language": "de"])
        let b = try await transcribe([german, second], ["language": "de"])
        #expect(!a[0].text.isEmpty)
        #expect(a.map(\.text) == b.map(\.text))
        #expect(a.map(\.words) == b.map(\.words))
    }

    @Test func oneModelServesEveryItemAndAMissingOneIsUnavailable() async throws {
        let base = URL(fileURLWithPath: "/")
        func settings(_ values: [String: JSONValue]) throws -> WhisperProvider.Settings {
            try WhisperProvider.settings(
                StageOptions(
                    stageID: "asr", path: "stages[0].provider", baseDirectory: base, values: values,
                    specs: WhisperProvider.options))
        }
        let engines = EngineCache()
        let provider = WhisperProvider(settings: try settings(["language": "en"]), engines: engines)
        try await provider.prepare()
        var sessions: [any TranscriptionSession] = []
        for _ in 0..<3 { sessions.append(try await provider.beginItem()) }
        sessions.forEach { $0.end() }
        // A second stage of the same run (another transcribe stage) shares the model too.
        let other = WhisperProvider(settings: try settings(["language": "de"]), engines: engines)
        try await other.prepare()
        #expect(provider.enginesLoaded == 1)

        let missing = WhisperProvider(settings: try settings(["model": "no-such-model"]))
        await #expect(throws: TranscribeError.self) { try await missing.prepare() }
        do {
            try await missing.prepare()
        } catch let error as TranscribeError {
            #expect(error.code == .modelUnavailable && error.exitCode == 69)
            #expect(
                error.message.hasPrefix("whisper model 'no-such-model' is not installed (looked in "),
                "\(error.message)")
        }
        #expect(throws: VoxError.self) { try settings(["language": "klingon"]) }
        let english = WhisperProvider(settings: try settings(["model": "tiny.en", "language": "de"]))
        await #expect(throws: TranscribeError.self) { try await english.prepare() }
    }

    @Test func aCancelledDecodeStopsThroughWhispersAbortCallback() async throws {
        let settings = try WhisperProvider.settings(
            StageOptions(
                stageID: "asr", path: "stages[0].provider", baseDirectory: URL(fileURLWithPath: "/"),
                values: ["language": "de"], specs: WhisperProvider.options))
        let provider = WhisperProvider(settings: settings, engines: testEngines)
        try await provider.prepare()
        let session = try #require(try await provider.beginItem() as? WhisperProvider.Session)
        defer { session.end() }
        // A minute of German: two full windows, many seconds of decoding on any machine.
        let german = try await chunk16k(Self.samples.appendingPathComponent("speech-de-44k-stereo.flac"))
        let minute = Array(repeating: german.samples, count: 15).flatMap { $0 }
        let decode = Task { try await session.decode(minute) }
        // Cancelled once the decode runs (it has its slot and its thread).
        #expect(try await eventually { provider.decodesStarted > 0 })
        #expect(provider.decodesStarted == 1)
        decode.cancel()
        await #expect(throws: CancellationError.self) { _ = try await decode.value }
        // whisper_full itself stopped at its abort callback: without the flag reaching it, the
        // decode would have run to its end before the cancellation was noticed.
        #expect(provider.decodesAborted == 1)
    }

    @Test func theRuntimeIsTheBaselineBuildAndACPUBelowItIsRefusedAtPrepare() throws {
        // make setup builds x86-64-v3; its identity is read from the library and its record.
        #expect(WhisperRuntime.identity.hasPrefix("whisper.cpp 1.8.5 x86-64-v3 ("), "\(WhisperRuntime.identity)")
        let libraries = WhisperRuntime.libraryFiles.map(\.lastPathComponent)
        #expect(
            libraries.contains { $0.hasPrefix("libwhisper.so") } && libraries.contains { $0.hasPrefix("libggml-cpu") })
        #expect(
            WhisperProvider.identityFiles(
                try WhisperProvider.settings(
                    StageOptions(
                        stageID: "asr", path: "p", baseDirectory: URL(fileURLWithPath: "/"), values: [:],
                        specs: WhisperProvider.options))
            ).count == 1 + WhisperRuntime.libraryFiles.count)
        // Its workers sleep at a barrier (scripts/patches/ggml-barrier.py): the CPU code calls
        // futex through syscall(2), which upstream ggml never does.
        let cpuCode = try #require(WhisperRuntime.libraryFiles.first { $0.lastPathComponent.hasPrefix("libggml-cpu") })
        #expect(try Data(contentsOf: cpuCode).range(of: Data("syscall\0".utf8)) != nil, "\(cpuCode.path)")
        // make setup recorded every patch it applied, the row-wise beam kernel and the reused
        // detection encoding among them (scripts/patches/ggml-tinyblas-rows.py and
        // whisper-detect-reuse.py; that they change no result, the goldens show).
        let record = try String(
            contentsOf: cpuCode.deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("share/voxpipe/whisper-runtime"), encoding: .utf8)
        let patches = [
            "abort-patch", "abort-dtw-patch", "barrier-wake-patch", "encoder-fa-patch", "tinyblas-rows-patch",
            "detect-reuse-patch", "fa-pack-once-patch", "last-logits-patch", "q8-blocks-patch", "fa-wide-patch",
            "gelu-gather-patch", "sampling-patch", "f16-cols-patch", "dtw-median-patch", "tinyblas-batches-patch",
            "q8-prefetch-patch", "q8-wide-patch", "f16-heads-patch", "vec-max-patch", "f16-cols-f32-patch",
            "fa-wide-softmax-patch", "energy-patch", "mel-fft-patch", "f16-heads-frames-patch",
            "f16-heads-wide-patch", "cpy-f16-patch", "q8-narrow-patch", "q8-wide-regs-patch", "q8-narrow-signs-patch",
            "q8-vnni-patch", "q8-vnni-narrow-patch", "q8-thread-buffers-patch",
        ]
        for patch in patches {
            #expect(record.contains(patch), "\(record)")
        }
        // The q8_0 kernels for AMX and AVX-512 VNNI CPUs and the attention's products for AVX-512 ones
        // are in the CPU code, chosen at run time (scripts/patches/ggml-q8-blocks.py, ggml-fa-wide.py;
        // that they change no result, bench/kernels.sh shows).
        for kernel in ["voxpipe_q8_gemm_amx\0", "voxpipe_q8_gemm_vnni\0", "voxpipe_simd_gemm_avx512\0"] {
            #expect(try Data(contentsOf: cpuCode).range(of: Data(kernel.utf8)) != nil, "\(kernel)")
        }
        // None of voxpipe's kernel code is a weak symbol: the linker keeps one copy of a weak function
        // for every object, and the one kept could be built for AVX-512 (the kernels' scratch buffer
        // was, its destructor exported from the AVX-512 objects, until it moved to an unnamed namespace).
        let nm = Process()
        nm.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        nm.arguments = ["nm", "-D", "--defined-only", cpuCode.path]
        let symbols = Pipe()
        nm.standardOutput = symbols
        try nm.run()
        let table = String(decoding: symbols.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        nm.waitUntilExit()
        let exported = table.split(separator: "\n").filter { $0.contains("voxpipe") }
        #expect(nm.terminationStatus == 0 && exported.count == 4, "\(exported)")
        #expect(exported.allSatisfy { $0.split(separator: " ").dropFirst().first == "T" }, "\(exported)")
        // This CPU has the baseline; one without AVX2 and FMA gets exit 69 naming them.
        try WhisperRuntime.checkCPU()
        let old: Set<String> = ["pni", "ssse3", "sse4_2", "avx", "f16c", "bmi2"]
        let error = #expect(throws: TranscribeError.self) { try WhisperRuntime.checkCPU(flags: old) }
        #expect(error?.code == .runtimeUnavailable && error?.exitCode == 69)
        #expect(
            error?.message.hasPrefix("this CPU lacks AVX2, FMA, which the whisper runtime needs (built for x86-64-v3)")
                == true)
    }

    /// Issue 23's odd lengths: a chunk of 29.9 s (lines of read speech run together, then
    /// silence) fills Whisper's window and keeps its words and times inside it; 0.2 s of speech
    /// does not crash and invents nothing long.
    @Test(.needs(.librivox))
    func aChunkOfAlmostThirtySecondsAndOneOfAFifthOfASecondDecode() async throws {
        let lines = try Self.librivoxLines()
        var samples: [Float] = []
        for line in lines { samples += try await chunk16k(line.url).samples }
        let length = Int(29.9 * 16000)
        #expect(samples.count > 20 * 16000)
        samples = Array(samples.prefix(length)) + [Float](repeating: 0, count: max(0, length - samples.count))
        let long = AudioChunk(
            format: Self.mono16k, samples: samples, start: 100, end: 129.9, index: 0, cut: .window)
        let short = AudioChunk(
            format: Self.mono16k, samples: Array(try await chunk16k(lines[0].url).samples.prefix(3200)), start: 130,
            end: 130.2, index: 1, cut: .window)
        let out = try await transcribe([long, short], ["language": "en"])
        #expect(out.count == 2)
        let heard = out[0].text.lowercased()
        // The first and the third line, whatever Whisper makes of the rest.
        #expect(heard.contains("john dashwood") && heard.contains("unless"), "\(heard)")
        #expect(out[0].words.count > 40)
        #expect(out[0].words.allSatisfy { $0.start >= 100 && $0.end <= 129.9 && $0.start <= $0.end })
        #expect(out[1].words.count <= 3, "\(out[1].text)")
        #expect(out[1].words.allSatisfy { $0.start >= 130 && $0.end <= 130.2 })
    }

    @Test func aDecodeTakesTheFreeCoresSharedWithTheDecodesWaiting() async throws {
        // The cores as permits: a decode alone takes one, then every free one.
        let cores = AsyncSemaphore(permits: 4)
        #expect(await cores.acquire())
        #expect(await cores.takeFree(upTo: 3) == 3)
        // A second decode waits; while it does, none is free.
        let second = Task { await cores.acquire() }
        #expect(try await eventually { await cores.waiters == 1 })
        #expect(await cores.takeFree(upTo: 3) == 0)
        // The first gives its four back: one goes to the waiter, which then takes the rest.
        await cores.release(4)
        #expect(await second.value)
        #expect(await cores.inUse == 1)
        #expect(await cores.takeFree(upTo: 3) == 3)
        await cores.release(4)
        #expect(await cores.inUse == 0)
        // The provider: by default every core the process may use for a decode alone (here a
        // machine of 4 CPUs, as its files say); a count from the spec as it is, holding one of
        // cores / count permits.
        func provider(_ values: [String: JSONValue], _ files: [String: String]) throws -> WhisperProvider {
            WhisperProvider(
                settings: try WhisperProvider.settings(
                    StageOptions(
                        stageID: "asr", path: "p", baseDirectory: URL(fileURLWithPath: "/"), values: values,
                        specs: WhisperProvider.options)),
                cpu: CPUReader(files: files, processors: 64))
        }
        func machine(pressure avg10: Double, _ avg60: Double, quota: String = "max 100000") -> [String: String] {
            [
                "/proc/self/status": "Cpus_allowed_list:\t0-3\n", "/proc/self/cgroup": "0::/job\n",
                "/sys/fs/cgroup/job/cpu.max": quota + "\n",
                "/sys/fs/cgroup/job/cpu.pressure": "some avg10=\(avg10) avg60=\(avg60) avg300=0.00 total=1\n",
                // Host-wide: never read.
                "/proc/loadavg": "9.00 9.00 9.00 12/400 1\n",
                "/proc/pressure/cpu": "some avg10=99 avg60=99 avg300=99 total=1\n",
            ]
        }
        let idle = try #require(await try provider([:], machine(pressure: 0, 0)).takeCores())
        #expect(idle.threads == 4 && idle.permits == 4)
        var unreadable = machine(pressure: 0, 0)
        unreadable["/sys/fs/cgroup/job/cpu.pressure"] = nil
        #expect(try #require(await try provider([:], unreadable).takeCores()).threads == 4)
        // Sustained pressure in the process's own cgroup: one core is left to the work waiting.
        let loaded = try #require(await try provider([:], machine(pressure: 70, 35)).takeCores())
        #expect(loaded.threads == 3 && loaded.permits == 3)
        // A burst is not sustained.
        #expect(try #require(await try provider([:], machine(pressure: 30, 5)).takeCores()).threads == 4)
        // The cgroup's quota caps the cores, and the decodes at once with them.
        let quota = try provider([:], machine(pressure: 0, 0, quota: "150000 100000"))
        #expect(try #require(await quota.takeCores()).threads == 2)
        let oneCPU = try provider([:], machine(pressure: 90, 90, quota: "100000 100000"))
        let one = try #require(await oneCPU.takeCores())
        #expect(one.threads == 1 && one.permits == 1)
        let three = try #require(await try provider(["threads": 3], machine(pressure: 90, 90)).takeCores())
        #expect(three.threads == 3 && three.permits == 1)
    }

    /// The shared base model (the provider's key, so the test process loads it once).
    func baseEngine() throws -> WhisperEngine {
        let file = try #require(WhisperProvider.resolveModel("base", baseDirectory: URL(fileURLWithPath: "/")))
        return try testEngines.engine("whisper:\(file.path)") { try WhisperEngine(modelFile: file) }
    }

    @Test(.needs(.librivox))
    func aShortTurnIsDecodedInAShrunkContextAndAnUnsureOneAgainInTheFullWindow() async throws {
        let line = try Self.librivoxLines()[4]  // 3.29 s: "he might even have been made amiable himself"
        let samples = try await chunk16k(line.url).samples
        var options = WhisperEngine.Options()
        options.language = "en"
        let full = try baseEngine().makeDecoder().decode(samples, options: options)
        #expect(full.encoder == .full)
        options.shrinkEncoderSeconds = 20
        // 3.29 s + 3 s of margin, rounded up to 7 s: 350 frames of 20 ms instead of 1500.
        let shrunk = try baseEngine().makeDecoder().decode(samples, options: options)
        #expect(shrunk.encoder == .shrunk(frames: 350))
        let text = shrunk.segments.map(\.text).joined()
        #expect(wordErrorRate(reference: line.text, hypothesis: text) <= 0.2, "heard: \(text)")
        // The no-speech skip test reads high on speech in a shrunk context: it is the full
        // window's only. Held to a skip threshold of 0, the full window gives no text and the
        // shrunk context keeps its words.
        var strict = options
        strict.noSpeechSkipThreshold = 0
        #expect(try baseEngine().makeDecoder().decode(samples, options: strict).segments.map(\.text).joined() == text)
        strict.shrinkEncoderSeconds = 0
        #expect(try baseEngine().makeDecoder().decode(samples, options: strict).segments.isEmpty)
        // A decode held to an average log probability no decode reaches is redone in the full
        // window, and gives what the full window gives.
        options.logprobThreshold = -0.001
        let redone = try baseEngine().makeDecoder().decode(samples, options: options)
        guard case .fellBack(350, let reason) = redone.encoder else {
            Issue.record("not decoded again: \(redone.encoder)")
            return
        }
        #expect(reason.hasPrefix("average log probability"), "\(reason)")
        #expect(redone.segments.map(\.text) == full.segments.map(\.text))
        // A chunk over the limit is never shrunk.
        options.shrinkEncoderSeconds = 3
        #expect(WhisperEngine.Decoder.shrunkContext(samples: samples.count, options: options) == nil)
    }

    @Test func aShrunkDecodeThatRepeatsOrEndsWithoutATimestampIsRejected() {
        var options = WhisperEngine.Options()
        options.shrinkEncoderSeconds = 20
        func segment(
            _ text: String, end: Double = 4, ids: [Int32] = [50364, 400, 50564], timestamp: Bool = true
        )
            -> WhisperEngine.Segment
        {
            WhisperEngine.Segment(
                start: 0, end: end, text: text, noSpeechProbability: 0.01, averageLogprob: -0.2, tokens: [],
                ids: ids, endsWithTimestamp: timestamp)
        }
        func reason(_ segments: [WhisperEngine.Segment]) -> String? {
            WhisperEngine.Decoder.rejection(segments, seconds: 5, frames: 400, options: options)
        }
        #expect(reason([segment(" He might even have been made amiable himself.")]) == nil)
        #expect(reason([]) == "no text")
        #expect(reason([segment(" He might even", timestamp: false)]) == "no timestamp at the end")
        #expect(reason([segment(" He might even", end: 9)]) == "timestamps past the encoded audio")
        #expect(reason([segment(" I am here. I am here. I am here. Yes.")])?.hasPrefix("repeats itself") == true)
        #expect(reason([segment(" no no no no")])?.hasPrefix("repeats itself") == true)
        let many = (1...31).map { " w\($0)" }.joined()  // 31 different words in 5 s
        #expect(reason([segment(many)]) == "31 words in 5.0 s")
        #expect(
            reason([segment(" ha", ids: [Int32](repeating: 1000, count: 40) + [50564])])?.hasPrefix("repeats") == true)
        // 5 s and a 3-s margin: 8 s, 400 frames; over the limit, or with the shrink off: the full window.
        #expect(WhisperEngine.Decoder.shrunkContext(samples: 16000 * 5, options: options) == 400)
        #expect(WhisperEngine.Decoder.shrunkContext(samples: 16000 * 21, options: options) == nil)
        options.shrinkEncoderSeconds = 0
        #expect(WhisperEngine.Decoder.shrunkContext(samples: 16000 * 5, options: options) == nil)
    }

    @Test func aShrunkDecodeThatLeavesLoudSoundWithoutWordsIsRejected() {
        // 8 s: a loud first half (0-4 s), then the second half loud or silent.
        var state: UInt64 = 7
        func loud(_ seconds: Double) -> [Float] {
            (0..<Int(seconds * 16000)).map { _ in
                state = state &* 6364136223846793005 &+ 1442695040888963407
                return Float(Int64(bitPattern: state >> 11) % 1000) / 4000
            }
        }
        let twice = loud(4) + loud(4)
        let once = loud(4) + [Float](repeating: 0, count: 4 * 16000)
        func heard(until last: Double) -> [WhisperEngine.Segment] {
            let tokens = stride(from: 0.3, through: last, by: 0.4).map {
                WhisperEngine.Token(bytes: Array(" w".utf8), start: 0, end: 8, probability: 0.9, aligned: $0)
            }
            return [
                WhisperEngine.Segment(
                    start: 0, end: 8.08, text: " words", noSpeechProbability: 0.1, averageLogprob: -0.3, tokens: tokens)
            ]
        }
        // Words aligned up to 3.9 s of 8 s that sound throughout: the last 3.6 s were not heard.
        #expect(
            WhisperEngine.Decoder.unheard(heard(until: 3.95), samples: twice).map(\.description) == [
                "sound without words from 4.4 to 8.0 s"
            ]
        )
        // Silence after the words, words throughout, or no alignments (no word timestamps): nothing unheard.
        #expect(WhisperEngine.Decoder.unheard(heard(until: 3.95), samples: once).isEmpty)
        #expect(WhisperEngine.Decoder.unheard(heard(until: 7.95), samples: twice).isEmpty)
        var unaligned = heard(until: 3.95)
        for k in unaligned[0].tokens.indices { unaligned[0].tokens[k].aligned = nil }
        #expect(WhisperEngine.Decoder.unheard(unaligned, samples: twice).isEmpty)
        // A gap of two words' silence in the middle of loud sound is a gap, not a pause.
        var gapped = heard(until: 2.35)
        gapped[0].tokens += heard(until: 7.95)[0].tokens.filter { ($0.aligned ?? 0) > 5 }
        #expect(
            WhisperEngine.Decoder.unheard(gapped, samples: twice).map(\.description) == [
                "sound without words from 2.8 to 5.0 s"
            ])
    }

    @Test func aDecodeHeardOnlyInPartGoesOnFromThePauseAfterItsWords() {
        // 8 s of loud sound with a pause of 0.3 s at 4.1 s (-38 dB); words aligned from 0.3 to 3.9 s,
        var state: UInt64 = 11
        var samples = (0..<(16000 * 8)).map { _ -> Float in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state >> 11) % 1000) / 4000
        }
        for k in Int(4.1 * 16000)..<Int(4.4 * 16000) { samples[k] = 0.003 }
        // and 20 ms of digital silence at 4.7 s, inside the next sound.
        for k in Int(4.7 * 16000)..<Int(4.72 * 16000) { samples[k] = 0 }
        func heard(_ times: [Double]) -> [WhisperEngine.Segment] {
            let tokens = times.map {
                WhisperEngine.Token(bytes: Array(" w".utf8), start: $0, end: 8, probability: 0.9, aligned: $0)
            }
            return [
                WhisperEngine.Segment(
                    start: 0, end: 8.08, text: " words", noSpeechProbability: 0.1, averageLogprob: -0.3, tokens: tokens)
            ]
        }
        func cut(_ segments: [WhisperEngine.Segment], _ samples: [Float]) -> Double? {
            WhisperEngine.Decoder.continuation(
                after: WhisperEngine.Decoder.unheard(segments, samples: samples), segments: segments, samples: samples)
        }
        let firstHalf = (0..<10).map { 0.3 + Double($0) * 0.4 }  // 0.3 … 3.9 s
        // It goes on at the pause's first 20 ms, not at the quietest moment of the sound after it.
        #expect(cut(heard(firstHalf), samples) == 4.1)
        // Without a pause: at the quietest 20 ms from 0.1 to 1 s after the last word.
        var noPause = samples
        for k in Array(Int(4.1 * 16000)..<Int(4.4 * 16000)) + Array(Int(4.7 * 16000)..<Int(4.72 * 16000)) {
            noPause[k] = 0.2
        }
        noPause.replaceSubrange(Int(4.6 * 16000)..<Int(4.62 * 16000), with: [Float](repeating: 0.05, count: 320))
        #expect(cut(heard(firstHalf), noPause) == 4.6)
        // Words throughout, a gap between words, words in the first second only: no going on.
        #expect(
            cut(heard(firstHalf + [4.6, 5.4, 6.2, 7.0, 7.8]), samples) == nil)
        #expect(
            cut(heard([0.3, 0.7, 1.1, 1.5, 5.5, 6.0, 6.5]), samples) == nil)
        #expect(cut(heard([0.3, 0.6]), samples) == nil)
        // The rest's segments move to where it starts in the chunk, token times and alignments too.
        let moved = heard([0.44, 1.28])[0].shifted(by: 4.1)
        #expect(moved.start == 4.1 && moved.end == 4.1 + 8.08)
        #expect(moved.tokens.map(\.aligned) == [4.54, 4.1 + 1.28] && moved.tokens[0].start == 4.54)
    }

    @Test func tokensJoinIntoWordsAcrossSplitCharactersAndKeepPunctuation() {
        func token(_ s: String, _ t0: Double, _ t1: Double) -> WhisperEngine.Token {
            WhisperEngine.Token(bytes: Array(s.utf8), start: t0, end: t1, probability: 0.5)
        }
        // "Grüße," arrives as " Gr", the two bytes of "ü" split over two tokens, "ße", ",".
        var u = token("", 0.5, 0.6), v = token("", 0.6, 0.7)
        u.bytes = [0xC3]
        v.bytes = [0xBC]
        let segment = WhisperEngine.Segment(
            start: 0, end: 2, text: " Grüße, Anna", noSpeechProbability: 0, averageLogprob: -0.1,
            tokens: [
                token(" Gr", 0.1, 0.5), u, v, token("ße", 0.7, 0.9), token(",", 0.9, 1.0), token(" Anna", 1.2, 1.8),
            ])
        let words = WhisperProvider.Session.words([segment], offset: 10, end: 11.5)
        #expect(words.map(\.text) == ["Grüße,", "Anna"])
        #expect(words[0].start == 10.1 && words[0].end == 11.2)  // until the next word starts
        #expect(words[1].start == 11.2 && words[1].end == 11.5)  // clipped to the chunk's end
    }
}
