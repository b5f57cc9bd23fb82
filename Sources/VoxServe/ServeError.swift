import VoxCore

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
