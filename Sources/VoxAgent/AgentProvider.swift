import Foundation
import VoxCore
import VoxFieldService

/// Why an agent cannot be set up: a records folder that cannot be read or whose schemas do not
/// check.
public typealias AgentError = ModuleError<AgentFailure>

public enum AgentFailure: FailureCode {
    /// The records folder or one of its schemas is missing or wrong (exit 65, as a bad spec).
    case invalidRecords

    public var category: VoxFailure { .invalidSpec }
}

/// The agents of a field-service session. `triage` routes; each other agent owns one record type.
public enum AgentName: String, Sendable, CaseIterable, Codable, OptionValue {
    case triage, contacts, jobs, estimates, scheduling

    /// The record type this agent saves (nil for triage).
    public var recordType: String? {
        switch self {
        case .triage: nil
        case .contacts: "contact"
        case .jobs: "job"
        case .estimates: "estimate"
        case .scheduling: "appointment"
        }
    }

    /// The agent that saves a record type.
    public static func owning(_ recordType: String) -> AgentName? {
        allCases.first { $0.recordType == recordType }
    }
}

/// What a session remembers between turns: the agent in charge, what callers said about
/// themselves (name, phone, e-mail, address), the record being filled in, the conversation as
/// chat messages (for model providers), and the records saved.
public struct AgentSession: Sendable {
    public var agent: AgentName
    /// `en` or `de`: the language responses are written in.
    public var language: String
    /// The session's date, from the sidecar (`startedAt`, `recordedAt`, `date`).
    public var referenceDate: DateComponents?
    public var currency: String
    /// Caller facts, kept across agents: name, phone, email, address.
    public var facts: [String: String] = [:]
    /// Record being gathered, per record type.
    public var draft: [String: [String: JSONValue]] = [:]
    /// Chat messages so far (model providers), oldest first.
    public var messages: [JSONValue] = []
    /// Record types saved, in order.
    public var saved: [String] = []
    /// Answered turns so far.
    public var turns = 0

    public init(agent: AgentName, language: String, referenceDate: DateComponents?, currency: String) {
        self.agent = agent
        self.language = language
        self.referenceDate = referenceDate
        self.currency = currency
    }

    public var german: Bool { language.lowercased().hasPrefix("de") }
}

/// What an agent answers for one turn.
public struct AgentAnswer: Sendable {
    public var agent: AgentName
    public var response: String
    public var calls: [FunctionCall]
    /// What moved the session to `agent`, when it moved (a keyword, a function call).
    public var routedBy: String?

    public init(agent: AgentName, response: String, calls: [FunctionCall], routedBy: String? = nil) {
        self.agent = agent
        self.response = response
        self.calls = calls
        self.routedBy = routedBy
    }
}

/// The functions agents may call in one turn, and what calling one does: the arguments are
/// parsed and checked against the record type's schema, and the call gets a record id that is
/// the same whenever the same item's same turn makes the same call (so reruns are idempotent).
public struct Toolbox: Sendable {
    public let catalog: RecordCatalog
    /// The item (its display name) and the turn, which record ids are made from.
    public let item: String
    public let turn: Int

    public init(catalog: RecordCatalog, item: String, turn: Int) {
        self.catalog = catalog
        self.item = item
        self.turn = turn
    }

    /// The record id of the `index`th call of this turn: `<type>-<12 hex digits>`.
    public func recordID(type: String, index: Int) -> String {
        let digest = Digest(.sha256)
        digest.update(Data("\(item)\n\(turn)\n\(index)".utf8))
        return "\(type)-\(digest.finalizeHex().prefix(12))"
    }

    /// Calls a function: parses `arguments` (a JSON text as models send it, or a value), checks
    /// it, and returns the call with its verdict. Never throws: a bad call is a rejected call.
    public func call(name: String, arguments: JSONValue?, raw: String?, id: String?, index: Int) -> FunctionCall {
        var parsed = arguments
        var rejection: FunctionCall.Rejection?
        if parsed == nil, let raw {
            if let value = try? JSONValue.parse(Data(raw.utf8)) {
                parsed = value
            } else {
                rejection = .init(path: "$", message: "the arguments are not valid JSON")
            }
        }
        let type = catalog.type(forFunction: name)
        let recordID = recordID(type: type?.name ?? "call", index: index)
        if rejection == nil {
            if let type, let value = parsed {
                do {
                    try catalog.validate(value, as: type)
                } catch let violation as JSONSchema.Violation {
                    rejection = .init(path: violation.path, message: violation.message)
                } catch {
                    rejection = .init(path: "$", message: describe(error))
                }
            } else if type == nil {
                rejection = .init(path: "$", message: "no function \(name) (known: \(functionNames))")
            } else {
                rejection = .init(path: "$", message: "the call has no arguments")
            }
        }
        return FunctionCall(
            callID: id ?? "call-\(recordID)", name: name, recordType: type?.name, arguments: parsed,
            rawArguments: parsed == nil ? raw : nil, recordID: recordID, rejection: rejection)
    }

    var functionNames: String { catalog.types.map(\.function).joined(separator: ", ") }
}

/// An agent engine behind the `agent` stage: answers one turn, updating the session's memory.
public protocol AgentProvider: Sendable {
    func prepare() async throws
    /// The answer to one transcript. `fixed` is the agent the spec pins, or nil for triage.
    func respond(
        to transcript: Transcript, session: inout AgentSession, fixed: AgentName?, tools: Toolbox
    )
        async throws -> AgentAnswer
    /// At the end of the session: calls for what the session holds and can still save (a
    /// complete estimate the caller never closed). `tools` is the last turn's.
    func finish(session: inout AgentSession, tools: Toolbox) async throws -> [FunctionCall]
}

extension AgentProvider {
    public func finish(session: inout AgentSession, tools: Toolbox) async throws -> [FunctionCall] { [] }
}
