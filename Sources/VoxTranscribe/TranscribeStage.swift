import Foundation
import VoxCore

/// `transcribe`: AudioChunk → Transcript. Turns each chunk into text with word times (in the
/// original file's time) through the provider the spec names; one Transcript per chunk, in
/// order, with empty text where the chunk held no words.
public struct TranscribeStage: Stage {
    public typealias Input = AudioChunk
    public typealias Output = Transcript

    public struct Configuration: Sendable, Translatable {
        public var provider: ChosenProvider<any TranscriptionProvider>

        /// Its provider translating into English (whisper), if it can.
        public func translating() -> Configuration? { provider.translating().map { Configuration(provider: $0) } }
    }

    public static let kind = "transcribe"
    public static let summary =
        "Speech to text, per chunk: Whisper or pocketsphinx (offline), or an OpenAI-compatible server."
    /// Every transcription provider; a new one is a `ProviderKind` type and a line here.
    public static let providers = ProviderRegistry<any TranscriptionProvider>([
        ProviderEntry(WhisperProvider.self),
        ProviderEntry(PocketSphinxProvider.self),
        ProviderEntry(OpenAITranscriber.self),
    ])
    public static let options: [OptionSpec] = [
        OptionSpec(
            "provider", .provider(providers.specs), default: ["name": "whisper"],
            help: "The speech-to-text engine and its settings.")
    ]

    public static func configure(_ options: StageOptions) throws -> Configuration {
        Configuration(provider: try providers.choose(options))
    }

    public static func outputFormat(_ configuration: Configuration, input: StreamFormat) throws -> StreamFormat {
        if let required = configuration.provider.streamFormat, input != required {
            throw PlanError(
                "\(configuration.provider.name) takes \(required); add a stage {\"kind\": \"resample\", \"rate\": "
                    + "\(required.sampleRate ?? 16000), \"channels\": \(required.channels ?? 1)} before the chunk stage"
            )
        }
        return input
    }

    /// The provider's model files: a changed model redoes items.
    public static func identityFiles(_ configuration: Configuration) -> [URL] { configuration.provider.identityFiles }

    /// The provider, and what it adds (a model), for provenance records.
    public static func provenance(_ configuration: Configuration) -> [String: JSONValue]? {
        configuration.provider.provenance
    }

    public let id: String
    let provider: any TranscriptionProvider

    public init(id: String, configuration: Configuration, context: StageContext) throws {
        self.id = id
        provider = try configuration.provider.make(context)
    }

    public func prepare() async throws { try await provider.prepare() }

    public func run(_ input: Inbox<AudioChunk>, _ output: Outbox<Transcript>, _ item: ItemContext) async throws {
        let session = try await provider.beginItem()
        defer { session.end() }
        guard let batching = session.batching else {
            for try await chunk in input {
                try await output.send(try await session.transcribe(chunk))
            }
            return
        }
        // Consecutive chunks gathered by their lengths alone (never by what has arrived so far),
        // so a run gives the same batches, and the same text, whatever the timing.
        var batch: [AudioChunk] = []
        func send() async throws {
            let transcripts = try await session.transcribe(batch: batch)
            guard transcripts.count == batch.count else {
                throw TranscribeError(
                    .decodeFailed, "\(batch.count) chunks transcribed together gave \(transcripts.count) transcripts")
            }
            for transcript in transcripts { try await output.send(transcript) }
            batch = []
        }
        for try await chunk in input {
            if !batch.isEmpty && !batching.accepts(batch, chunk) { try await send() }
            batch.append(chunk)
        }
        if !batch.isEmpty { try await send() }
    }
}
