import Foundation
import VoxCore
import VoxRequest

/// Piper voices in-process through sherpa-onnx's C API (onnxruntime on the CPU), offline: natural
/// English from the voice `make setup` installs (en_US-joe-medium), or any Piper voice folder.
/// Replies are phonemized by espeak-ng and spoken sentence by sentence, a long sentence in phrases
/// of at most `PiperEngine.maxPhonemes`, so the model's work (and memory) stays that of one bounded
/// phrase however long a reply is, punctuated or not. One model per process, loaded at
/// prepare and shared by every worker and stage. Noise is off: the same text gives the same samples.
public final class PiperProvider: SpeechProvider, ProviderKind, Sendable {
    public static let name = "piper"
    public static let summary =
        "Piper voices (sherpa-onnx, in-process), offline; 22.05 kHz mono for the installed voice."
    public static func make(_ settings: Settings, context: StageContext) -> any SpeechProvider {
        PiperProvider(
            settings: settings, engines: context.engines, rateConversion: context.rateConversion,
            blocking: context.blocking)
    }
    public static func streamFormat(_ settings: Settings) -> StreamFormat? {
        settings.sampleRate.map { StreamFormat(sampleRate: $0, channels: 1) }
    }
    /// The voice's files and the runtime's libraries: another voice file or runtime redoes the items.
    public static func identityFiles(_ settings: Settings) -> [URL] {
        (settings.files.map { [$0.model, $0.config] } ?? []) + PiperEngine.libraryFiles
    }
    public static func provenance(_ settings: Settings) -> [String: JSONValue] {
        [
            "voice": .string(settings.voice), "voiceFile": settings.files.map { .string($0.model.path) } ?? .null,
            "runtime": .string("sherpa-onnx \(PiperEngine.version)"),
        ]
    }

    public struct Settings: Sendable, Equatable {
        /// What the spec named: a short name or a path.
        public var voice: String
        /// The voice's files; nil when nothing was found (prepare says so).
        public var files: PiperVoice?
        /// A path-like `voice`, resolved against the spec's folder (for messages).
        var path: URL?
        /// The voice's rate, from its `.onnx.json`.
        var sampleRate: Int?
        public var speed: Double
        public var speaker: Int
        /// Who speaks a reply in another language than the voice's.
        public var otherLanguages: OtherLanguages
    }

    /// Who speaks a reply whose transcript is in another language than the voice's.
    public enum OtherLanguages: String, Sendable, CaseIterable, OptionValue {
        /// espeak-ng in the reply's language, when it has that language (German, …).
        case espeak = "espeak-ng"
        /// This voice, whatever the language.
        case voice
    }

    public static let defaultVoice = "en_US-joe-medium"

    /// Each option, declared once.
    public enum Option {
        public static let voice = StageOption<String>(
            "voice", .string, default: defaultVoice,
            help:
                "A voice installed by make setup (\(defaultVoice)) or in $VOXPIPE_VOICES, or a folder holding a Piper "
                + "voice's .onnx and .onnx.json.")
        public static let speed = StageOption<Double>(
            "speed", .number(0.25...4), default: 1, help: "Speaking speed, 1 is the voice's own.")
        public static let speaker = StageOption<Int>(
            "speaker", .integer(0...10_000), default: 0, help: "Speaker id, for voices with several speakers.")
        public static let otherLanguages = StageOption<OtherLanguages>(
            "otherLanguages", default: .espeak,
            help: "A reply whose transcript is in another language than the voice's: espeak-ng speaks it in that "
                + "language (when it has it), or `voice` keeps this voice.")
    }

    public static let options: [OptionSpec] = [
        Option.voice.spec, Option.speed.spec, Option.speaker.spec, Option.otherLanguages.spec,
    ]

    public static func settings(_ options: StageOptions) throws -> Settings {
        let voice = options[Option.voice]
        let files = PiperVoice.resolve(voice, baseDirectory: options.baseDirectory)
        let config = files.flatMap { try? PiperVoice.Config(Data(contentsOf: $0.config)) }
        let speaker = options[Option.speaker]
        if let config, speaker >= config.speakers {
            throw options.error(
                Option.speaker, "the voice \(voice) has \(config.speakers) speaker(s): ids 0–\(config.speakers - 1)")
        }
        return Settings(
            voice: voice, files: files,
            path: PiperVoice.isPath(voice)
                ? URL(fileURLWithPath: voice, relativeTo: options.baseDirectory).standardizedFileURL : nil,
            sampleRate: config?.sampleRate, speed: options[Option.speed], speaker: speaker,
            otherLanguages: options[Option.otherLanguages])
    }

    /// Silence between two sentences of a reply, in seconds.
    static let sentencePause = 0.2

    let settings: Settings
    /// Where the voice is loaded once and shared: the run's, a server's, a test process's.
    let engines: EngineCache
    /// Brings espeak-ng's speech of another language to the voice's rate when they differ.
    let rateConversion: (any RateConversion)?
    /// Where the voice is loaded and speaks: off the cooperative pool.
    let blocking: BlockingExecutor

    public init(
        settings: Settings, engines: EngineCache = EngineCache(), rateConversion: (any RateConversion)? = nil,
        blocking: BlockingExecutor = BlockingExecutor()
    ) {
        self.settings = settings
        self.engines = engines
        self.rateConversion = rateConversion
        self.blocking = blocking
    }

    /// Loads the voice once (off the cooperative pool: it takes seconds); exit 69 naming what is missing.
    public func prepare() async throws { _ = try await engine() }

    func engine() async throws -> PiperEngine {
        guard let files = settings.files else {
            if let path = settings.path {
                throw SynthesizeError(
                    .voice,
                    "Piper voice not found: \(path.path) (a folder holding a voice's .onnx and .onnx.json)")
            }
            let places = PiperVoice.searchPath.map(\.path).joined(separator: ", ")
            throw SynthesizeError(
                .voice,
                "Piper voice '\(settings.voice)' is not installed (looked in \(places)); run make setup, or name a "
                    + "folder holding a Piper voice's .onnx and .onnx.json"
            )
        }
        let engines = engines
        return try await blocking.run {
            try engines.engine("piper:\(files.model.path)") { try PiperEngine(voice: files) }
        }
    }

    /// Speaks `text` one sentence (or phrase of a long one) at a time, each handed on as it is
    /// made, with a short pause before every one but the first. A reply in another language goes to espeak-ng (see
    /// `otherLanguages`). A served request's speed scales the voice's.
    public func speak(
        _ text: String, language: String?, _ part: (_ format: AudioFormat, _ samples: [Float]) async throws -> Void
    ) async throws {
        let engine = try await engine()
        let format = AudioFormat(sampleRate: engine.sampleRate, channels: 1)
        if let other = try otherVoice(for: language, engine: engine) {
            let converter = try converter(from: try EspeakEngine.shared.start(), to: engine.sampleRate)
            try await other.speak(text, language: language) { _, samples in
                try await part(format, try converter?.convertAll(samples) ?? samples)
            }
            return
        }
        let sentences = try await blocking.run { try engine.sentences(text) }
        let pause = [Float](repeating: 0, count: Int(Self.sentencePause * Double(engine.sampleRate)))
        let speed = min(4, max(0.25, settings.speed * (RequestValues.current[.speech]?.speed ?? 1)))
        let speaker = settings.speaker
        for (i, sentence) in sentences.enumerated() {
            try Task.checkCancellation()
            let spoken = try await blocking.run { try engine.generate(sentence, speed: speed, speaker: speaker) }
            try await part(format, i > 0 && !spoken.isEmpty ? pause + spoken : spoken)
        }
    }

    /// espeak-ng in `language` when a reply in it is not the voice's language and espeak-ng has it.
    func otherVoice(for language: String?, engine: PiperEngine) throws -> EspeakProvider? {
        guard settings.otherLanguages == .espeak, let language = language.map(Self.family), !language.isEmpty,
            language != Self.family(engine.config.espeakVoice), try EspeakEngine.shared.hasVoice(language)
        else { return nil }
        return EspeakProvider(
            voice: EspeakEngine.Voice(name: language, rate: 175, pitch: 50, volume: 100), blocking: blocking)
    }

    /// The language of a code: "en" of "en-us", "en_US" or "EN".
    static func family(_ code: String) -> String {
        String(code.lowercased().prefix { $0 != "-" && $0 != "_" })
    }

    func converter(from rate: Int, to voiceRate: Int) throws -> (any RateConverter)? {
        guard rate != voiceRate else { return nil }
        guard let rateConversion else {
            throw SynthesizeError(.engine, "espeak-ng speaks at \(rate) Hz, the voice at \(voiceRate) Hz: no converter")
        }
        return try rateConversion.converter(channels: 1, from: rate, to: voiceRate)
    }
}
