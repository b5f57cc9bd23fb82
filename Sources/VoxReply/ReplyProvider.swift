import VoxCore

/// A reply engine behind the `reply` stage. It gets the earlier turns of the same item (the
/// conversation so far), which a chat model needs to remember the lesson.
public protocol ReplyProvider: Sendable {
    func prepare() async throws
    /// The reply to one transcript, or nil for none.
    func reply(to transcript: Transcript, history: [ConversationTurn]) async throws -> String?
}
