import Foundation
import Synchronization
import VoxCore
import VoxRequest

/// The shared session of single-learner mode: whether the bot has joined a channel, which, and
/// since when. `join-with-bot` moves it to the new channel, `stop` without a session cookie ends
/// it; turns without a cookie (or a channel of their own) talk on its channel.
actor BotSession {
    private(set) var channel: String?
    private(set) var startedAt: Date?

    /// Joins `channel`; returns the channel it replaced.
    func join(channel name: String, now: Date = Date()) -> String? {
        let previous = channel
        channel = name
        startedAt = now
        return previous
    }

    /// Leaves the channel; returns the one left, if any.
    func stop() -> String? {
        defer {
            channel = nil
            startedAt = nil
        }
        return channel
    }
}

/// Conversation memory per channel, for at most `limit` channels (the least recently used is
/// forgotten first), so a long-running server's memory stays flat.
final class Conversations: Sendable {
    /// Each channel's conversation, and the channels from least to most recently used.
    private let state = Mutex<(byChannel: [String: Conversation], order: [String])>(([:], []))
    let limit: Int

    init(limit: Int) { self.limit = max(1, limit) }

    /// The channel's conversation, made on first use.
    func conversation(for channel: String) -> Conversation {
        state.withLock { s in
            if let found = s.byChannel[channel] {
                if s.order.last != channel {
                    s.order.removeAll { $0 == channel }
                    s.order.append(channel)
                }
                return found
            }
            let made = Conversation()
            s.byChannel[channel] = made
            s.order.append(channel)
            if s.order.count > limit { s.byChannel.removeValue(forKey: s.order.removeFirst()) }
            return made
        }
    }

    /// Forgets a channel's conversation (its session ended).
    func forget(_ channel: String) {
        state.withLock { s in
            s.byChannel.removeValue(forKey: channel)
            s.order.removeAll { $0 == channel }
        }
    }

    var count: Int { state.withLock { $0.byChannel.count } }
}
