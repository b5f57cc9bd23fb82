import Foundation
import Logging
import VoxCore

/// A clock for tests: `sleep` returns at once and moves the time on by what was asked, and every
/// wait is recorded, so retry and rate-limit tests check exact waits without real sleeping.
public final class ManualClock: VoxClock, @unchecked Sendable {
    private let lock = NSLock()
    private var time: Double
    private var recorded: [Double] = []

    public init(start: Double = 1000) { time = start }

    public var now: Double { lock.withLock { time } }

    /// Every wait asked for, in order.
    public var sleeps: [Double] { lock.withLock { recorded } }

    public func sleep(_ seconds: Double) async throws {
        try Task.checkCancellation()
        lock.withLock {
            recorded.append(seconds)
            time += max(0, seconds)
        }
    }

    /// Moves the time on without a wait (work that took time).
    public func advance(_ seconds: Double) { lock.withLock { time += seconds } }
}

/// An HTTP transport for tests: answers from a script, in order, and records each request with
/// the clock's time when it was sent. A request beyond the script is answered 500, and the test
/// sees it in `requests`.
public final class ScriptedTransport: HTTPTransport, @unchecked Sendable {
    /// One scripted answer.
    public enum Step: Sendable {
        case respond(HTTPResponse)
        case fail(any Error)
    }

    /// A request as it went out, and when.
    public struct Sent: Sendable {
        public var request: HTTPRequest
        public var time: Double
        /// A request header's value, by name in any case.
        public func header(_ name: String) -> String? {
            request.headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    private let lock = NSLock()
    private var script: [Step]
    private var sent: [Sent] = []
    private let clock: any VoxClock

    public init(_ script: [Step], clock: any VoxClock) {
        self.script = script
        self.clock = clock
    }

    /// Every request performed, in order.
    public var requests: [Sent] { lock.withLock { sent } }

    public func perform(_ request: HTTPRequest) async throws -> HTTPResponse {
        let step: Step = lock.withLock {
            sent.append(Sent(request: request, time: clock.now))
            return script.isEmpty
                ? .respond(Self.json(500, #"{"error":{"message":"beyond the script"}}"#)) : script.removeFirst()
        }
        switch step {
        case .respond(let response): return response
        case .fail(let error): throw error
        }
    }

    /// A response with a JSON body.
    public static func json(_ status: Int, _ body: String, headers: [String: String] = [:]) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: headers.merging(["content-type": "application/json"]) { a, _ in a },
            body: Data(body.utf8))
    }

    /// `200 {"object":"list","data":[]}`: what `GET /models` answers.
    public static let models = json(200, #"{"object":"list","data":[]}"#)
}

/// A stage context for tests: a logger, the root as the spec's folder, and optionally a scripted
/// transport and a manual clock.
public func testContext(transport: (any HTTPTransport)? = nil, clock: (any VoxClock)? = nil) -> StageContext {
    var context = StageContext(logger: Logger(label: "voxpipe.test"))
    context.httpTransport = transport
    if let clock { context.clock = clock }
    return context
}
