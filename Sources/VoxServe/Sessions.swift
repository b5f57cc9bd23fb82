import Foundation
import Synchronization

/// A learner's session: whose it is is decided by the secret its cookie carries and nothing else
/// (no channel named in a body, no "last joined" session). `join-with-bot` starts a named one; a
/// turn that brings no valid cookie gets an anonymous one of its own (unless the server runs in
/// single-learner mode), so it can never reach another device's conversation.
struct LearnerSession: Sendable, Equatable {
    /// The secret its cookie carries (set when the table takes it).
    var id = ""
    /// The Agora channel it talks on (`tutor-<userId>-<epoch ms>`; `anonymous-…` for one no join
    /// started).
    var channel: String
    var startedAt: Date
    /// Started by a turn without a cookie, not by a join: it expires once idle.
    var anonymous: Bool
    /// The key its join brought (used with `allowClientKeys` only); forgotten with the session.
    var clientKey: String?
    /// When it was last used, in the table's clock (seconds).
    var lastUsed: Double
    /// Its requests being answered now: a session with one is never evicted.
    var inFlight = 0
}

/// The sessions by id: a pure state machine over a clock the caller passes in (seconds, from any
/// monotonic origin), so a test drives it step by step.
///
/// At most `limit` sessions. A session is idle once it has no request in flight and has not been
/// used for `idleAfter` seconds. Idle anonymous sessions expire; when the table is full, a new
/// session takes the place of the least recently used idle one (anonymous first) — never of an
/// active one: with every session active, a new one is refused (`nil`), so a flood of joins
/// evicts no learner who is talking.
struct SessionTable: Sendable {
    private(set) var byID: [String: LearnerSession] = [:]
    let limit: Int
    let idleAfter: Double

    init(limit: Int, idleAfter: Double) {
        self.limit = max(1, limit)
        self.idleAfter = max(0, idleAfter)
    }

    var count: Int { byID.count }

    func isIdle(_ session: LearnerSession, now: Double) -> Bool {
        session.inFlight == 0 && now - session.lastUsed >= idleAfter
    }

    /// The live session `id` names, marked used now; nil for an unknown id and for an anonymous
    /// session that expired (it is removed, and returned in `removed`).
    mutating func use(_ id: String, now: Double) -> (session: LearnerSession?, removed: LearnerSession?) {
        guard var session = byID[id] else { return (nil, nil) }
        if session.anonymous && isIdle(session, now: now) {
            byID[id] = nil
            return (nil, session)
        }
        session.lastUsed = now
        byID[id] = session
        return (session, nil)
    }

    /// Adds a session under `id`, making room by removing expired anonymous sessions, then the
    /// least recently used idle ones; returns the sessions removed, or nil (nothing added) when the
    /// table is full of active sessions.
    mutating func start(_ session: LearnerSession, id: String, now: Double) -> [LearnerSession]? {
        var removed: [LearnerSession] = []
        for (key, old) in byID where old.anonymous && isIdle(old, now: now) {
            byID[key] = nil
            removed.append(old)
        }
        if byID.count >= limit {
            let idle = byID.filter { isIdle($0.value, now: now) }.sorted {
                ($0.value.anonymous ? 0 : 1, $0.value.lastUsed, $0.key) < (
                    $1.value.anonymous ? 0 : 1, $1.value.lastUsed, $1.key
                )
            }
            guard idle.count >= byID.count - limit + 1 else { return nil }
            for (key, old) in idle.prefix(byID.count - limit + 1) {
                byID[key] = nil
                removed.append(old)
            }
        }
        var added = session
        added.id = id
        added.lastUsed = now
        byID[id] = added
        return removed
    }

    /// Ends a session; returns it.
    mutating func end(_ id: String) -> LearnerSession? { byID.removeValue(forKey: id) }

    /// A request of the session starts (`by: 1`) or ends (`by: -1`).
    mutating func request(_ id: String, by change: Int, now: Double) {
        guard var session = byID[id] else { return }
        session.inFlight = max(0, session.inFlight + change)
        session.lastUsed = now
        byID[id] = session
    }
}

/// The server's sessions: the table behind a lock, ids made from 128 random bits, and the time
/// from a monotonic clock.
final class Sessions: Sendable {
    /// The session cookie's name.
    static let cookie = "voxpipe_session"

    private let table: Mutex<SessionTable>
    private let origin = ContinuousClock.now

    init(limit: Int, idleAfter: Double) { table = Mutex(SessionTable(limit: limit, idleAfter: idleAfter)) }

    var now: Double {
        let elapsed = ContinuousClock.now - origin
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// A new session id: 128 bits from the system's random source, as 32 hex digits.
    static func makeID() -> String {
        var random = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(random.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
    }

    /// Whether `id` has the shape of an id this server makes (anything else is not looked up).
    static func isWellFormed(_ id: String) -> Bool {
        id.utf8.count == 32 && id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    func use(_ id: String) -> (session: LearnerSession?, removed: LearnerSession?) {
        guard Self.isWellFormed(id) else { return (nil, nil) }
        let now = now
        return table.withLock { $0.use(id, now: now) }
    }

    /// Starts a session; its id and the sessions removed to make room, or nil when every place is
    /// held by an active session.
    func start(_ session: LearnerSession) -> (id: String, removed: [LearnerSession])? {
        let id = Self.makeID()
        let now = now
        return table.withLock { table in table.start(session, id: id, now: now).map { (id, $0) } }
    }

    func end(_ id: String) -> LearnerSession? { table.withLock { $0.end(id) } }

    func request(_ id: String, by change: Int) {
        let now = now
        table.withLock { $0.request(id, by: change, now: now) }
    }

    var count: Int { table.withLock { $0.count } }
}

/// How often one client (by address) may start a session: a token bucket per address, `burst`
/// at once and `perMinute` more a minute, for at most `clients` addresses (the least recently seen
/// is forgotten first). Pure: the caller passes the time.
struct JoinRate: Sendable {
    private var buckets: [String: (tokens: Double, at: Double)] = [:]
    let perMinute: Double
    let burst: Double
    let clients: Int

    init(perMinute: Double, burst: Int, clients: Int = 10_000) {
        self.perMinute = max(0, perMinute)
        self.burst = Double(max(1, burst))
        self.clients = max(1, clients)
    }

    /// Takes a token for `client`: nil when allowed, else the seconds until one is free.
    mutating func take(_ client: String, now: Double) -> Double? {
        var bucket = buckets[client] ?? (burst, now)
        bucket.tokens = min(burst, bucket.tokens + (now - bucket.at) * perMinute / 60)
        bucket.at = now
        defer {
            buckets[client] = bucket
            if buckets.count > clients, let oldest = buckets.min(by: { $0.value.at < $1.value.at })?.key {
                buckets[oldest] = nil
            }
        }
        guard bucket.tokens >= 1 else {
            return perMinute > 0 ? (1 - bucket.tokens) * 60 / perMinute : .infinity
        }
        bucket.tokens -= 1
        return nil
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
