import VoxCore

/// `reply`: Transcript → Reply. Answers each non-empty transcript through the provider the spec
/// names, passing the item's earlier turns as conversation memory. Empty transcripts (chunks
/// without words) get no reply.
public struct ReplyStage: Stage {
    public typealias Input = Transcript
    public typealias Output = Reply

    public enum Provider: Sendable {
        case rules(RulesProvider)
        case openai(OpenAIReplier.Settings)
    }

    public struct Configuration: Sendable {
        public var provider: Provider
    }

    public static let kind = "reply"
    public static let summary = "Replies to each transcript: rules (offline, deterministic) or an OpenAI-compatible chat model."
    public static let providers: [ProviderSpec] = [
        ProviderSpec(name: "rules", summary: "Ordered regular-expression rules with reply templates and a fallback.", options: RulesProvider.options),
        ProviderSpec(name: "openai", summary: "POST {baseURL}/chat/completions with the lesson so far as history (OpenAI, vLLM, Ollama, LocalAI).", options: OpenAIReplier.options),
    ]
    public static let options: [OptionSpec] = [
        OptionSpec("provider", .provider(providers), help: "The reply engine and its settings (required)."),
    ]

    public static func configure(_ options: StageOptions) throws -> Configuration {
        guard let (name, providerOptions) = options.provider() else { throw options.error("provider", "expected a provider block") }
        switch name {
        case "rules":
            guard let url = providerOptions.url("rules") else { throw providerOptions.error("rules", "the rules provider needs a rules file") }
            return Configuration(provider: .rules(try RulesProvider(url: url)))
        case "openai":
            return Configuration(provider: .openai(try OpenAIReplier.settings(providerOptions)))
        default:
            throw options.error("provider", "unknown provider \"\(name)\"")
        }
    }

    public let id: String
    let provider: any ReplyProvider

    public init(id: String, configuration: Configuration, context: StageContext) throws {
        self.id = id
        switch configuration.provider {
        case .rules(let rules): provider = rules
        case .openai(let settings): provider = try OpenAIReplier(settings: settings, recording: context.recording)
        }
    }

    public func prepare() async throws { try await provider.prepare() }

    public func run(_ input: Inbox<Transcript>, _ output: Outbox<Reply>, _ item: ItemContext) async throws {
        var history: [ConversationTurn] = []
        for try await transcript in input where !transcript.text.allSatisfy(\.isWhitespace) {
            guard let text = try await provider.reply(to: transcript, history: history) else { continue }
            history.append(ConversationTurn(user: transcript.text, assistant: text))
            try await output.send(Reply(transcript: transcript, text: text))
        }
    }
}
