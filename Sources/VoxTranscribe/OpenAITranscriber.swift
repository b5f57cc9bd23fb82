import Foundation
import VoxCore
import VoxFormats
import VoxHTTP

/// Transcription through an OpenAI-compatible `POST {baseURL}/audio/transcriptions` (OpenAI,
/// whisper.cpp server, speaches, LocalAI, …): each chunk goes up as a 16-bit WAV; word times
/// come back where the server gives them (`verbose_json` with word timestamps). A chunk over
/// the 25 MB upload limit is sent in parts.
public final class OpenAITranscriber: TranscriptionProvider, ProviderKind, Sendable {
    public static let name = "openai"
    public static let summary =
        "POST {baseURL}/audio/transcriptions (OpenAI; tried: faster-whisper-server, whisper.cpp server)."
    public static func make(_ settings: Settings, context: StageContext) throws -> any TranscriptionProvider {
        try OpenAITranscriber(settings: settings, context: context)
    }

    public struct Settings: Sendable {
        public var http: HTTPSettings
        public var model: String
        public var language: String?
        public var prompt: String?
        public var temperature: Double?
    }

    /// Each option of its own, declared once (the connection's are `HTTPSettings.Option`).
    public enum Option {
        public static let model = StageOption<String>(
            "model", .string, default: "whisper-1", help: "Transcription model.")
        public static let language = StageOption<String?>(
            "language", .string, help: "ISO-639-1 language of the speech (de, en, …); absent: detected.")
        public static let prompt = StageOption<String?>(
            "prompt", .string, help: "Text to guide the model's style or vocabulary.")
        public static let temperature = StageOption<Double?>(
            "temperature", .number(0...1), help: "Sampling temperature.")
    }

    public static let options: [OptionSpec] =
        HTTPSettings.options + [Option.model.spec, Option.language.spec, Option.prompt.spec, Option.temperature.spec]

    public static func settings(_ options: StageOptions) -> Settings {
        Settings(
            http: HTTPSettings(options), model: options[Option.model], language: options[Option.language],
            prompt: options[Option.prompt], temperature: options[Option.temperature])
    }

    /// The API's upload limit.
    static let maxUploadBytes = 25 * 1024 * 1024

    let settings: Settings
    let connection: OpenAIConnection

    public init(settings: Settings, context: StageContext) throws {
        self.settings = settings
        connection = try OpenAIConnection(settings: settings.http, context: context)
    }

    public func prepare() async throws { try await connection.prepare(provider: "openai transcription") }

    public func beginItem() async throws -> any TranscriptionSession { Session(provider: self) }

    struct Session: TranscriptionSession {
        let provider: OpenAITranscriber
        func transcribe(_ chunk: AudioChunk) async throws -> Transcript { try await provider.transcribe(chunk) }
        func end() {}
    }

    func transcribe(_ chunk: AudioChunk) async throws -> Transcript {
        guard chunk.frames > 0 else {
            return Transcript(
                chunk: chunk, text: "", words: [], language: settings.language, provider: "openai",
                model: settings.model)
        }
        // Parts small enough for the upload limit (44-byte header, 2 bytes a sample).
        let framesPerPart = max(1, (Self.maxUploadBytes - 4096) / (2 * chunk.format.channels))
        var texts: [String] = []
        var words: [Word] = []
        var language = settings.language
        var start = 0
        while start < chunk.frames {
            let end = min(chunk.frames, start + framesPerPart)
            let samples = Array(chunk.samples[start * chunk.format.channels..<end * chunk.format.channels])
            let offset = chunk.start + Double(start) / Double(chunk.format.sampleRate)
            let (text, partWords, partLanguage) = try await request(
                WAVData.pcm16(samples, format: chunk.format), offset: offset)
            if !text.isEmpty { texts.append(text) }
            words += partWords
            language = language ?? partLanguage
            start = end
        }
        return Transcript(
            chunk: chunk, text: texts.joined(separator: " "), words: words, language: language, provider: "openai",
            model: settings.model)
    }

    func request(_ wav: Data, offset: Double) async throws -> (String, [Word], String?) {
        var fields: [(String, String)] = [
            ("model", settings.model), ("response_format", "verbose_json"), ("timestamp_granularities[]", "word"),
        ]
        if let language = settings.language { fields.append(("language", language)) }
        if let prompt = settings.prompt { fields.append(("prompt", prompt)) }
        if let temperature = settings.temperature { fields.append(("temperature", String(temperature))) }
        let response = try await connection.postMultipart(
            "audio/transcriptions", fields: fields, fileField: "file", fileName: "chunk.wav", contentType: "audio/wav",
            file: wav)
        return try Self.parse(response, offset: offset)
    }

    /// Reads a `verbose_json` (or plain `json`) transcription answer: the text, the words with
    /// their times moved by `offset` seconds, and the detected language. Throws
    /// `HTTPError(.invalidResponse)` when the body is not such an answer.
    public static func parse(
        _ response: HTTPResponse, offset: Double
    ) throws -> (text: String, words: [Word], language: String?) {
        let object = try OpenAIConnection.object(response)
        guard let text = object["text"] as? String else {
            throw HTTPError(.invalidResponse, "the transcription has no \"text\"")
        }
        let words = (object["words"] as? [[String: Any]] ?? []).compactMap { w -> Word? in
            guard let word = w["word"] as? String, let start = (w["start"] as? NSNumber)?.doubleValue,
                let end = (w["end"] as? NSNumber)?.doubleValue
            else { return nil }
            return Word(
                text: word.trimmingCharacters(in: .whitespaces), start: offset + start, end: offset + end,
                confidence: (w["probability"] as? NSNumber)?.doubleValue)
        }
        return (text.trimmingCharacters(in: .whitespacesAndNewlines), words, object["language"] as? String)
    }
}
