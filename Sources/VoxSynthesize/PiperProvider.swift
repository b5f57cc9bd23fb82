import Foundation
import VoxCore

/// Piper voices in-process through sherpa-onnx's C API (onnxruntime on the CPU), offline: natural
/// English from the voice `make setup` installs (en_US-joe-medium), or any Piper voice folder.
/// Replies are phonemized by espeak-ng and spoken sentence by sentence, so the model's work (and
/// memory) stays that of one sentence however long a reply is. One model per process, loaded at
/// prepare and shared by every worker and stage. Noise is off: the same text gives the same samples.
public final class PiperProvider: SpeechProvider, ProviderKind, @unchecked Sendable {
    public static let name = "piper"
    public static let summary =
        "Piper voices (sherpa-onnx, in-process), offline; 22.05 kHz mono for the installed voice."
    public static func make(_ settings: Settings, context: StageContext) -> any SpeechProvider {
        PiperProvider(settings: settings, engines: context.engines)
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
    }

    public static let defaultVoice = "en_US-joe-medium"

    public static let options: [OptionSpec] = [
        OptionSpec(
            "voice", .string, default: .string(defaultVoice),
            help:
                "A voice installed by make setup (\(defaultVoice)) or in $VOXPIPE_VOICES, or a folder holding a Piper "
                + "voice's .onnx and .onnx.json."
        ),
        OptionSpec("speed", .number(0.25...4), default: 1, help: "Speaking speed, 1 is the voice's own."),
        OptionSpec("speaker", .integer(0...10_000), default: 0, help: "Speaker id, for voices with several speakers."),
    ]

    public static func settings(_ options: StageOptions) throws -> Settings {
        let voice = options.string("voice") ?? defaultVoice
        let files = PiperVoice.resolve(voice, baseDirectory: options.baseDirectory)
        let config = files.flatMap { try? PiperVoice.Config(Data(contentsOf: $0.config)) }
        let speaker = options.int("speaker") ?? 0
        if let config, speaker >= config.speakers {
            throw options.error(
                "speaker", "the voice \(voice) has \(config.speakers) speaker(s): ids 0–\(config.speakers - 1)")
        }
        return Settings(
            voice: voice, files: files,
            path: PiperVoice.isPath(voice)
                ? URL(fileURLWithPath: voice, relativeTo: options.baseDirectory).standardizedFileURL : nil,
            sampleRate: config?.sampleRate, speed: options.double("speed") ?? 1, speaker: speaker)
    }

    /// Silence between two sentences of a reply, in seconds.
    static let sentencePause = 0.2

    let settings: Settings
    /// Where the voice is loaded once and shared: the run's, a server's, a test process's.
    let engines: EngineCache

    public init(settings: Settings, engines: EngineCache = EngineCache()) {
        self.settings = settings
        self.engines = engines
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
        return try await offPool { try engines.engine("piper:\(files.model.path)") { try PiperEngine(voice: files) } }
    }

    /// Speaks `text` one sentence at a time, with a short pause between sentences.
    public func synthesize(_ text: String) async throws -> (format: AudioFormat, samples: [Float]) {
        let engine = try await engine()
        let sentences = try await offPool { try engine.sentences(text) }
        let pause = [Float](repeating: 0, count: Int(Self.sentencePause * Double(engine.sampleRate)))
        var samples: [Float] = []
        for (i, sentence) in sentences.enumerated() {
            try Task.checkCancellation()
            let (speed, speaker) = (settings.speed, settings.speaker)
            let spoken = try await offPool { try engine.generate(sentence, speed: speed, speaker: speaker) }
            if i > 0 && !spoken.isEmpty { samples += pause }
            samples += spoken
        }
        return (AudioFormat(sampleRate: engine.sampleRate, channels: 1), samples)
    }
}
