import Foundation
import VoxCore
import VoxFieldService

/// `agent`: Transcript → AgentTurn. A field-service voice session, turn by turn: each
/// non-empty transcript goes to the agent in charge (`triage` routes to contacts, jobs,
/// estimates or scheduling, or the spec pins one), which answers with a spoken response and
/// zero or more `save_<type>` function calls. Every call is checked against its record type's
/// JSON Schema (the `records` folder) before anything is written; a bad call is kept, rejected,
/// with the JSON path of the violation. The session's memory (agent, caller facts, the record
/// being filled, the conversation) lasts for the item. Record ids come from the item and turn, so
/// a rerun gives the same records. At end of input the session simply ends: a record still
/// missing fields is not saved. With `speaker` set, only that speaker's transcripts are read (the
/// customer, not the field agent who also speaks; `SpeakerChoice`).
public struct AgentStage: Stage {
    public typealias Input = Transcript
    public typealias Output = AgentTurn

    public struct Configuration: Sendable {
        public var provider: ChosenProvider<any AgentProvider>
        public var agent: AgentName?
        public var records: URL
        public var catalog: RecordCatalog
        public var language: String?
        public var currency: String
        /// Only transcripts of this speaker are read; nil: every transcript.
        public var speaker: String?
    }

    public static let kind = "agent"
    public static let summary =
        "Field-service agents: routes each turn, answers, and saves records through schema-checked function calls."
    /// Every agent provider; a new one is a `ProviderKind` type and a line here.
    public static let providers = ProviderRegistry<any AgentProvider>([
        ProviderEntry(RulesAgent.self),
        ProviderEntry(OpenAIAgent.self),
    ])
    /// Each option but the provider block, declared once.
    public enum Option {
        public static let records = StageOption<String?>(
            "records", .path,
            help:
                "Folder of record schemas: each <type>.schema.json is a record type saved by save_<type> "
                + "(required).")
        public static let agent = StageOption<AgentName>(
            "agent", default: .triage,
            help: "triage routes each turn to contacts, jobs, estimates or scheduling; any other pins that agent.")
        public static let language = StageOption<String?>(
            "language", .string,
            help: "Language of the responses (en, de); default: the sidecar's, else the transcript's, else en.")
        public static let currency = StageOption<String>(
            "currency", .choice(["USD", "EUR", "GBP"]), default: "USD", help: "Currency of amounts naming none.")
    }

    public static let options: [OptionSpec] = [
        OptionSpec("provider", .provider(providers.specs), help: "The agent engine and its settings (required)."),
        Option.records.spec, Option.agent.spec, Option.language.spec, Option.currency.spec, SpeakerChoice.option.spec,
    ]

    public static func configure(_ options: StageOptions) throws -> Configuration {
        guard let records = options.url(Option.records) else {
            throw options.error(Option.records, "the agent stage needs a records folder of <type>.schema.json files")
        }
        let catalog = try RecordCatalog(folder: records)
        let agent = options[Option.agent]
        for name in AgentName.allCases where agent == .triage || agent == name {
            if let type = name.recordType, catalog.type(named: type) == nil {
                throw options.error(
                    Option.records,
                    "\(records.path) has no \(type).schema.json, which the \(name.rawValue) agent saves")
            }
        }
        return Configuration(
            provider: try providers.choose(options), agent: agent == .triage ? nil : agent, records: records,
            catalog: catalog, language: options[Option.language], currency: options[Option.currency],
            speaker: try SpeakerChoice.configure(options))
    }

    /// A served turn is the client's own clip, with no speaker label: read, whatever `speaker` says.
    public static func oneTurn(_ configuration: Configuration, maxSeconds: Double) -> Configuration {
        var configuration = configuration
        configuration.speaker = nil
        return configuration
    }

    /// The provider (and model), and the record types, for provenance records.
    public static func provenance(_ configuration: Configuration) -> [String: JSONValue]? {
        var out = configuration.provider.provenance
        out["recordTypes"] = .array(configuration.catalog.types.map { .string($0.name) })
        return out
    }

    /// The record types its turns save, for the stages it feeds (`write-records` writes a file for each).
    public static func declarations(_ configuration: Configuration) -> StageDeclarations {
        StageDeclarations().declaring(.recordTypes, configuration.catalog.types.map(\.name))
    }

    /// The record schemas decide what is saved: a changed schema redoes the items.
    public static func identityFiles(_ configuration: Configuration) -> [URL] {
        configuration.catalog.types.map(\.file) + configuration.provider.identityFiles
    }

    /// The session sidecar: language, the session's date (for "on Monday").
    public static let factsUsed = ItemFact.list(.session)

    public let id: String
    let configuration: Configuration
    let provider: any AgentProvider

    public init(id: String, configuration: Configuration, context: StageContext) throws {
        self.id = id
        self.configuration = configuration
        provider = try configuration.provider.make(context)
    }

    public func prepare() async throws { try await provider.prepare() }

    public func run(_ input: Inbox<Transcript>, _ output: Outbox<AgentTurn>, _ item: ItemContext) async throws {
        var session: AgentSession?
        // Each turn is held until the next arrives, so what the session saves at its end joins
        // the last turn.
        var held: (turn: AgentTurn, tools: Toolbox)?
        for try await transcript in input
        where !transcript.text.allSatisfy(\.isWhitespace) && transcript.isSpoken(by: configuration.speaker) {
            var current = session ?? newSession(item.facts[.session], first: transcript)
            let before = current.agent
            let tools = Toolbox(catalog: configuration.catalog, item: item.item.displayName, turn: current.turns)
            let answer = try await provider.respond(
                to: transcript, session: &current, fixed: configuration.agent, tools: tools)
            let handoff =
                answer.agent != before
                ? AgentTurn.Handoff(
                    from: before.rawValue, to: answer.agent.rawValue, reason: answer.routedBy ?? "the agent's choice")
                : nil
            let turn = AgentTurn(
                reply: Reply(transcript: transcript, text: answer.response), agent: answer.agent.rawValue,
                turn: current.turns, calls: answer.calls, handoff: handoff)
            current.agent = answer.agent
            current.turns += 1
            session = current
            if let held { try await output.send(held.turn) }
            held = (turn, tools)
        }
        guard var last = held, var current = session else { return }
        last.turn.calls += try await provider.finish(session: &current, tools: last.tools)
        try await output.send(last.turn)
    }

    /// A session from the sidecar's fields: its language and date.
    func newSession(_ sidecar: SessionSidecar?, first: Transcript) -> AgentSession {
        let language = configuration.language ?? sidecar?.language ?? first.language ?? "en"
        let date = (sidecar?.dates ?? []).lazy.compactMap(Self.day).first
        return AgentSession(
            agent: configuration.agent ?? .triage, language: language, referenceDate: date,
            currency: configuration.currency)
    }

    /// The calendar day a sidecar date names: `2026-03-02` or an ISO 8601 time (its own day).
    static func day(_ text: String) -> DateComponents? {
        guard let m = text.prefixMatch(of: /(\d{4})-(\d{2})-(\d{2})/), let y = Int(m.1), let mo = Int(m.2),
            let d = Int(m.3), (1...12).contains(mo), (1...31).contains(d)
        else { return nil }
        return DateComponents(year: y, month: mo, day: d)
    }
}
