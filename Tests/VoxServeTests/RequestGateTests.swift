import Foundation
import Hummingbird
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Synchronization
import Testing

@testable import VoxServe

/// The gate alone, on an `EmbeddedChannel`: request parts in; what it passes on, what it answers
/// itself, the places it takes and gives back, and its deadlines on the channel's own clock.
@Suite struct RequestGateTests {
    static let path = "/api/agora/process-audio"

    /// The refusals a gate counted: route name and status.
    final class Refusals: Sendable {
        private let names = Mutex<[String]>([])
        func add(_ name: String, _ status: Int) { names.withLock { $0.append("\(name) \(status)") } }
        var all: [String] { names.withLock { $0 } }
    }

    /// A connection whose gate admits to `admission` for one route, `path`; requests to it reach
    /// admission when `reaches` says so.
    func connection(
        _ admission: Admission, maxBody: Int = 1000, budget: BodyBudget = BodyBudget(limit: 1 << 20),
        reaches: @escaping @Sendable (HTTPFields) -> Bool = { _ in true }
    ) throws -> (EmbeddedChannel, Refusals) {
        let refusals = Refusals()
        let route = RequestGate.Route(
            name: "/process-audio", refusal: ByteBuffer(string: #"{"success":false}"#), reachesAdmission: reaches)
        var rules = RequestGate.Rules(admission: admission, routes: [Self.path: route], retryAfter: 7) {
            refusals.add($0, $1)
            _ = $2
        }
        rules.maxBodyBytes = maxBody
        rules.budget = budget
        rules.idleTimeout = TimeAmount.seconds(15)
        rules.headerTimeout = TimeAmount.seconds(10)
        rules.bodyTimeout = TimeAmount.seconds(30)
        rules.answers = { $0 == "/healthz" ? ("application/json", ByteBuffer(string: "ok")) : nil }
        let channel = EmbeddedChannel(handler: RequestGate(rules))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 8000)).wait()
        return (channel, refusals)
    }

    /// An admission whose every place is taken.
    func full() -> Admission {
        let admission = Admission(concurrency: 1, queue: 0)
        _ = admission.enter()
        return admission
    }

    func request(
        _ method: HTTPRequest.Method = .post, _ path: String = Self.path, _ fields: HTTPFields = [:]
    ) -> HTTPRequestPart {
        .head(HTTPRequest(method: method, scheme: nil, authority: "localhost", path: path, headerFields: fields))
    }

    func body(_ text: String) -> HTTPRequestPart { .body(ByteBuffer(string: text)) }

    func passedOn(_ channel: EmbeddedChannel) throws -> [HTTPRequestPart] {
        var parts: [HTTPRequestPart] = []
        while let part = try channel.readInbound(as: HTTPRequestPart.self) { parts.append(part) }
        return parts
    }

    func answered(_ channel: EmbeddedChannel) throws -> [HTTPResponsePart] {
        var parts: [HTTPResponsePart] = []
        while let part = try channel.readOutbound(as: HTTPResponsePart.self) { parts.append(part) }
        return parts
    }

    func status(_ parts: [HTTPResponsePart]) -> HTTPResponse.Status? {
        if case .head(let head) = parts.first { return head.status }
        return nil
    }

    @Test func aPipelineRequestIsHeldUntilItsBodyEndsAndOnlyThenTakesAPlace() throws {
        let admission = Admission(concurrency: 1, queue: 0)
        let (channel, refusals) = try connection(admission)
        try channel.writeInbound(request(.post, Self.path + "?lang=de"))
        try channel.writeInbound(body(#"{"audio": "#))
        // A slow upload: nothing passed on, no place held.
        #expect(try passedOn(channel).isEmpty)
        #expect(admission.held == 0)
        try channel.writeInbound(body(#""UklGR"}"#))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(
            try passedOn(channel) == [
                request(.post, Self.path + "?lang=de"), body(#"{"audio": "#), body(#""UklGR"}"#), .end(nil),
            ])
        #expect(admission.held == 1)
        let id = ObjectIdentifier(channel)
        #expect(admission.claim(arrivedOn: id), "its handler takes the place over")
        #expect(!admission.claim(arrivedOn: id), "once")
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        #expect(admission.held == 1)
        admission.leave()
        #expect(admission.held == 0)
        #expect(refusals.all.isEmpty)
    }

    @Test func aFullServerAnswers503AsTheBodyEndsAndTheConnectionGoesOn() throws {
        let admission = full()
        let (channel, refusals) = try connection(admission)
        try channel.writeInbound(request())
        try channel.writeInbound(body(#"{"audio": "UklGR"}"#))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        let answer = try answered(channel)
        #expect(answer.count == 3, "\(answer)")
        guard case .head(let head) = answer.first else {
            Issue.record("no answer: \(answer)")
            return
        }
        #expect(head.status == .serviceUnavailable)
        #expect(head.headerFields[.retryAfter] == "7")
        #expect(head.headerFields[.contentLength] == "17")
        #expect(answer.dropFirst().first == .body(ByteBuffer(string: #"{"success":false}"#)))
        #expect(refusals.all == ["/process-audio 503"])
        #expect(try passedOn(channel).isEmpty)
        // The next request on the connection is read as usual.
        try channel.writeInbound(request(.get, "/api/agora/status"))
        #expect(try passedOn(channel) == [request(.get, "/api/agora/status")])
        #expect(admission.held == 1, "a refused request takes no place")
    }

    @Test func aBodyOverTheLimitIsRefusedFromItsContentLengthBeforeItIsRead() throws {
        let admission = Admission(concurrency: 1, queue: 0)
        let (channel, refusals) = try connection(admission, maxBody: 1000)
        try channel.writeInbound(request(.post, Self.path, [.contentLength: "1001"]))
        let answer = try answered(channel)
        #expect(status(answer) == .contentTooLarge)
        #expect(try passedOn(channel).isEmpty)
        #expect(refusals.all == ["/process-audio 413"])
    }

    @Test func aBodyThatGrowsPastTheLimitIsRefusedAsItDoes() throws {
        for path in [Self.path, "/api/agora/join-with-bot"] {
            let (channel, _) = try connection(Admission(concurrency: 1, queue: 0), maxBody: 10)
            try channel.writeInbound(request(.post, path))
            try channel.writeInbound(body("0123456789"))
            #expect(try answered(channel).isEmpty, "\(path)")
            try channel.writeInbound(body("!"))
            #expect(status(try answered(channel)) == .contentTooLarge, "\(path)")
        }
    }

    @Test func heldBodiesShareOneBudgetAcrossConnections() throws {
        let budget = BodyBudget(limit: 15)
        let admission = Admission(concurrency: 4, queue: 0)
        let (first, _) = try connection(admission, budget: budget)
        let (second, refusals) = try connection(admission, budget: budget)
        try first.writeInbound(request())
        try first.writeInbound(body("0123456789"))
        try second.writeInbound(request())
        try second.writeInbound(body("0123456789"))
        #expect(status(try answered(second)) == .serviceUnavailable)
        #expect(refusals.all == ["/process-audio 503"])
        #expect(budget.inUse == 10)
        _ = try first.finish()
        #expect(budget.inUse == 0, "a connection that ends gives its held bytes back")
    }

    @Test func healthzIsAnsweredHereWithoutReachingAHandler() throws {
        let (channel, _) = try connection(full())
        try channel.writeInbound(request(.get, "/healthz"))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(status(try answered(channel)) == .ok)
        #expect(try passedOn(channel).isEmpty)
    }

    @Test func aHalfSentBodyGets408AtItsDeadlineAndTheConnectionCloses() throws {
        let (channel, refusals) = try connection(Admission(concurrency: 1, queue: 0))
        try channel.writeInbound(request())
        try channel.writeInbound(body("{"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(29))
        #expect(try answered(channel).isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(status(try answered(channel)) == .requestTimeout)
        #expect(!channel.isActive)
        #expect(refusals.all == ["/process-audio 408"])
    }

    @Test func anIdleConnectionClosesAtTheIdleTimeoutAndATrickledHeadAtTheHeaderDeadline() throws {
        let (idle, _) = try connection(Admission(concurrency: 1, queue: 0))
        idle.embeddedEventLoop.advanceTime(by: .seconds(14))
        #expect(idle.isActive)
        idle.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!idle.isActive)

        let (slow, _) = try connection(Admission(concurrency: 1, queue: 0))
        // Bytes of a head come (no part yet) every second: the head's deadline does not move.
        for _ in 0..<9 {
            slow.pipeline.fireChannelReadComplete()
            slow.embeddedEventLoop.advanceTime(by: .seconds(1))
        }
        #expect(slow.isActive)
        slow.pipeline.fireChannelReadComplete()
        slow.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!slow.isActive)
    }

    @Test func aConnectionWaitingForItsAnswerHasNoDeadlineAndGetsTheIdleOneAfter() throws {
        let (channel, _) = try connection(Admission(concurrency: 1, queue: 0))
        try channel.writeInbound(request(.get, "/api/agora/status"))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        channel.embeddedEventLoop.advanceTime(by: .seconds(600))
        #expect(channel.isActive, "a long turn is not the client's slowness")
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        channel.embeddedEventLoop.advanceTime(by: .seconds(15))
        #expect(!channel.isActive)
    }

    @Test func quiescingClosesAConnectionReadingARequestAtOnce() throws {
        let (channel, _) = try connection(Admission(concurrency: 1, queue: 0))
        try channel.writeInbound(request())
        try channel.writeInbound(body("{"))
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(!channel.isActive)
    }

    @Test func aPlaceNoHandlerClaimedIsGivenBackWhenTheConnectionEnds() throws {
        let admission = Admission(concurrency: 1, queue: 0)
        let (channel, _) = try connection(admission)
        try channel.writeInbound(request())
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(admission.held == 1)
        _ = try channel.finish()
        #expect(admission.held == 0)
        #expect(!admission.claim(arrivedOn: ObjectIdentifier(channel)), "a handler that comes late enters itself")
    }

    @Test func aRequestBehindAnUnansweredOneIsLeftToItsHandler() throws {
        let admission = full()
        let (channel, refusals) = try connection(admission)
        // A pipelined client: an answer written now would overtake the earlier request's.
        try channel.writeInbound(request(.get, "/api/agora/status"))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        try channel.writeInbound(request())
        #expect(try answered(channel).isEmpty)
        #expect(try passedOn(channel) == [request(.get, "/api/agora/status"), .end(nil), request()])
        #expect(refusals.all.isEmpty)
    }

    @Test func otherRoutesAndRequestsThatDoNotReachAdmissionPassWithoutAPlace() throws {
        let admission = Admission(concurrency: 1, queue: 0)
        let (channel, _) = try connection(admission) { $0[.authorization] != nil }
        for part in [request(.get), request(.post, "/api/agora/join-with-bot"), request(.post, "/healthz"), request()] {
            try channel.writeInbound(part)
            #expect(try passedOn(channel) == [part])
            #expect(admission.held == 0, "\(part)")
            try channel.writeInbound(HTTPRequestPart.end(nil))
            _ = try passedOn(channel)
            try channel.writeOutbound(HTTPResponsePart.end(nil))
        }
    }
}
