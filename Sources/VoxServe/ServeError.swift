import VoxChunk
import VoxCore
import VoxDecode

/// Why the tutor could not be set up: a spec it cannot serve, bad settings. (What a client gets is
/// a `ServeError`.)
public typealias TutorError = ModuleError<TutorFailure>

public enum TutorFailure: FailureCode {
    /// The spec lacks the stages serve answers with (exit 65).
    case unservableSpec
    /// A serve setting (the Agora app id or certificate) is unreadable or badly shaped (exit 64).
    case badSettings
    /// The address cannot be listened on: the port is in use, or not ours to take (exit 69).
    case cannotListen

    public var category: VoxFailure {
        switch self {
        case .unservableSpec: .invalidSpec
        case .badSettings: .usage
        case .cannotListen: .unavailable
        }
    }
}

/// Why a request failed: an HTTP status, a short reason for the failures-by-reason metric, and
/// a one-line message the client gets as `{"success": false, "error": message}`.
public struct ServeError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The status the client gets (400, 413, 415, 422, 500, 503, 504…).
    public var status: Int
    /// A metric label: `bad_json`, `bad_base64`, `unknown_audio`, `too_large`, `timeout`, ….
    public var reason: String
    public var message: String
    /// The Retry-After of a 503 or 429, when it is not the server's usual one.
    public var retryAfter: Int?

    public init(_ status: Int, _ reason: String, _ message: String, retryAfter: Int? = nil) {
        self.status = status
        self.reason = reason
        self.message = oneLine(message)
        self.retryAfter = retryAfter
    }

    public var description: String { message }

    static func badRequest(_ reason: String, _ message: String) -> ServeError { ServeError(400, reason, message) }

    /// `error` as an answer: itself when it is one, else a 500 naming it.
    static func from(_ error: any Error) -> ServeError {
        (error as? ServeError) ?? ServeError(500, "internal", "internal error: \(describe(error))")
    }
}

extension ServeError {
    /// A stage's failure as the client gets it, by its category, whichever stage failed: the
    /// clip's or text's own fault (bad input) is 422, `undecodable_audio` when the decoder
    /// threw it and `too_long` when the chunker found more than it takes; a provider that cannot
    /// serve now (down, refusing, rate-limited, a model missing) is 503, to retry later; a
    /// provider's broken answer is 502 (the fault is upstream, and retrying may not help); anything
    /// else, and an error of no category, is ours: 500.
    init(_ failure: StageFailure, message: String) {
        switch failure.category {
        case .badInput:
            let reason =
                switch failure.error {
                case is DecodeError: "undecodable_audio"
                case let chunk as ChunkError where chunk.code == .tooLong: "too_long"
                default: "bad_input"
                }
            self.init(422, reason, message)
        case .unavailable: self.init(503, "unavailable", message)
        case .upstream: self.init(502, "upstream", message)
        default: self.init(500, "pipeline", message)
        }
    }
}
