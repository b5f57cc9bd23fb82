import Foundation
import VoxCore
import VoxFormats
import VoxHTTP

/// Speech from an OpenAI-compatible `POST {baseURL}/audio/speech` (OpenAI, speaches, LocalAI,
/// …), as WAV or raw PCM (24 kHz mono 16-bit); text over 4,096 characters goes in pieces cut at
/// sentence ends.
public struct OpenAISpeaker: SpeechProvider, ProviderKind {
    public static let name = "openai"
    public static let summary = "POST {baseURL}/audio/speech (OpenAI's speech API); 24 kHz mono for pcm."
    public static func make(_ settings: Settings, context: StageContext) throws -> any SpeechProvider {
        try OpenAISpeaker(settings: settings, context: context)
    }
    /// pcm is 24 kHz by the API's definition; a WAV answer's rate is the server's.
    public static func streamFormat(_ settings: Settings) -> StreamFormat? {
        settings.format == "pcm" ? StreamFormat(sampleRate: 24000, channels: 1) : nil
    }

    public struct Settings: Sendable {
        public var http: HTTPSettings
        public var model: String
        public var voice: String
        public var speed: Double?
        public var format: String
    }

    /// Each option of its own, declared once (the connection's are `HTTPSettings.Option`).
    public enum Option {
        public static let model = StageOption<String>("model", .string, default: "tts-1", help: "Speech model.")
        public static let voice = StageOption<String>(
            "voice", .string, default: "alloy", help: "The server's voice name.")
        public static let speed = StageOption<Double?>(
            "speed", .number(0.25...4), help: "Speaking speed, 1 is normal.")
        public static let format = StageOption<String>(
            "format", .choice(["wav", "pcm"]), default: "wav", help: "wav, or pcm (raw 24 kHz mono 16-bit).")
    }

    public static let options: [OptionSpec] =
        HTTPSettings.options + [Option.model.spec, Option.voice.spec, Option.speed.spec, Option.format.spec]

    public static func settings(_ options: StageOptions) -> Settings {
        Settings(
            http: HTTPSettings(options), model: options[Option.model], voice: options[Option.voice],
            speed: options[Option.speed], format: options[Option.format])
    }

    /// The API's longest input.
    static let maxCharacters = 4096
    static let pcmFormat = AudioFormat(sampleRate: 24000, channels: 1)

    let settings: Settings
    let connection: OpenAIConnection

    public init(settings: Settings, context: StageContext) throws {
        self.settings = settings
        connection = try OpenAIConnection(settings: settings.http, context: context)
    }

    public func prepare() async throws { try await connection.prepare(provider: "openai speech") }

    /// One request per piece of whole sentences (the API takes up to `maxCharacters`), each
    /// piece's audio handed on as it arrives.
    public func speak(
        _ text: String, language: String?, _ part: (_ format: AudioFormat, _ samples: [Float]) async throws -> Void
    ) async throws {
        var format: AudioFormat?
        for piece in TextPieces.split(text, maxCharacters: Self.maxCharacters) {
            var body: [String: Any] = [
                "model": settings.model, "voice": settings.voice, "input": piece, "response_format": settings.format,
            ]
            if let speed = settings.speed { body["speed"] = speed }
            let audio = try Self.decode(
                try await connection.postJSON("audio/speech", body).body, format: settings.format)
            if let format, format != audio.format {
                throw HTTPError(.invalidResponse, "the server changed audio format between pieces")
            }
            format = audio.format
            try await part(audio.format, audio.samples)
        }
    }

    /// The rates a WAV answer may have: those write-wav writes. A header claiming 1 Hz would
    /// otherwise turn a few bytes into minutes of 48 kHz audio downstream.
    static let wavRates = 8000...192_000

    /// Reads a speech answer in the `response_format` asked for: `pcm` is raw 24 kHz mono
    /// 16-bit little-endian, anything else a mono 16-bit PCM WAV at 8–192 kHz (the stage
    /// promises mono at the answer's rate). Throws `HTTPError(.invalidResponse)` when the body
    /// is not such audio.
    public static func decode(_ body: Data, format: String) throws -> (format: AudioFormat, samples: [Float]) {
        if format == "pcm" {
            return (pcmFormat, WAVData.samples(pcm16: [UInt8](body)))
        }
        guard let decoded = WAVData.decodePCM16(body) else {
            throw HTTPError(.invalidResponse, "the speech answer is not a 16-bit PCM WAV (\(body.count) bytes)")
        }
        guard decoded.format.channels == 1, wavRates.contains(decoded.format.sampleRate) else {
            throw HTTPError(.invalidResponse, "the speech answer is \(decoded.format); expected mono at 8–192 kHz")
        }
        return decoded
    }
}
