import VoxCore

/// What one served request asks of the voice (OpenAI's `/v1/audio/speech` `voice` and `speed`,
/// a live session's `voice`), for the synthesize providers that can honour it.
public struct SpeechRequest: Sendable, Equatable {
    /// A voice the provider has (for espeak-ng a name or language code); else the spec's voice.
    public var voice: String?
    /// 0.25-4.0 times the spec's speaking rate.
    public var speed: Double?

    public init(voice: String? = nil, speed: Double? = nil) {
        self.voice = voice
        self.speed = speed
    }
}

/// What a served request asks of the recogniser over the spec's settings (the form's or a live
/// session's `language`), for the transcription providers that can honour it (whisper).
public struct TranscriptionRequest: Sendable, Equatable {
    /// The language of the speech (ISO-639-1, as whisper names them); nil: the spec's.
    public var language: String?

    public init(language: String? = nil) { self.language = language }
}

extension RequestKey where Value == Conversation {
    /// The conversation the item continues (`voxpipe serve`: the channel's or live session's);
    /// none makes the item a conversation of its own. Read by the reply stage.
    public static var conversation: Self { Self("conversation") }
}

extension RequestKey where Value == SpeechRequest {
    /// The voice and speed asked for; none: the spec's. Read by espeak-ng and Piper.
    public static var speech: Self { Self("speech") }
}

extension RequestKey where Value == TranscriptionRequest {
    /// The language asked for; none: the spec's. Read by whisper.
    public static var transcription: Self { Self("transcription") }
}

extension RequestKey where Value == String {
    /// A key a client of `voxpipe serve --allow-client-keys` sent: for the time of its item the
    /// HTTP providers send it instead of the key the spec's provider names. It is never logged
    /// and is stripped from errors and recordings like that one. Read by VoxHTTP's client.
    public static var clientAPIKey: Self { Self("clientAPIKey") }
}

/// What one served request may change for its item, and nothing else: the speech's voice and
/// speed (`/v1/audio/speech`), the language (`/v1/audio/transcriptions`, live sessions) and the
/// API key a client brought (`serve --allow-client-keys`).
public struct RequestOverrides: Sendable, Equatable {
    /// The voice and speed asked for; nil: the spec's.
    public var speech: SpeechRequest?
    /// Sent by the item's HTTP providers instead of their own key; never logged or recorded.
    public var apiKey: String?
    /// The language asked for; nil: the spec's.
    public var transcription: TranscriptionRequest?

    public init(speech: SpeechRequest? = nil, apiKey: String? = nil, transcription: TranscriptionRequest? = nil) {
        self.speech = speech
        self.apiKey = apiKey
        self.transcription = transcription
    }

    /// The item's request values: these overrides, and the conversation the turn continues.
    public func values(conversation: Conversation?) -> RequestValues {
        var values = RequestValues()
        values[.conversation] = conversation
        values[.speech] = speech
        values[.transcription] = transcription
        values[.clientAPIKey] = apiKey
        return values
    }
}
