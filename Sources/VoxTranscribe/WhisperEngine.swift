internal import CWhisper
import Foundation
import Synchronization
import VoxCore

/// Set from any thread to stop a decode that is running: whisper.cpp asks it between the
/// operations of its compute graphs, so a cancelled item stops within milliseconds.
final class WhisperAbort: Sendable {
    let requested = Atomic<Bool>(false)

    func request() { requested.store(true, ordering: .relaxed) }
    var isRequested: Bool { requested.load(ordering: .relaxed) }
}

/// One loaded Whisper model (whisper.cpp), shared by every worker: the weights are read once,
/// and each item decodes on a state of its own (`WhisperEngine.Decoder`), so items run side by
/// side on one model. whisper.cpp's model context is safe to share across states.
final class WhisperEngine: @unchecked Sendable {
    private let context: OpaquePointer
    let modelFile: URL

    /// Loads the model file; throws `VoxError(.unavailable)` naming the file when it cannot.
    init(modelFile: URL) throws {
        Self.silenceLibraryLog
        var params = whisper_context_default_params()
        params.use_gpu = false
        // Word times from the cross-attention alignment (DTW), as OpenAI's word_timestamps: the
        // timestamp-token heuristic puts a window's first word at its start, however much silence
        // comes before it. DTW needs the model's alignment heads and no flash attention.
        if let preset = Self.alignmentHeads(modelFile) {
            params.dtw_token_timestamps = true
            params.dtw_aheads_preset = preset
            params.flash_attn = false
        }
        guard let context = whisper_init_from_file_with_params_no_state(modelFile.path, params) else {
            throw VoxError(
                .unavailable,
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

    /// Decoding options, as Whisper's own CLI names them.
    struct Options: Sendable, Equatable {
        var language: String?
        var translate = false
        var beamSize = 5
        var bestOf = 5
        var temperature = 0.0
        var temperatureIncrement = 0.2
        var compressionRatioThreshold = 2.4
        var logprobThreshold = -1.0
        var noSpeechThreshold = 0.6
        var noSpeechSkipThreshold = 0.7
        var conditionOnPreviousText = true
        var initialPrompt: String?
        var threads = 1
        var wordTimestamps = true
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

    /// One item's decoding state.
    final class Decoder: @unchecked Sendable {
        let engine: WhisperEngine
        private let state: OpaquePointer
        /// The initial prompt goes in once per item; later chunks are conditioned on the text
        /// decoded before (when `conditionOnPreviousText`), which the state carries.
        private var prompted = false

        fileprivate init(engine: WhisperEngine, state: OpaquePointer) {
            self.engine = engine
            self.state = state
        }

        deinit { whisper_free_state(state) }

        /// Transcribes 16 kHz mono samples; long audio is decoded in Whisper's 30-s windows.
        /// Times are seconds from the start of `samples`. Returns the segments and the language.
        func decode(
            _ samples: [Float], options: Options, abort: WhisperAbort = WhisperAbort()
        ) throws -> (
            segments: [Segment], language: String?
        ) {
            var params = whisper_full_default_params(
                options.beamSize > 1 ? WHISPER_SAMPLING_BEAM_SEARCH : WHISPER_SAMPLING_GREEDY)
            params.n_threads = Int32(max(1, options.threads))
            params.translate = options.translate
            params.no_context = !options.conditionOnPreviousText
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

            let language = strdup(options.language ?? "auto")
            let prompt = (prompted ? nil : options.initialPrompt).flatMap { strdup($0) }
            defer {
                free(language)
                free(prompt)
            }
            params.language = UnsafePointer(language)
            params.detect_language = false
            params.initial_prompt = UnsafePointer(prompt)
            prompted = true

            params.abort_callback = { data in
                guard let data else { return false }
                return Unmanaged<WhisperAbort>.fromOpaque(data).takeUnretainedValue().isRequested
            }
            let status = withExtendedLifetime(abort) {
                params.abort_callback_user_data = Unmanaged.passUnretained(abort).toOpaque()
                return samples.withUnsafeBufferPointer { buffer in
                    whisper_full_with_state(engine.context, state, params, buffer.baseAddress, Int32(buffer.count))
                }
            }
            if abort.isRequested { throw CancellationError() }
            guard status == 0 else {
                throw TranscribeError(.decodeFailed, "whisper failed on this chunk (status \(status))")
            }

            var segments: [Segment] = []
            let eot = whisper_token_eot(engine.context)
            for i in 0..<whisper_full_n_segments_from_state(state) {
                var tokens: [Token] = []
                var logprobs: [Double] = []
                for j in 0..<whisper_full_n_tokens_from_state(state, i) {
                    let data = whisper_full_get_token_data_from_state(state, i, j)
                    logprobs.append(Double(data.plog))
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
                        tokens: tokens))
            }
            let langID = whisper_full_lang_id_from_state(state)
            // Whisper's no-speech test, as OpenAI's transcribe() applies it to a window: likely no
            // speech, and what was decoded is unsure. And a window Whisper itself finds very likely
            // speechless gives no text however sure the decoding: with a language forced, noise and
            // tones come back as confident invented sentences (measured: p 0.81 for a sine sweep,
            // 0.88 for -50 dB noise, at most 0.23 for the speech in Samples/ and the LibriVox lines).
            // For one window; longer audio keeps whisper.cpp's own per-window test.
            if !segments.isEmpty, samples.count <= 30 * 16000,
                let p = startOfTranscriptNoSpeech(threads: options.threads)
            {
                for k in segments.indices { segments[k].noSpeechProbability = p }
                let logprob = segments.map(\.averageLogprob).reduce(0, +) / Double(segments.count)
                if (p > options.noSpeechThreshold && logprob < options.logprobThreshold)
                    || p > options.noSpeechSkipThreshold
                {
                    segments = []
                }
            }
            let detected = langID >= 0 ? whisper_lang_str(langID).map { String(cString: $0) } : nil
            return (segments, options.language ?? detected)
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
