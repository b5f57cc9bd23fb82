import Foundation
import VoxCore
import VoxFieldService

/// The offline, deterministic agent: routes each turn by keywords (English and German), pulls
/// names, phone numbers, e-mail and street addresses, dates, times, amounts and line items out of
/// the words (`SlotExtractor`), fills the current agent's record across turns, and saves it with
/// a `save_<type>` call once the record's required fields are there; until then it asks for
/// what is missing. Estimates are saved when the caller says they are complete ("that's all").
public struct RulesAgent: AgentProvider, ProviderKind {
    public static let name = "rules"
    public static let summary = "Offline and deterministic: keyword routing and slot extraction (English, German)."
    public static let options: [OptionSpec] = []
    public struct Settings: Sendable {}
    public static func settings(_ options: StageOptions) throws -> Settings { Settings() }
    public static func make(_ settings: Settings, context: StageContext) throws -> any AgentProvider {
        RulesAgent()
    }

    public init() {}

    public func prepare() async throws {}

    /// Keywords that route a turn to an agent; the agent with most hits wins, ties to the first.
    static let routes: [(AgentName, [String])] = [
        (
            .scheduling,
            [
                "appointment", "schedule", "book a visit", "come by", "send someone", "send somebody", "visit",
                "reschedule", "termin", "vorbeikommen", "besuch",
            ]
        ),
        (.estimates, ["estimate", "quote", "how much", "price for", "kostenvoranschlag", "angebot", "kosten"]),
        (
            .jobs,
            [
                "job", "repair", "broken", "leak", "leaking", "not working", "doesn't work", "fix", "install",
                "auftrag", "reparatur", "kaputt", "defekt", "undicht", "reparieren",
            ]
        ),
        (
            .contacts,
            ["contact", "new customer", "add a customer", "address book", "kontakt", "neuer kunde", "neue kundin"]
        ),
    ]

    static func route(_ text: String) -> (AgentName, String)? {
        let lower = text.lowercased()
        var best: (AgentName, String, Int)?
        for (agent, words) in routes {
            let hits = words.filter { SlotExtractor.contains(lower, [$0]) }
            if let first = hits.first, hits.count > (best?.2 ?? 0) { best = (agent, first, hits.count) }
        }
        return best.map { ($0.0, $0.1) }
    }

    public func respond(
        to transcript: Transcript, session: inout AgentSession, fixed: AgentName?, tools: Toolbox
    )
        async throws -> AgentAnswer
    {
        let extractor = SlotExtractor(referenceDate: session.referenceDate, currency: session.currency)
        let found = extractor.extract(transcript.text)
        for (key, value) in [
            ("name", found.name), ("phone", found.phone), ("email", found.email), ("address", found.address),
        ] {
            if let value { session.facts[key] = value }
        }
        var routedBy: String?
        var asked = false
        if let fixed {
            session.agent = fixed
        } else if let (agent, keyword) = Self.route(transcript.text) {
            if agent != session.agent { routedBy = "\"\(keyword)\"" }
            session.agent = agent
            asked = true
        }
        let say = Phrases(german: session.german)
        guard let type = session.agent.recordType else {
            return AgentAnswer(agent: .triage, response: say.greeting, calls: [])
        }
        if session.saved.contains(type) && !asked && session.draft[type] == nil {
            // Already saved this session, and the caller did not ask for another: no duplicate.
            return AgentAnswer(agent: session.agent, response: say.anythingElse, calls: [])
        }
        var draft = session.draft[type] ?? [:]
        fill(&draft, type: type, found: found, session: session, text: transcript.text)
        session.draft[type] = draft
        if let missing = missing(draft, type: type, found: found) {
            return AgentAnswer(agent: session.agent, response: say.ask(missing), calls: [], routedBy: routedBy)
        }
        let call = tools.call(name: "save_\(type)", arguments: .object(draft), raw: nil, id: nil, index: 0)
        session.draft[type] = nil
        if call.accepted { session.saved.append(type) }
        let response = call.accepted ? say.saved(type, draft) : say.rejected(call.rejection)
        return AgentAnswer(agent: session.agent, response: response, calls: [call], routedBy: routedBy)
    }

    /// Saves the drafts that have every required field (an estimate the caller never closed).
    public func finish(session: inout AgentSession, tools: Toolbox) async throws -> [FunctionCall] {
        var calls: [FunctionCall] = []
        var closed = SlotExtractor.Found()
        closed.done = true
        for type in session.draft.keys.sorted() {
            guard let draft = session.draft[type], missing(draft, type: type, found: closed) == nil else { continue }
            let call = tools.call(
                name: "save_\(type)", arguments: .object(draft), raw: nil, id: nil, index: 1 + calls.count)
            if call.accepted { session.saved.append(type) }
            calls.append(call)
        }
        session.draft = [:]
        return calls
    }

    /// Adds what this turn says to the record being gathered.
    func fill(
        _ draft: inout [String: JSONValue], type: String, found: SlotExtractor.Found, session: AgentSession,
        text: String
    ) {
        func set(_ key: String, _ value: String?) { if let value, draft[key] == nil { draft[key] = .string(value) } }
        func update(_ key: String, _ value: String?) { if let value { draft[key] = .string(value) } }
        let facts = session.facts
        switch type {
        case "contact":
            update("name", found.name)
            set("name", facts["name"])
            for key in ["phone", "email", "address"] { update(key, facts[key]) }
        case "job":
            set("customerName", facts["name"])
            update("address", found.address)
            set("address", facts["address"])
            set("phone", facts["phone"])
            if draft["description"] == nil, Self.route(text)?.0 == .jobs {
                draft["description"] = .string(Self.sentence(text))
            }
            if found.urgent { draft["priority"] = "urgent" }
            if draft["priority"] == nil { draft["priority"] = "normal" }
        case "estimate":
            set("customerName", found.name ?? facts["name"])
            var items = draft["lineItems"]?.arrayValue ?? []
            let currency = found.currency ?? draft["currency"]?.stringValue ?? session.currency
            draft["currency"] = .string(currency)
            for item in found.lineItems {
                let total = Double(RecordCatalog.cents(item.quantity * item.unitPrice)) / 100
                items.append([
                    "description": .string(item.description), "quantity": .number(item.quantity),
                    "unitPrice": .number(item.unitPrice), "total": .number(total),
                ])
            }
            if !items.isEmpty {
                draft["lineItems"] = .array(items)
                let sum = items.reduce(Int64(0)) {
                    $0 + RecordCatalog.cents($1.objectValue?["total"]?.numberValue ?? 0)
                }
                draft["subtotal"] = .number(Double(sum) / 100)
                draft["total"] = .number(Double(sum) / 100)
            }
        case "appointment":
            set("contactName", facts["name"])
            update("date", found.date)
            update("time", found.time)
            set("address", facts["address"])
        default:
            break
        }
    }

    /// The first required field still missing, or nil when the record can be saved.
    func missing(_ draft: [String: JSONValue], type: String, found: SlotExtractor.Found) -> String? {
        let required: [String]
        switch type {
        case "contact":
            required = ["name"]
            if draft["name"] != nil && draft["phone"] == nil && draft["email"] == nil { return "phone" }
        case "job": required = ["customerName", "address", "description"]
        case "estimate":
            required = ["customerName", "lineItems"]
            if required.allSatisfy({ draft[$0] != nil }) && !found.done { return "more" }
        case "appointment": required = ["contactName", "date", "time"]
        default: required = []
        }
        return required.first { draft[$0] == nil }
    }

    /// The sentence of `text` that routed to the agent, as a job's description.
    static func sentence(_ text: String) -> String {
        let sentences = text.split(whereSeparator: { ".!?".contains($0) }).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        let routed = sentences.first { route($0)?.0 == .jobs } ?? text.trimmingCharacters(in: .whitespaces)
        return routed.hasSuffix(".") ? routed : routed + "."
    }
}

/// What the rules agent says, in English or German.
struct Phrases {
    var german: Bool

    var greeting: String {
        german
            ? "Hallo! Ich kann Kontakte anlegen, Aufträge aufnehmen, Kostenvoranschläge schreiben und Termine "
                + "vereinbaren. Was brauchen Sie?"
            : "Hello! I can add contacts, book jobs, write estimates and schedule appointments. What do you need?"
    }

    var anythingElse: String { german ? "Noch etwas?" : "Anything else?" }

    func ask(_ field: String) -> String {
        let en: [String: String] = [
            "name": "What is the name?", "customerName": "What is the customer's name?",
            "contactName": "Who is the appointment for?", "phone": "What is the phone number or e-mail address?",
            "address": "What is the address?", "description": "What needs to be done?",
            "lineItems": "What should the estimate include?", "more": "Anything else on the estimate?",
            "date": "On which day?", "time": "At what time?",
        ]
        let de: [String: String] = [
            "name": "Wie ist der Name?", "customerName": "Wie heißt der Kunde?",
            "contactName": "Für wen ist der Termin?", "phone": "Wie lautet die Telefonnummer oder E-Mail-Adresse?",
            "address": "Wie lautet die Adresse?", "description": "Was ist zu tun?",
            "lineItems": "Was soll der Kostenvoranschlag enthalten?", "more": "Noch etwas für den Kostenvoranschlag?",
            "date": "An welchem Tag?", "time": "Um wie viel Uhr?",
        ]
        return (german ? de : en)[field] ?? (german ? "Bitte noch: \(field)." : "Please tell me the \(field).")
    }

    func saved(_ type: String, _ record: [String: JSONValue]) -> String {
        func s(_ key: String) -> String { record[key]?.stringValue ?? "" }
        let total = record["total"]?.numberValue.map { String(format: "%.2f", $0) } ?? ""
        let currency = s("currency")
        switch (type, german) {
        case ("contact", false): return "I saved \(s("name")) as a contact."
        case ("contact", true): return "Ich habe \(s("name")) als Kontakt gespeichert."
        case ("job", false): return "I booked the job for \(s("customerName")) at \(s("address"))."
        case ("job", true): return "Ich habe den Auftrag für \(s("customerName")) in \(s("address")) angelegt."
        case ("estimate", false): return "The estimate for \(s("customerName")) comes to \(total) \(currency)."
        case ("estimate", true): return "Der Kostenvoranschlag für \(s("customerName")) beträgt \(total) \(currency)."
        case ("appointment", false): return "\(s("contactName")) is booked for \(s("date")) at \(s("time"))."
        case ("appointment", true):
            return "Der Termin für \(s("contactName")) ist am \(s("date")) um \(s("time")) Uhr."
        default: return german ? "Gespeichert." : "Saved."
        }
    }

    func rejected(_ rejection: FunctionCall.Rejection?) -> String {
        let path = rejection?.path ?? "$"
        return german
            ? "Das konnte ich nicht speichern: \(path) ist ungültig." : "I could not save that: \(path) is not valid."
    }
}
