import Foundation
import VoxCore

/// `transcribe`: AudioChunk → Transcript. Turns each chunk into text with word times (in the
/// original file's time) through the provider the spec names; one Transcript per chunk, in
/// order, with empty text where the chunk held no words.
public struct TranscribeStage: Stage {
    public typealias Input = AudioChunk
    public typealias Output = Transcript

    /// The chosen provider and its settings.
    public enum Provider: Sendable {
        case whisper(WhisperProvider.Settings)
        case pocketsphinx(PocketSphinxProvider.Settings)
        case openai(OpenAITranscriber.Settings)

        /// The stream format the provider needs, if it needs one.
        var requiredFormat: (format: StreamFormat, name: String)? {
            switch self {
            case .whisper: (StreamFormat(sampleRate: 16000, channels: 1), "whisper")
            case .pocketsphinx: (StreamFormat(sampleRate: 16000, channels: 1), "pocketsphinx")
            case .openai: nil
            }
        }
    }

    public struct Configuration: Sendable {
        public var provider: Provider
    }

    public static let kind = "transcribe"
    public static let summary = "Speech to text, per chunk: Whisper or pocketsphinx (offline), or an OpenAI-compatible server."
    public static let providers: [ProviderSpec] = [
        ProviderSpec(name: "whisper", summary: "Whisper (whisper.cpp) in-process on the CPU, offline; takes 16 kHz mono.", options: WhisperProvider.options),
        ProviderSpec(name: "pocketsphinx", summary: "CMU PocketSphinx, offline; takes 16 kHz mono.", options: PocketSphinxProvider.options),
        ProviderSpec(name: "openai", summary: "POST {baseURL}/audio/transcriptions (OpenAI, whisper.cpp server, speaches, LocalAI).", options: OpenAITranscriber.options),
    ]
    public static let options: [OptionSpec] = [
        OptionSpec("provider", .provider(providers), default: ["name": "whisper"], help: "The speech-to-text engine and its settings."),
    ]

    public static func configure(_ options: StageOptions) throws -> Configuration {
        guard let (name, providerOptions) = options.provider() else { throw options.error("provider", "expected a provider block") }
        switch name {
        case "whisper": return Configuration(provider: .whisper(try WhisperProvider.settings(providerOptions)))
        case "pocketsphinx": return Configuration(provider: .pocketsphinx(PocketSphinxProvider.settings(providerOptions)))
        case "openai": return Configuration(provider: .openai(OpenAITranscriber.settings(providerOptions)))
        default: throw options.error("provider", "unknown provider \"\(name)\"")
        }
    }

    public static func outputFormat(_ configuration: Configuration, input: StreamFormat) throws -> StreamFormat {
        if let (required, name) = configuration.provider.requiredFormat, input != required {
            throw PlanError("\(name) takes \(required); add a stage {\"kind\": \"resample\", \"rate\": \(required.sampleRate ?? 16000), \"channels\": \(required.channels ?? 1)} before the chunk stage")
        }
        return input
    }

    /// The model file's content identifies a whisper transcription: a changed model redoes items.
    public static func identityFiles(_ configuration: Configuration) -> [URL] {
        if case .whisper(let settings) = configuration.provider, let file = settings.modelFile { return [file] }
        return []
    }

    static func makeProvider(_ provider: Provider, context: StageContext) throws -> any TranscriptionProvider {
        switch provider {
        case .whisper(let settings): WhisperProvider(settings: settings)
        case .pocketsphinx(let settings): PocketSphinxProvider(settings: settings)
        case .openai(let settings): try OpenAITranscriber(settings: settings, recording: context.recording)
        }
    }

    public let id: String
    let provider: any TranscriptionProvider

    public init(id: String, configuration: Configuration, context: StageContext) throws {
        self.id = id
        provider = try Self.makeProvider(configuration.provider, context: context)
    }

    public func prepare() async throws { try await provider.prepare() }

    public func run(_ input: Inbox<AudioChunk>, _ output: Outbox<Transcript>, _ item: ItemContext) async throws {
        let session = try provider.beginItem()
        defer { session.end() }
        for try await chunk in input {
            try await output.send(try await session.transcribe(chunk))
        }
    }
}
