import Foundation
import Synchronization
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

/// One device's session, started by its `join-with-bot` and named by the cookie that join set:
/// its channel (so its conversation), when it started, and the key its join brought (used with
/// `allowClientKeys` only).
struct DeviceSession: Sendable {
    var channel: String
    var startedAt: Date
    var clientKey: String?
}

/// The devices' sessions by cookie id, at most `limit` (the oldest is ended first), so a
/// long-running server's memory stays flat.
actor DeviceSessions {
    /// The session cookie's name.
    static let cookie = "voxpipe_session"

    private var byID: [String: DeviceSession] = [:]
    private var order: [String] = []
    let limit: Int

    init(limit: Int) { self.limit = max(1, limit) }

    subscript(id: String) -> DeviceSession? { byID[id] }

    /// Starts a session under a new random id; returns the id and the channels of the sessions
    /// ended to make room.
    func start(_ session: DeviceSession) -> (id: String, evicted: [String]) {
        var random = SystemRandomNumberGenerator()
        let id = (0..<4).map { _ in String(format: "%08x", UInt32.random(in: .min ... .max, using: &random)) }.joined()
        byID[id] = session
        order.append(id)
        var evicted: [String] = []
        while order.count > limit, let oldest = order.first {
            order.removeFirst()
            if let gone = byID.removeValue(forKey: oldest) { evicted.append(gone.channel) }
        }
        return (id, evicted)
    }

    /// Ends a session; returns it.
    func end(_ id: String) -> DeviceSession? {
        order.removeAll { $0 == id }
        return byID.removeValue(forKey: id)
    }

    /// Whether a live session talks on `channel`.
    func holds(channel: String) -> Bool { byID.values.contains { $0.channel == channel } }

    /// Ends every session on `channel` (the shared session's `stop` ended it).
    func end(channel: String) {
        for (id, session) in byID where session.channel == channel { _ = end(id) }
    }
}

/// Turns of one conversation run one at a time, in the order they asked: `acquire` waits
/// behind the turns before it, `release` hands the conversation to the next.
actor TurnOrder {
    /// Conversations with a turn running, and the turns waiting behind it, first first.
    private var waiting: [String: [CheckedContinuation<Void, Never>]] = [:]

    func acquire(_ key: String) async {
        guard waiting[key] != nil else {
            waiting[key] = []
            return
        }
        await withCheckedContinuation { waiting[key, default: []].append($0) }
    }

    func release(_ key: String) {
        guard var queue = waiting[key] else { return }
        if queue.isEmpty {
            waiting[key] = nil
        } else {
            let next = queue.removeFirst()
            waiting[key] = queue
            next.resume()
        }
    }

    /// Turns waiting on `key` (not the one running).
    func waiters(_ key: String) -> Int { waiting[key]?.count ?? 0 }
}
