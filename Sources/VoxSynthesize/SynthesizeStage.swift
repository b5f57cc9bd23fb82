import Foundation
import Logging
import VoxCore
import VoxRequest

/// Why synthesis failed.
public typealias SynthesizeError = ModuleError<SynthesizeFailure>

public enum SynthesizeFailure: FailureCode {
    /// A voice the engine lacks, or one that cannot be read or loaded.
    case voice
    /// The engine itself is not installed (its program or data).
    case engineUnavailable
    /// The engine failed on one reply.
    case engine

    /// A voice or engine that is missing is unavailable; an engine that fails on one reply fails
    /// that item.
    public var category: VoxFailure {
        switch self {
        case .voice, .engineUnavailable: .unavailable
        case .engine: .badInput
        }
    }
}

/// A text-to-speech engine behind the `synthesize` stage.
public protocol SpeechProvider: Sendable {
    func prepare() async throws
    /// Speaks `text` (in `language`, when known: the transcript's), handing its audio to `part` in
    /// pieces as they are made (a sentence or a few at a time where the engine can), so a long
    /// reply never sits whole in memory. Gives no part, or only empty ones, when there was nothing
    /// it could say.
    func speak(
        _ text: String, language: String?, _ part: (_ format: AudioFormat, _ samples: [Float]) async throws -> Void
    ) async throws
}

extension SpeechProvider {
    /// The whole of `text`'s speech in one buffer (a served one-off answer, tests); empty when
    /// there was nothing to say.
    public func synthesize(
        _ text: String, language: String? = nil
    ) async throws -> (
        format: AudioFormat, samples: [Float]
    ) {
        var format: AudioFormat?
        var samples: [Float] = []
        try await speak(text, language: language) { partFormat, part in
            if let format, format != partFormat {
                throw SynthesizeError(.engine, "the speech changed format mid-reply (\(format) to \(partFormat))")
            }
            format = partFormat
            samples += part
        }
        return (format ?? AudioFormat(sampleRate: 22050, channels: 1), samples)
    }
}

/// espeak-ng, offline, in many languages (German included).
public struct EspeakProvider: SpeechProvider, ProviderKind {
    public static let name = "espeak-ng"
    public static let summary = "eSpeak NG, offline; 22.05 kHz mono."
    public static func settings(_ options: StageOptions) -> EspeakProvider { EspeakProvider(options) }
    public static func make(_ settings: EspeakProvider, context: StageContext) -> any SpeechProvider {
        EspeakProvider(voice: settings.voice, blocking: context.blocking)
    }
    public static func streamFormat(_ settings: EspeakProvider) -> StreamFormat? {
        StreamFormat(sampleRate: 22050, channels: 1)
    }

    /// Each option, declared once.
    public enum Option {
        public static let voice = StageOption<String>(
            "voice", .string, default: "en-us",
            help: "A language code (de, en-us, fr, …) or voice name; `espeak-ng --voices` lists them.")
        public static let rate = StageOption<Int>("rate", .integer(80...450), default: 175, help: "Words per minute.")
        public static let pitch = StageOption<Int>("pitch", .integer(0...100), default: 50, help: "Base pitch, 0–100.")
        public static let volume = StageOption<Int>(
            "volume", .integer(0...200), default: 100, help: "Volume, 0–200 (100 is normal).")
    }

    public static let options: [OptionSpec] = [
        Option.voice.spec, Option.rate.spec, Option.pitch.spec, Option.volume.spec,
    ]

    /// Long replies are spoken in pieces of whole sentences up to this many characters, so a
    /// very long reply never becomes one huge utterance (and short ones stay one call); a
    /// "sentence" longer than this is cut at its best break before it (`TextPieces.bounded`).
    /// espeak-ng itself speaks clause by clause in flat memory, and in a process of its own.
    static let maxPiece = 600

    let voice: EspeakEngine.Voice
    /// Where each piece's espeak-ng process runs and is waited for: off the cooperative pool,
    /// terminated when the item is cancelled.
    let blocking: BlockingExecutor

    init(voice: EspeakEngine.Voice, blocking: BlockingExecutor = BlockingExecutor()) {
        self.voice = voice
        self.blocking = blocking
    }

    public init(_ options: StageOptions) {
        voice = EspeakEngine.Voice(
            name: options[Option.voice], rate: options[Option.rate], pitch: options[Option.pitch],
            volume: options[Option.volume])
        blocking = BlockingExecutor()
    }

    public func prepare() async throws {
        guard try EspeakEngine.shared.hasVoice(voice.name) else {
            throw SynthesizeError(
                .voice,
                "espeak-ng has no voice \"\(voice.name)\"; list the voices with `espeak-ng --voices` (or `espeak-ng "
                    + "--voices=de` for one language)"
            )
        }
    }

    /// One espeak-ng run per piece of whole sentences (up to `maxPiece` characters).
    public func speak(
        _ text: String, language: String?, _ part: (_ format: AudioFormat, _ samples: [Float]) async throws -> Void
    ) async throws {
        let rate = try EspeakEngine.shared.start()
        let voice = try requested(RequestValues.current[.speech])
        for piece in Self.pieces(text) {
            try Task.checkCancellation()
            let pcm = try await blocking.run { try EspeakEngine.shared.synthesize([piece], voice: voice) }
            try await part(AudioFormat(sampleRate: rate, channels: 1), pcm)
        }
    }

    /// The spec's voice, with a served request's voice (when espeak-ng has it) and speed applied
    /// (the rate scaled and kept within espeak-ng's 80-450 words a minute).
    func requested(_ request: SpeechRequest?) throws -> EspeakEngine.Voice {
        var chosen = voice
        guard let request else { return chosen }
        if let name = request.voice, try EspeakEngine.shared.hasVoice(name) { chosen.name = name }
        if let speed = request.speed { chosen.rate = min(450, max(80, Int((Double(voice.rate) * speed).rounded()))) }
        return chosen
    }

    static func pieces(_ text: String) -> [String] { TextPieces.split(text, maxCharacters: maxPiece) }
}

/// `synthesize`: Reply → Speech. Speaks each reply through the provider the spec names; the audio
/// comes out at the engine's own rate (22.05 kHz mono for espeak-ng) and is numbered like the
/// turn it answers. Replies with no sayable text give no speech.
public struct SynthesizeStage: Stage {
    public typealias Input = Reply
    public typealias Output = Speech

    public struct Configuration: Sendable { public var provider: ChosenProvider<any SpeechProvider> }

    public static let kind = "synthesize"
    public static let summary =
        "Speaks each reply: a Piper voice or espeak-ng (offline), or an OpenAI-compatible speech server."
    /// Every speech provider; a new one is a `ProviderKind` type and a line here.
    public static let providers = ProviderRegistry<any SpeechProvider>([
        ProviderEntry(EspeakProvider.self),
        ProviderEntry(PiperProvider.self),
        ProviderEntry(OpenAISpeaker.self),
    ])
    public static let options: [OptionSpec] = [
        OptionSpec(
            "provider", .provider(providers.specs), default: ["name": "espeak-ng"],
            help: "The speech engine and its settings.")
    ]

    public static func configure(_ options: StageOptions) throws -> Configuration {
        Configuration(provider: try providers.choose(options))
    }

    /// The engine's own format; a provider that does not fix the rate gives mono at the rate
    /// its answer has.
    public static func outputFormat(_ configuration: Configuration, input: StreamFormat) throws -> StreamFormat {
        configuration.provider.streamFormat ?? StreamFormat(sampleRate: nil, channels: 1)
    }

    /// The provider, and what it adds (a voice), for provenance records.
    public static func provenance(_ configuration: Configuration) -> [String: JSONValue]? {
        configuration.provider.provenance
    }

    /// Files that decide the speech though no path option names them (a Piper voice by short name).
    public static func identityFiles(_ configuration: Configuration) -> [URL] { configuration.provider.identityFiles }

    public let id: String
    let provider: any SpeechProvider
    let logger: Logger

    public init(id: String, configuration: Configuration, context: StageContext) throws {
        self.id = id
        logger = context.logger
        provider = try configuration.provider.make(context)
    }

    public func prepare() async throws { try await provider.prepare() }

    /// Each reply's speech goes downstream as it is made: every part but the last says it continues
    /// (one part is held back until the next is made, so the last can say it is the last).
    public func run(_ input: Inbox<Reply>, _ output: Outbox<Speech>, _ item: ItemContext) async throws {
        for try await reply in input where !reply.text.allSatisfy(\.isWhitespace) {
            let chunk = reply.transcript.chunk
            var held: AudioChunk?
            var at = chunk.start
            try await provider.speak(reply.text, language: reply.transcript.language) { format, samples in
                guard !samples.isEmpty, format.channels > 0 else { return }
                if var previous = held {
                    guard previous.format == format else {
                        throw SynthesizeError(
                            .engine, "the speech changed format mid-reply (\(previous.format) to \(format))")
                    }
                    previous.continues = true
                    try await output.send(Speech(audio: previous, reply: reply))
                }
                let end = at + Double(samples.count / format.channels) / Double(format.sampleRate)
                held = AudioChunk(
                    format: format, samples: samples, start: at, end: end, index: chunk.index, cut: .synthesized)
                at = end
            }
            guard let last = held else {
                item.logger.warning(
                    "nothing to say in a reply",
                    metadata: ["stage.id": .string(id), "reply.index": .stringConvertible(chunk.index)])
                continue
            }
            try await output.send(Speech(audio: last, reply: reply))
        }
    }
}
