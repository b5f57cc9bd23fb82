import VoxCore
import VoxRequest

/// `reply`: Transcript → Reply. Answers each non-empty transcript through the provider the spec
/// names, passing the item's earlier turns as conversation memory (or, when the item brings a
/// `Conversation` of its own, as `voxpipe serve` does per channel, that conversation's turns).
/// Empty transcripts (chunks without words) get no reply, nor, with `speaker` set, transcripts of
/// other speakers (`SpeakerChoice`).
public struct ReplyStage: Stage {
    public typealias Input = Transcript
    public typealias Output = Reply

    public struct Configuration: Sendable {
        public var provider: ChosenProvider<any ReplyProvider>
        /// Only transcripts of this speaker are answered; nil: every transcript.
        public var speaker: String? = nil
    }

    public static let kind = "reply"
    public static let summary =
        "Replies to each transcript: rules (offline, deterministic) or an OpenAI-compatible chat model."
    /// Every reply provider; a new one is a `ProviderKind` type and a line here.
    public static let providers = ProviderRegistry<any ReplyProvider>([
        ProviderEntry(RulesProvider.self),
        ProviderEntry(OpenAIReplier.self),
    ])
    public static let options: [OptionSpec] = [
        OptionSpec("provider", .provider(providers.specs), help: "The reply engine and its settings (required)."),
        SpeakerChoice.option.spec,
    ]

    public static func configure(_ options: StageOptions) throws -> Configuration {
        Configuration(provider: try providers.choose(options), speaker: try SpeakerChoice.configure(options))
    }

    /// A served turn is the client's own clip, with no speaker label: answered, whatever `speaker` says.
    public static func oneTurn(_ configuration: Configuration, maxSeconds: Double) -> Configuration {
        var configuration = configuration
        configuration.speaker = nil
        return configuration
    }

    /// The provider, and what it adds (a model), for provenance records.
    public static func provenance(_ configuration: Configuration) -> [String: JSONValue]? {
        configuration.provider.provenance
    }

    public let id: String
    let provider: any ReplyProvider
    let speaker: String?

    public init(id: String, configuration: Configuration, context: StageContext) throws {
        self.id = id
        provider = try configuration.provider.make(context)
        speaker = configuration.speaker
    }

    public func prepare() async throws { try await provider.prepare() }

    public func run(_ input: Inbox<Transcript>, _ output: Outbox<Reply>, _ item: ItemContext) async throws {
        let conversation = item.request[.conversation]
        var history = conversation?.turns ?? []
        for try await transcript in input
        where !transcript.text.allSatisfy(\.isWhitespace) && transcript.isSpoken(by: speaker) {
            guard let text = try await provider.reply(to: transcript, history: history) else { continue }
            let turn = ConversationTurn(user: transcript.text, assistant: text)
            history.append(turn)
            conversation?.append(turn)
            try await output.send(Reply(transcript: transcript, text: text))
        }
    }
}
