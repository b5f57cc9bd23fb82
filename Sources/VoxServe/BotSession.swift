import Foundation
import VoxCore

/// The bot's session: whether it has joined a channel, which, and since when. `join-with-bot`
/// starts one (ending any before it), `stop` ends it; requests without a channel of their own
/// talk on the session's channel.
actor BotSession {
    private(set) var channel: String?
    private(set) var startedAt: Date?

    /// Joins a new channel `tutor-<userId>-<epoch ms>`; returns it and the channel it replaced.
    func join(userID: String, now: Date = Date()) -> (channel: String, previous: String?) {
        let previous = channel
        let name = "tutor-\(userID)-\(Int64((now.timeIntervalSince1970 * 1000).rounded(.down)))"
        channel = name
        startedAt = now
        return (name, previous)
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
final class Conversations: @unchecked Sendable {
    private let lock = NSLock()
    private var byChannel: [String: Conversation] = [:]
    private var order: [String] = []
    let limit: Int

    init(limit: Int) { self.limit = max(1, limit) }

    /// The channel's conversation, made on first use.
    func conversation(for channel: String) -> Conversation {
        lock.withLock {
            if let found = byChannel[channel] {
                if order.last != channel {
                    order.removeAll { $0 == channel }
                    order.append(channel)
                }
                return found
            }
            let made = Conversation()
            byChannel[channel] = made
            order.append(channel)
            if order.count > limit { byChannel.removeValue(forKey: order.removeFirst()) }
            return made
        }
    }

    /// Forgets a channel's conversation (its session ended).
    func forget(_ channel: String) {
        lock.withLock {
            byChannel.removeValue(forKey: channel)
            order.removeAll { $0 == channel }
        }
    }

    var count: Int { lock.withLock { byChannel.count } }
}

/// Pipeline requests at once: `limit` run, `queue` more wait their turn, the rest are refused.
actor Admission {
    let limit: Int
    let queue: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(limit: Int, queue: Int) {
        self.limit = max(1, limit)
        self.queue = max(0, queue)
    }

    /// Takes a turn, waiting for one when all are taken; false when the queue is full too.
    func enter() async -> Bool {
        if running < limit {
            running += 1
            return true
        }
        guard waiting.count < queue else { return false }
        // `leave` hands its turn straight to the first waiter.
        await withCheckedContinuation { waiting.append($0) }
        return true
    }

    func leave() {
        if waiting.isEmpty {
            running -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
