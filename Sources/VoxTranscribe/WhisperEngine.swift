internal import CWhisper
import Foundation
import Synchronization
import VoxCore

/// Set from any thread to stop a decode that is running: whisper.cpp asks it between the
/// operations of its compute graphs, so a cancelled item stops within milliseconds.
final class WhisperAbort: Sendable {
    let requested = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)

    func request() { requested.store(true, ordering: .relaxed) }
    var isRequested: Bool { requested.load(ordering: .relaxed) }

    /// Whether whisper.cpp itself stopped short on the request (a whisper_full call ended with an
    /// error status once its abort callback said so), not after finishing its work.
    var stoppedWhisper: Bool { stopped.load(ordering: .relaxed) }
    func whisperStopped() { stopped.store(true, ordering: .relaxed) }
}

/// One loaded Whisper model (whisper.cpp), shared by every worker: the weights are read once,
/// and each item decodes on a state of its own (`WhisperEngine.Decoder`), so items run side by
/// side on one model. whisper.cpp's model context is safe to share across states.
final class WhisperEngine: @unchecked Sendable {
    private let context: OpaquePointer
    let modelFile: URL

    /// Loads the model file; throws `TranscribeError(.modelUnavailable)` naming the file when it cannot.
    init(modelFile: URL) throws {
        Self.silenceLibraryLog
        var params = whisper_context_default_params()
        params.use_gpu = false
        // Word times from the cross-attention alignment (DTW), as OpenAI's word_timestamps: the
        // timestamp-token heuristic puts a window's first word at its start, however much silence
        // comes before it. DTW needs the model's alignment heads and no flash attention in the
        // decoder (the runtime `make setup` builds fuses the encoder's attention regardless:
        // scripts/patches/whisper-encoder-fa.py).
        if let preset = Self.alignmentHeads(modelFile) {
            params.dtw_token_timestamps = true
            params.dtw_aheads_preset = preset
            params.flash_attn = false
        }
        guard let context = whisper_init_from_file_with_params_no_state(modelFile.path, params) else {
            throw TranscribeError(
                .modelUnavailable,
                "whisper could not load the model \(modelFile.path) (not a ggml Whisper model, or truncated)")
        }
        self.context = context
        self.modelFile = modelFile
    }

    deinit { whisper_free(context) }

    /// The alignment-heads preset for the model's size, read from the ggml header (encoder layers
    /// and vocabulary size tell tiny, base, small, medium and English-only apart); nil if unknown.
    private static func alignmentHeads(_ file: URL) -> whisper_alignment_heads_preset? {
        guard let handle = try? FileHandle(forReadingFrom: file), let header = try? handle.read(upToCount: 24),
            header.count == 24
        else { return nil }
        try? handle.close()
        let ints = header.withUnsafeBytes { raw in
            (0..<6).map { Int32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: Int32.self)) }
        }
        guard ints[0] == 0x6767_6D6C else { return nil }
        let english = ints[1] == 51864
        switch ints[5] {
        case 4: return english ? WHISPER_AHEADS_TINY_EN : WHISPER_AHEADS_TINY
        case 6: return english ? WHISPER_AHEADS_BASE_EN : WHISPER_AHEADS_BASE
        case 12: return english ? WHISPER_AHEADS_SMALL_EN : WHISPER_AHEADS_SMALL
        case 24: return english ? WHISPER_AHEADS_MEDIUM_EN : WHISPER_AHEADS_MEDIUM
        default: return nil
        }
    }

    /// whisper.cpp logs model details and warnings to stderr; voxpipe reports its own errors.
    private static let silenceLibraryLog: Void = whisper_log_set({ _, _, _ in }, nil)

    /// Whether the model is multilingual (base) or English-only (tiny.en).
    var isMultilingual: Bool { whisper_is_multilingual(context) != 0 }

    /// Whether whisper knows a language code (`de`, `en`).
    static func knowsLanguage(_ code: String) -> Bool { whisper_lang_id(code) >= 0 }

    /// A fresh decoding state: decoder state (and its random generators) starts anew, so an
    /// item's result never depends on what the worker decoded before.
    func makeDecoder() throws -> Decoder {
        guard let state = whisper_init_state(context) else {
            throw TranscribeError(.decodeFailed, "whisper could not allocate a decoding state (out of memory?)")
        }
        return Decoder(engine: self, state: state)
    }

    /// Decoding options, as Whisper's own CLI names them; defaults as the provider declares them
    /// (`WhisperProvider.Option`).
    struct Options: Sendable, Equatable {
        typealias Option = WhisperProvider.Option
        var language: String?
        var translate = Option.task.fallback == .translate
        var beamSize = Option.beamSize.fallback
        var bestOf = Option.bestOf.fallback
        var temperature = Option.temperature.fallback
        var temperatureIncrement = Option.temperatureIncrement.fallback
        var compressionRatioThreshold = Option.compressionRatioThreshold.fallback
        var logprobThreshold = Option.logprobThreshold.fallback
        var noSpeechThreshold = Option.noSpeechThreshold.fallback
        var noSpeechSkipThreshold = Option.noSpeechSkipThreshold.fallback
        var conditionOnPreviousText = Option.conditionOnPreviousText.fallback
        var initialPrompt: String?
        var threads = 1
        var wordTimestamps = Option.wordTimestamps.fallback
        /// Chunks up to this many seconds are first encoded in a context of their own length plus
        /// `encoderMargin` instead of the full 30-s window; 0 (the default) turns it off.
        var shrinkEncoderSeconds = Option.shrinkEncoderSeconds.fallback
        var encoderMargin = Option.encoderMargin.fallback
    }

    /// How a chunk was decoded: in a shrunk encoder context (frames of 20 ms), or in the full
    /// window after a shrunk decode was rejected, or in the full window from the start.
    enum EncoderContext: Sendable, Equatable {
        case full
        case shrunk(frames: Int)
        case fellBack(frames: Int, reason: String)
        /// Heard in a shrunk context up to `at` seconds, where sound went on without words; the
        /// rest decoded from there as a chunk of its own.
        case continued(frames: Int, at: Double)
    }

    /// One decoded span of text with its tokens.
    struct Segment: Sendable {
        var start: Double
        var end: Double
        var text: String
        var noSpeechProbability: Double
        /// Mean log probability of every token the segment decoded (timestamps included).
        var averageLogprob: Double
        var tokens: [Token]
        /// Every token id of the segment as whisper.cpp keeps it (timestamps and special tokens too).
        var ids: [Int32] = []
        /// Whether the segment's last token is a timestamp (a decode that ends without one ran out
        /// of tokens or was cut off).
        var endsWithTimestamp = true

        /// The segment ending by `seconds` at the latest (its tokens' times too).
        func clipped(to seconds: Double) -> Segment {
            var copy = self
            copy.end = min(copy.end, seconds)
            for k in copy.tokens.indices {
                copy.tokens[k].start = min(copy.tokens[k].start, seconds)
                copy.tokens[k].end = min(copy.tokens[k].end, seconds)
            }
            return copy
        }

        /// The segment `seconds` later (its tokens' times and alignments too).
        func shifted(by seconds: Double) -> Segment {
            var copy = self
            copy.start += seconds
            copy.end += seconds
            for k in copy.tokens.indices {
                copy.tokens[k].start += seconds
                copy.tokens[k].end += seconds
                copy.tokens[k].aligned = copy.tokens[k].aligned.map { $0 + seconds }
            }
            return copy
        }
    }

    struct Token: Sendable {
        /// The token's bytes: byte-level BPE may split one UTF-8 character across two tokens.
        var bytes: [UInt8]

        var start: Double
        var end: Double
        var probability: Double
        /// When the token was spoken, by the cross-attention alignment (nil without DTW).
        var aligned: Double? = nil
    }

    /// What one decode gave: the segments, the language, and the encoder context it was decoded in.
    struct Decoded: Sendable {
        var segments: [Segment]
        var language: String?
        var encoder: EncoderContext
    }

    /// One item's decoding state.
    final class Decoder: @unchecked Sendable {
        let engine: WhisperEngine
        private let state: OpaquePointer
        /// The initial prompt goes in once per item; later chunks are conditioned on the text
        /// decoded before (when `conditionOnPreviousText`), which the state carries.
        private var prompted = false
        /// The encoder context (frames) the state's last decode used; 0 is the full window.
        /// whisper.cpp detects a language with the previous decode's context, so after a shrunk
        /// decode an unknown language is detected on a state of its own (`detector`).
        private var encoderFrames: Int32 = 0
        private var detector: OpaquePointer?

        fileprivate init(engine: WhisperEngine, state: OpaquePointer) {
            self.engine = engine
            self.state = state
        }

        deinit {
            whisper_free_state(state)
            if let detector { whisper_free_state(detector) }
        }

        /// Transcribes 16 kHz mono samples; long audio is decoded in Whisper's 30-s windows.
        /// Times are seconds from the start of `samples`. A chunk of up to `shrinkEncoderSeconds`
        /// is first encoded in a context of its own length plus `encoderMargin` (much less encoder
        /// work on a short turn); when that decode repeats itself, is unsure, ends without a
        /// timestamp or leaves sound without words, the chunk is decoded again in the full window,
        /// without the rejected text as its prompt; when only its end went unheard, decoding goes
        /// on from the pause after its words. Every step depends only on the samples and options, never on timing.
        /// `forgetPreviousText`: not prompted with the text decoded before (it was rejected).
        func decode(
            _ samples: [Float], options: Options, abort: WhisperAbort = WhisperAbort(), forgetPreviousText: Bool = false
        ) throws -> Decoded {
            let first = !prompted
            prompted = true
            var options = options
            let prompt = first ? options.initialPrompt : nil
            if options.language == nil && encoderFrames != 0 {
                options.language = try detectLanguage(samples, threads: options.threads)
            }
            guard let frames = Self.shrunkContext(samples: samples.count, options: options) else {
                let full = try run(
                    samples, options, frames: 0, prompt: prompt,
                    noContext: !options.conditionOnPreviousText || forgetPreviousText,
                    abort: abort)
                return finish(full, samples: samples, options: options, encoder: .full)
            }
            var attemptOptions = options
            // One decode at the first temperature: a weak one is redone in the full window, not sampled.
            attemptOptions.temperatureIncrement = 0
            let attempt = try run(
                samples, attemptOptions, frames: frames, prompt: prompt,
                noContext: !options.conditionOnPreviousText || forgetPreviousText, abort: abort)
            let rejected = Self.rejection(
                attempt.segments, seconds: Double(samples.count) / 16000, frames: Int(frames), options: options)
            let unheard = rejected == nil ? Self.unheard(attempt.segments, samples: samples) : []
            if let cut = Self.continuation(after: unheard, segments: attempt.segments, samples: samples) {
                // Sure of what it heard, which ends before the sound does: its words are kept up to
                // the pause after them, and the rest is decoded from there (prompted with them),
                // as Whisper goes on from a window's last timestamp.
                var head = attempt
                head.segments = head.segments.map { $0.clipped(to: cut) }
                let kept = finish(head, samples: samples, options: options, encoder: .shrunk(frames: Int(frames)))
                options.language = options.language ?? attempt.language
                let rest = try decode(Array(samples[Int(cut * 16000)...]), options: options, abort: abort)
                return Decoded(
                    segments: kept.segments + rest.segments.map { $0.shifted(by: cut) }, language: options.language,
                    encoder: .continued(frames: Int(frames), at: cut))
            }
            guard let reason = rejected ?? unheard.first?.description else {
                return finish(attempt, samples: samples, options: options, encoder: .shrunk(frames: Int(frames)))
            }
            options.language = options.language ?? attempt.language
            let full = try run(samples, options, frames: 0, prompt: prompt, noContext: true, abort: abort)
            return finish(
                full, samples: samples, options: options, encoder: .fellBack(frames: Int(frames), reason: reason))
        }

        /// The encoder context for a chunk of `samples`, in frames of 20 ms (whisper's 1500 = 30 s):
        /// the chunk and the margin, rounded up to whole seconds; nil for the full window.
        static func shrunkContext(samples: Int, options: Options) -> Int32? {
            let seconds = Double(samples) / 16000
            guard options.shrinkEncoderSeconds > 0, seconds <= options.shrinkEncoderSeconds else { return nil }
            let frames = Int32((seconds + max(1, options.encoderMargin)).rounded(.up)) * 50
            return frames < 1500 ? frames : nil
        }

        /// Why a decode in a shrunk context is not to be trusted, or nil: no text, no timestamp at
        /// its end, timestamps past the encoded audio, an average log probability below
        /// `logprobThreshold`, or text that repeats itself (whisper.cpp's entropy test on the last
        /// 32 tokens, a word trigram three times, a word four times in a row, more words than
        /// anyone says in the time).
        static func rejection(_ segments: [Segment], seconds: Double, frames: Int, options: Options) -> String? {
            guard let last = segments.last else { return "no text" }
            guard last.endsWithTimestamp else { return "no timestamp at the end" }
            guard segments.allSatisfy({ $0.end <= Double(frames) / 50 + 0.01 }) else {
                return "timestamps past the encoded audio"
            }
            let ids = segments.flatMap(\.ids)
            let logprob =
                segments.map { $0.averageLogprob * Double($0.ids.count) }.reduce(0, +) / Double(max(1, ids.count))
            if logprob < options.logprobThreshold { return "average log probability \(logprob)" }
            if ids.count > 32 {
                var counts: [Int32: Int] = [:]
                for id in ids.suffix(32) { counts[id, default: 0] += 1 }
                let entropy = counts.values.map { -Double($0) / 32 * log(Double($0) / 32) }.reduce(0, +)
                if entropy < options.compressionRatioThreshold { return "repeats itself (entropy \(entropy))" }
            }
            return implausible(segments.map(\.text), seconds: seconds)
        }

        /// Seconds of a chunk with sound and no words.
        struct Stretch: Equatable, CustomStringConvertible {
            var from: Double
            var to: Double
            var description: String { String(format: "sound without words from %.1f to %.1f s", from, to) }
        }

        /// Where a decode left sound without words, in order: each stretch of at least a second, after
        /// the last word's alignment (its DTW time and half a second for the word itself), before
        /// the first or between two, at least half as loud (RMS) as the whole chunk. In a shrunk
        /// context Whisper can end its one segment at the chunk's end having heard only part of
        /// it: the 8.2-s turn of `bench/tutor.sh` (one sentence said twice) came back in 12 s as
        /// the first saying alone, its words aligned up to 3.9 s, the segment to 8.08 s. None
        /// without alignments (no word timestamps).
        static func unheard(_ segments: [Segment], samples: [Float]) -> [Stretch] {
            let times = segments.flatMap(\.tokens).compactMap(\.aligned).sorted()
            guard let first = times.first, let last = times.last, !samples.isEmpty else { return [] }
            func rms(_ from: Double, _ to: Double) -> Double {
                let a = max(0, min(samples.count, Int(from * 16000)))
                let b = max(a, min(samples.count, Int(to * 16000)))
                guard b > a else { return 0 }
                return (samples[a..<b].reduce(0) { $0 + Double($1) * Double($1) } / Double(b - a)).squareRoot()
            }
            let whole = rms(0, Double(samples.count) / 16000)
            let word = 0.5
            var stretches = [Stretch(from: 0, to: first - 0.1)]
            for (a, b) in zip(times, times.dropFirst()) { stretches.append(Stretch(from: a + word, to: b - 0.1)) }
            stretches.append(Stretch(from: last + word, to: Double(samples.count) / 16000))
            return stretches.filter { $0.to - $0.from >= 1 && rms($0.from, $0.to) >= whole / 2 }
        }

        /// Where to go on decoding a chunk whose words end before its sound does, or nil: when
        /// the only stretch `unheard` found is the one after the last word, at least a second of
        /// words came before it and at least a second of the chunk is left: from 0.1 to 1 s after
        /// the last word's alignment, the first 20 ms 20 dB under the chunk's mean, or the quietest.
        static func continuation(after stretches: [Stretch], segments: [Segment], samples: [Float]) -> Double? {
            let seconds = Double(samples.count) / 16000
            guard stretches.count == 1, let stretch = stretches.first, stretch.to >= seconds - 0.01,
                let last = segments.flatMap(\.tokens).compactMap(\.aligned).max(), last >= 1
            else { return nil }
            let (low, high) = (Int((last + 0.1) * 50), Int(min(last + 1, seconds - 1) * 50))
            guard low < high else { return nil }
            let energy = samples.reduce(0) { $0 + Double($1) * Double($1) } / Double(samples.count) * 320
            var best: (at: Double, level: Double)?
            for frame in low..<high {
                let a = frame * 320
                let level = samples[a..<min(samples.count, a + 320)].reduce(0) { $0 + Double($1) * Double($1) }
                // The first 20 ms 20 dB under the chunk's mean: the pause after the words.
                if level <= energy / 100 { return Double(frame) / 50 }
                if best.map({ level < $0.level }) ?? true { best = (Double(frame) / 50, level) }
            }
            return best?.at
        }

        /// Why text is not to be believed of `seconds` of speech, or nil: more words than anyone
        /// says in the time, a word trigram three times, a word four times in a row.
        static func implausible(_ texts: [String], seconds: Double) -> String? {
            let words = texts.flatMap { $0.lowercased().split(whereSeparator: \.isWhitespace) }
            if Double(words.count) > max(10, seconds * 6) { return "\(words.count) words in \(seconds) s" }
            var trigrams: [String: Int] = [:]
            for i in words.indices.dropLast(2) { trigrams[words[i...(i + 2)].joined(separator: " "), default: 0] += 1 }
            if let most = trigrams.values.max(), most >= 3 { return "repeats itself (a trigram \(most) times)" }
            var run = 1
            for (a, b) in zip(words, words.dropFirst()) {
                run = a == b ? run + 1 : 1
                if run >= 4 { return "repeats itself (\(a) \(run) times)" }
            }
            return nil
        }

        /// The language whisper detects on the samples in the full window (its own detection, on a
        /// state whose last decode used the full window).
        private func detectLanguage(_ samples: [Float], threads: Int) throws -> String? {
            if detector == nil { detector = whisper_init_state(engine.context) }
            guard let detector else {
                throw TranscribeError(.decodeFailed, "whisper could not allocate a decoding state (out of memory?)")
            }
            let n = Int32(max(1, threads))
            let status = Self.withReadableSamples(samples) {
                whisper_pcm_to_mel_with_state(engine.context, detector, $0, $1, n)
            }
            guard status == 0 else { throw TranscribeError(.decodeFailed, "whisper failed on this chunk (mel)") }
            let id = whisper_lang_auto_detect_with_state(engine.context, detector, 0, n, nil)
            guard id >= 0 else { throw TranscribeError(.decodeFailed, "whisper could not detect the language") }
            return whisper_lang_str(id).map { String(cString: $0) }
        }

        /// Calls `body` with the samples and their count. whisper.cpp's mel reads the 200 samples
        /// after the first (its reflective pad) however short the input: a shorter chunk is handed
        /// over with zeros after it that whisper is not told about, so the read stays in memory
        /// voxpipe owns. (A 10-sample chunk crashed the test process once a trimmed heap ended
        /// behind it; whisper gives nothing for input under 100 ms, so no result changes.)
        static func withReadableSamples<R>(
            _ samples: [Float], _ body: (UnsafePointer<Float>?, Int32) -> R
        ) -> R {
            let readable = 201
            guard samples.count < readable else {
                return samples.withUnsafeBufferPointer { body($0.baseAddress, Int32($0.count)) }
            }
            let padded = samples + [Float](repeating: 0, count: readable - samples.count)
            return padded.withUnsafeBufferPointer { body($0.baseAddress, Int32(samples.count)) }
        }

        /// One whisper_full call in an encoder context of `frames` (0: the full window).
        private func run(
            _ samples: [Float], _ options: Options, frames: Int32, prompt: String?, noContext: Bool,
            abort: WhisperAbort
        ) throws -> (segments: [Segment], language: String?) {
            var params = whisper_full_default_params(
                options.beamSize > 1 ? WHISPER_SAMPLING_BEAM_SEARCH : WHISPER_SAMPLING_GREEDY)
            params.n_threads = Int32(max(1, options.threads))
            params.translate = options.translate
            params.no_context = noContext
            params.print_progress = false
            params.print_realtime = false
            params.print_timestamps = false
            params.print_special = false
            params.token_timestamps = options.wordTimestamps
            params.temperature = Float(options.temperature)
            params.temperature_inc = Float(options.temperatureIncrement)
            // whisper.cpp's entropy threshold plays the part of OpenAI's compression-ratio test.
            params.entropy_thold = Float(options.compressionRatioThreshold)
            params.logprob_thold = Float(options.logprobThreshold)
            params.no_speech_thold = Float(options.noSpeechThreshold)
            params.greedy.best_of = Int32(max(1, options.bestOf))
            params.beam_search.beam_size = Int32(max(1, options.beamSize))
            params.suppress_blank = true
            params.suppress_nst = true
            params.audio_ctx = frames

            let language = strdup(options.language ?? "auto")
            let prompt = prompt.flatMap { strdup($0) }
            defer {
                free(language)
                free(prompt)
            }
            params.language = UnsafePointer(language)
            params.detect_language = false
            params.initial_prompt = UnsafePointer(prompt)

            params.abort_callback = { data in
                guard let data else { return false }
                return Unmanaged<WhisperAbort>.fromOpaque(data).takeUnretainedValue().isRequested
            }
            let status = withExtendedLifetime(abort) {
                params.abort_callback_user_data = Unmanaged.passUnretained(abort).toOpaque()
                return Self.withReadableSamples(samples) {
                    whisper_full_with_state(engine.context, state, params, $0, $1)
                }
            }
            // whisper.cpp keeps the context from a call that got past its too-short check (100 ms).
            if samples.count >= 200, 1 + (samples.count - 200) / 160 >= 10 { encoderFrames = frames }
            if abort.isRequested {
                // whisper_full fails (-6 to -9) at the first abort check that sees the request.
                if status != 0 { abort.whisperStopped() }
                throw CancellationError()
            }
            guard status == 0 else {
                throw TranscribeError(.decodeFailed, "whisper failed on this chunk (status \(status))")
            }

            var segments: [Segment] = []
            let eot = whisper_token_eot(engine.context)
            let beg = whisper_token_beg(engine.context)
            for i in 0..<whisper_full_n_segments_from_state(state) {
                var tokens: [Token] = []
                var logprobs: [Double] = []
                var ids: [Int32] = []
                for j in 0..<whisper_full_n_tokens_from_state(state, i) {
                    let data = whisper_full_get_token_data_from_state(state, i, j)
                    logprobs.append(Double(data.plog))
                    ids.append(data.id)
                    guard data.id < eot, let raw = whisper_full_get_token_text_from_state(engine.context, state, i, j)
                    else { continue }
                    tokens.append(
                        Token(
                            bytes: Array(
                                UnsafeBufferPointer(
                                    start: UnsafeRawPointer(raw).assumingMemoryBound(to: UInt8.self), count: strlen(raw)
                                )), start: Double(data.t0) / 100, end: Double(data.t1) / 100,
                            probability: Double(data.p), aligned: data.t_dtw >= 0 ? Double(data.t_dtw) / 100 : nil))
                }
                let text = whisper_full_get_segment_text_from_state(state, i).map { String(cString: $0) } ?? ""
                segments.append(
                    Segment(
                        start: Double(whisper_full_get_segment_t0_from_state(state, i)) / 100,
                        end: Double(whisper_full_get_segment_t1_from_state(state, i)) / 100,
                        text: text,
                        noSpeechProbability: Double(whisper_full_get_segment_no_speech_prob_from_state(state, i)),
                        averageLogprob: logprobs.reduce(0, +) / Double(max(1, logprobs.count)),
                        tokens: tokens, ids: ids, endsWithTimestamp: (ids.last ?? 0) > beg))
            }
            let langID = whisper_full_lang_id_from_state(state)
            return (segments, langID >= 0 ? whisper_lang_str(langID).map { String(cString: $0) } : nil)
        }

        /// Whisper's no-speech test, as OpenAI's transcribe() applies it to a window: likely no
        /// speech, and what was decoded is unsure. And a window Whisper itself finds very likely
        /// speechless gives no text however sure the decoding: with a language forced, noise and
        /// tones come back as confident invented sentences (measured: p 0.81 for a sine sweep,
        /// 0.88 for -50 dB noise, at most 0.23 for the speech in Samples/ and the LibriVox lines).
        /// For one window; longer audio keeps whisper.cpp's own per-window test. In a shrunk
        /// context only OpenAI's test is taken: there the probability reads high on speech (0.81
        /// for the 8.2-s German turn of `bench/tutor.sh` in 12 s, 0.39 in the full window), and a
        /// decode that passed `rejection` is sure (on 12 probes of noise, hum, tones, music and
        /// reversed speech each shrunk decode read -1.5 or less, was rejected and redone here).
        private func finish(
            _ decoded: (segments: [Segment], language: String?), samples: [Float], options: Options,
            encoder: EncoderContext
        ) -> Decoded {
            var segments = decoded.segments
            if !segments.isEmpty, samples.count <= 30 * 16000,
                let p = startOfTranscriptNoSpeech(threads: options.threads)
            {
                for k in segments.indices { segments[k].noSpeechProbability = p }
                let logprob = segments.map(\.averageLogprob).reduce(0, +) / Double(segments.count)
                let skip: Bool
                if case .shrunk = encoder { skip = false } else { skip = p > options.noSpeechSkipThreshold }
                if (p > options.noSpeechThreshold && logprob < options.logprobThreshold) || skip {
                    segments = []
                }
            }
            return Decoded(segments: segments, language: options.language ?? decoded.language, encoder: encoder)
        }

        /// The no-speech probability as OpenAI's Whisper defines it: the <|nospeech|> token's share
        /// at the start-of-transcript position, for the window whisper_full encoded last.
        /// (whisper.cpp reads it after the whole prompt, where it is near 0 even for a sine sweep.)
        private func startOfTranscriptNoSpeech(threads: Int) -> Double? {
            var sot = whisper_token_sot(engine.context)
            guard whisper_decode_with_state(engine.context, state, &sot, 1, 0, Int32(max(1, threads))) == 0,
                let logits = whisper_get_logits_from_state(state)
            else { return nil }
            let n = Int(whisper_n_vocab(engine.context))
            let values = UnsafeBufferPointer(start: logits, count: n)
            guard let top = values.max() else { return nil }
            var sum = 0.0
            for v in values { sum += exp(Double(v - top)) }
            return exp(Double(values[Int(whisper_token_nosp(engine.context))] - top)) / sum
        }
    }
}
