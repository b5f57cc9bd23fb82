import VoxCore
import VoxRequest

/// Why a reply provider cannot be set up: a rules file that cannot be read or does not check.
public typealias ReplyError = ModuleError<ReplyFailure>

public enum ReplyFailure: FailureCode {
    /// The rules file is missing, not JSON, or breaks a rule (exit 65, as a bad spec).
    case invalidRules

    public var category: VoxFailure { .invalidSpec }
}

/// A reply engine behind the `reply` stage. It gets the earlier turns of the same item (the
/// conversation so far), which a chat model needs to remember the lesson.
public protocol ReplyProvider: Sendable {
    func prepare() async throws
    /// The reply to one transcript, or nil for none.
    func reply(to transcript: Transcript, history: [ConversationTurn]) async throws -> String?
}
