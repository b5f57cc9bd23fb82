import Foundation
import VoxCore
import VoxWrite

/// How `voxpipe serve` listens and what it allows.
public struct ServeSettings: Sendable {
    public var host = "127.0.0.1"
    /// 0 picks a free port (the one taken is reported when listening).
    public var port = 8000
    /// Where the tutor API's routes live (`/api/agora/process-audio`); `/healthz` and `/metrics`
    /// stay at the root.
    public var prefix = "/api/agora"
    /// The largest request body; more is refused with 413.
    public var maxBodyBytes = 16 * 1024 * 1024
    /// Seconds a pipeline request may take (queueing included) before it is answered with 504.
    public var timeout: Double = 60
    /// Pipeline requests run at once: the cores this process may use (its affinity, capped by its
    /// cgroup's CPU quota; `CPUBudget`), not every processor of a host it shares.
    public var concurrency = CPUReader().budget().cores
    /// Pipeline requests that may wait for a turn; beyond them, 503 with Retry-After.
    public var queue = 32
    /// Seconds a client told 503 is asked to wait.
    public var retryAfter = 1
    /// The spoken reply's format (mp3: the client saves `response.mp3`).
    public var audio = AudioEncoding(format: .mp3)
    /// The Agora project `join-with-bot` answers with: app id, and tokens when a certificate is given.
    public var agora = AgoraSettings()
    /// Accept an API key in a request body (for that request's HTTP providers); ignored otherwise.
    public var allowClientKeys = false
    /// Keys a client of the OpenAI routes (`/v1/…`) must send as `Authorization: Bearer <key>`;
    /// empty: those routes are open (as the tutor routes always are).
    public var apiKeys: [String] = []
    /// Answer a clip with no speech with 422 (`no_speech`) instead of an empty turn.
    public var noSpeechIsError = false
    /// The longest clip taken as one turn.
    public var maxClipSeconds: Double = 300
    /// Sessions (and their conversations) kept at once. When every place is taken, a new session
    /// replaces the least recently used idle one; with none idle it is refused (503).
    public var maxConversations = 1000
    /// Seconds without a request after which a session is idle: it may then make room for a new
    /// one, and an anonymous session (a turn's without a cookie) expires.
    public var sessionIdleSeconds: Double = 300
    /// Sessions one client address may start a minute (`join-with-bot`), after a first `joinBurst`.
    public var joinsPerMinute: Double = 10
    public var joinBurst = 10
    /// Turns without a session cookie talk in one shared session (the last joined channel, or the
    /// body's `channel`), as for a kiosk with one learner; off, each gets an anonymous session.
    public var singleLearner = false
    /// Seconds a connection may stay open without a request (between requests, or before the first).
    public var idleTimeout: Double = 15
    /// Seconds from a request's first byte to the end of its head.
    public var headerTimeout: Double = 10
    /// Seconds from a request's head to the end of its body.
    public var bodyTimeout: Double = 30
    /// Seconds SIGTERM/SIGINT give running turns to finish before they are cancelled.
    public var shutdownGrace: Double = 10
    /// Live sessions (`/v1/realtime` WebSockets) open at once; one more is refused with an `error`
    /// event and a close.
    public var maxLiveSessions = 8
    /// Seconds a live session may go without a client event before it is closed.
    public var liveIdleSeconds: Double = 60

    public init() {}

    /// The prefix as routes use it: leading slash, no trailing one; "" for the root.
    var routePrefix: String {
        let trimmed = prefix.split(separator: "/").joined(separator: "/")
        return trimmed.isEmpty ? "" : "/" + trimmed
    }
}
