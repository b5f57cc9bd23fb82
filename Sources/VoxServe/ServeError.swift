import VoxCore

/// Why the tutor could not be set up or could not finish an answer: a spec it cannot serve, bad
/// settings, a missing rate converter. (What a client gets is a `ServeError`.)
public typealias TutorError = ModuleError<TutorFailure>

public enum TutorFailure: FailureCode {
    /// The spec lacks the stages serve answers with (exit 65).
    case unservableSpec
    /// A serve setting (the Agora app id or certificate) is unreadable or badly shaped (exit 64).
    case badSettings
    /// Speech must change rate and no rate converter was given (a bug, exit 70).
    case noRateConverter

    public var category: VoxFailure {
        switch self {
        case .unservableSpec: .invalidSpec
        case .badSettings: .usage
        case .noRateConverter: .internal
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

    public init(_ status: Int, _ reason: String, _ message: String) {
        self.status = status
        self.reason = reason
        self.message = oneLine(message)
    }

    public var description: String { message }

    static func badRequest(_ reason: String, _ message: String) -> ServeError { ServeError(400, reason, message) }
}
