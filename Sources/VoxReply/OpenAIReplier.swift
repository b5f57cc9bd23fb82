import Foundation
import VoxCore
import VoxHTTP
import VoxRequest

/// Replies from a chat model through an OpenAI-compatible `POST {baseURL}/chat/completions`
/// (OpenAI, vLLM, Ollama, LocalAI, …): a system prompt, the last `memory` turns of the same
/// item as history (so the tutor remembers the lesson), then the learner's words.
public struct OpenAIReplier: ReplyProvider, ProviderKind {
    public static let name = "openai"
    public static let summary =
        "POST {baseURL}/chat/completions with the lesson so far as history (OpenAI's chat API)."
    public static func make(_ settings: Settings, context: StageContext) throws -> any ReplyProvider {
        try OpenAIReplier(settings: settings, context: context)
    }

    public struct Settings: Sendable {
        public var http: HTTPSettings
        public var model: String
        public var systemPrompt: String?
        public var memory: Int
        public var temperature: Double?
        public var maxTokens: Int?
        public var seed: Int?
    }

    /// Each option of its own, declared once (the connection's are `HTTPSettings.Option`).
    public enum Option {
        public static let model = StageOption<String>("model", .string, default: "gpt-4o-mini", help: "Chat model.")
        public static let systemPrompt = StageOption<String?>(
            "systemPrompt", .string, help: "The system prompt, inline.")
        public static let systemPromptFile = StageOption<String?>(
            "systemPromptFile", .path, help: "The system prompt, from a file.")
        public static let memory = StageOption<Int>(
            "memory", .integer(0...200), default: 10, help: "Earlier turns of the same item sent as history.")
        public static let temperature = StageOption<Double?>(
            "temperature", .number(0...2), help: "Sampling temperature.")
        public static let maxTokens = StageOption<Int?>(
            "maxTokens", .integer(1...1_000_000), help: "Longest reply in tokens.")
        public static let seed = StageOption<Int?>(
            "seed", .integer(0...Int(Int32.max)), help: "Seed, for servers that sample reproducibly.")
    }

    public static let options: [OptionSpec] =
        HTTPSettings.options + [
            Option.model.spec, Option.systemPrompt.spec, Option.systemPromptFile.spec, Option.memory.spec,
            Option.temperature.spec, Option.maxTokens.spec, Option.seed.spec,
        ]

    public static func settings(_ options: StageOptions) throws -> Settings {
        var prompt = options[Option.systemPrompt]
        if let file = options.url(Option.systemPromptFile) {
            guard prompt == nil else {
                throw options.error(Option.systemPromptFile, "give systemPrompt or systemPromptFile, not both")
            }
            guard let text = try? String(contentsOf: file, encoding: .utf8) else {
                throw options.error(Option.systemPromptFile, "cannot read \(file.path)")
            }
            prompt = text
        }
        return Settings(
            http: HTTPSettings(options), model: options[Option.model], systemPrompt: prompt,
            memory: options[Option.memory], temperature: options[Option.temperature],
            maxTokens: options[Option.maxTokens], seed: options[Option.seed])
    }

    let settings: Settings
    let connection: OpenAIConnection

    public init(settings: Settings, context: StageContext) throws {
        self.settings = settings
        connection = try OpenAIConnection(settings: settings.http, context: context)
    }

    public func prepare() async throws { try await connection.prepare(provider: "openai chat") }

    /// The messages sent for one turn.
    func messages(for transcript: Transcript, history: [ConversationTurn]) -> [[String: String]] {
        var messages: [[String: String]] = []
        if let prompt = settings.systemPrompt { messages.append(["role": "system", "content": prompt]) }
        for turn in history.suffix(settings.memory) {
            messages.append(["role": "user", "content": turn.user])
            messages.append(["role": "assistant", "content": turn.assistant])
        }
        messages.append(["role": "user", "content": transcript.text])
        return messages
    }

    public func reply(to transcript: Transcript, history: [ConversationTurn]) async throws -> String? {
        var body: [String: Any] = ["model": settings.model, "messages": messages(for: transcript, history: history)]
        if let t = settings.temperature { body["temperature"] = t }
        if let m = settings.maxTokens { body["max_tokens"] = m }
        if let s = settings.seed { body["seed"] = s }
        return try Self.parse(try await connection.postJSON("chat/completions", body))
    }

    /// Reads a chat-completions answer: `choices[0].message.content`, trimmed; nil when it is
    /// empty. Throws `HTTPError(.invalidResponse)` when the body is not such an answer.
    public static func parse(_ response: HTTPResponse) throws -> String? {
        let object = try OpenAIConnection.object(response)
        guard let choices = object["choices"] as? [[String: Any]],
            let message = choices.first?["message"] as? [String: Any],
            let content = message["content"] as? String
        else {
            throw HTTPError(.invalidResponse, "the chat answer has no choices[0].message.content")
        }
        let text = content.trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }
}
