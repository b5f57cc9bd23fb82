import Foundation
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
    /// Pipeline requests run at once.
    public var concurrency = max(1, ProcessInfo.processInfo.activeProcessorCount)
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
    /// Channels whose conversations are remembered at once; the least recently used goes first.
    public var maxConversations = 1000

    public init() {}

    /// The prefix as routes use it: leading slash, no trailing one; "" for the root.
    var routePrefix: String {
        let trimmed = prefix.split(separator: "/").joined(separator: "/")
        return trimmed.isEmpty ? "" : "/" + trimmed
    }
}
