import Foundation

/// What an HTTP provider exchanges, and the seam it goes through: the runner's transport is
/// libcurl (VoxHTTP), a test's is scripted. It lives here so that `StageContext` can carry it.
/// One HTTP exchange's request.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: String
    public var headers: [(String, String)]
    public var body: Data
    /// Limits the transport keeps to (the client sets them from the provider's settings).
    public var connectTimeout: Double = 10
    public var timeout: Double = 600
    /// A transfer slower than `lowSpeedBytes` a second for `lowSpeedSeconds` is cut (0: never).
    public var lowSpeedBytes = 0
    public var lowSpeedSeconds = 0

    public init(method: String, url: String, headers: [(String, String)] = [], body: Data = Data()) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// One HTTP exchange's response. Header names are lowercased.
public struct HTTPResponse: Sendable, Codable, Equatable {
    public var status: Int
    public var headers: [String: String]
    public var body: Data

    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Performs one exchange: gives the server's response (any status), or throws for a connection
/// that failed or timed out (`HTTPError` with `.connection` / `.timeout` in VoxHTTP's transport).
public protocol HTTPTransport: Sendable {
    func perform(_ request: HTTPRequest) async throws -> HTTPResponse
}

/// Time as voxpipe's waits see it: the system's, or a test's that moves on without sleeping.
public protocol VoxClock: Sendable {
    /// Seconds on a monotonic scale.
    var now: Double { get }
    /// Waits `seconds`.
    func sleep(_ seconds: Double) async throws
}

/// The machine's monotonic clock.
public struct SystemClock: VoxClock {
    public init() {}
    public var now: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
    public func sleep(_ seconds: Double) async throws {
        guard seconds > 0 else { return }
        try await Task.sleep(nanoseconds: UInt64(min(seconds, 86_400) * 1e9))
    }
}
