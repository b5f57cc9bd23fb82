import Foundation
import VoxCore

extension PayloadType {
    /// An agent's turn (`AgentTurn`): it carries the reply it speaks, and so the transcript it
    /// answered. Declared here, by the module that owns the payload, not in VoxCore.
    public static let agentTurn = PayloadType("AgentTurn", carrying: [.reply])
}

/// One turn of a voice-agent session: which agent answered, what it says (its `reply`, which a
/// `synthesize` stage speaks as it would a tutor's reply), and the function calls it made, each
/// checked against its record type's schema before anything is written.
public struct AgentTurn: Payload {
    public static let payloadType = PayloadType.agentTurn

    /// The transcript answered and the spoken response (`reply.text`).
    public var reply: Reply
    /// The agent that answered: `triage`, `contacts`, `jobs`, `estimates` or `scheduling`.
    public var agent: String
    /// 0-based position of this turn among the item's answered turns.
    public var turn: Int
    /// The function calls of the turn, in the order the agent made them.
    public var calls: [FunctionCall]
    /// Set when the session changed agent on this turn (the client's `session_update`).
    public var handoff: Handoff?

    /// An agent change: from which agent to which, and why (the words that routed it).
    public struct Handoff: Sendable, Hashable, Codable {
        public var from: String
        public var to: String
        public var reason: String

        public init(from: String, to: String, reason: String) {
            self.from = from
            self.to = to
            self.reason = reason
        }
    }

    public init(reply: Reply, agent: String, turn: Int, calls: [FunctionCall], handoff: Handoff? = nil) {
        self.reply = reply
        self.agent = agent
        self.turn = turn
        self.calls = calls
        self.handoff = handoff
    }

    public func carried<T: Payload>(_ type: T.Type) -> T? {
        (self as? T) ?? reply.carried(T.self)
    }
}

extension AgentTurn: StageInput {}

/// A function call an agent made, with its arguments and what became of it.
public struct FunctionCall: Sendable, Hashable, Codable {
    /// The call's id: the model's `tool_calls[].id`, or one made from the item and turn.
    public var callID: String
    /// The function: `save_<record type>`.
    public var name: String
    /// The record type it saves (`contact`), nil for a function no record type has.
    public var recordType: String?
    /// The arguments as parsed; nil when they were not JSON (`rawArguments` keeps them).
    public var arguments: JSONValue?
    /// The arguments as the model sent them, when they did not parse.
    public var rawArguments: String?
    /// The record's id, stable for the item, turn and call: reruns write the same records.
    public var recordID: String
    /// nil: valid and saved; else why it was rejected.
    public var rejection: Rejection?

    /// Why a call was not saved: the JSON path of the first violation (`$.lineItems[1].quantity`)
    /// and what is wrong there.
    public struct Rejection: Sendable, Hashable, Codable {
        public var path: String
        public var message: String

        public init(path: String, message: String) {
            self.path = path
            self.message = message
        }
    }

    public init(
        callID: String, name: String, recordType: String?, arguments: JSONValue?, rawArguments: String? = nil,
        recordID: String, rejection: Rejection?
    ) {
        self.callID = callID
        self.name = name
        self.recordType = recordType
        self.arguments = arguments
        self.rawArguments = rawArguments
        self.recordID = recordID
        self.rejection = rejection
    }

    public var accepted: Bool { rejection == nil }
}

extension StageDeclarationKey where Value == [String] {
    /// The record types a stage's turns save (the agent's record schemas): `write-records` writes
    /// one file for each, empty when nothing was saved.
    public static var recordTypes: Self { Self("recordTypes") }
}
