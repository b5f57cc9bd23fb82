import Foundation
import Synchronization

/// One exchange of a conversation: what the learner said and what was answered.
public struct ConversationTurn: Sendable, Equatable {
    public var user: String
    public var assistant: String

    public init(user: String, assistant: String) {
        self.user = user
        self.assistant = assistant
    }
}

/// Conversation memory that outlives one item. In a batch run each item (a lesson) is its own
/// conversation and the reply stage keeps it; `voxpipe serve` answers one turn per request, so it
/// hands every request of a channel the same `Conversation` (`RequestKey.conversation`) and the
/// tutor remembers what was said before. Keeps the last `limit` turns, so memory stays bounded.
public final class Conversation: Sendable {
    private let kept = Mutex<[ConversationTurn]>([])
    /// The most turns kept (the oldest go first).
    public let limit: Int

    public init(limit: Int = 200) { self.limit = max(1, limit) }

    /// The turns so far, oldest first.
    public var turns: [ConversationTurn] { kept.withLock { $0 } }

    /// A copy to answer a guessed turn on: the guess's changes are kept only when the turn is
    /// confirmed (`adopt`).
    public func copy() -> Conversation {
        let copy = Conversation(limit: limit)
        copy.kept.withLock { $0 = turns }
        return copy
    }

    /// Takes the turns of `other` (a confirmed guess's copy) as its own.
    public func adopt(_ other: Conversation) {
        let turns = other.turns
        kept.withLock { $0 = turns }
    }

    /// Adds a turn, dropping the oldest beyond `limit`.
    public func append(_ turn: ConversationTurn) {
        kept.withLock { kept in
            kept.append(turn)
            if kept.count > limit { kept.removeFirst(kept.count - limit) }
        }
    }
}
