import Foundation
import Hummingbird
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Synchronization
import Testing

@testable import VoxServe

/// The gate alone, on an `EmbeddedChannel`: request parts in; what it passes on, what it answers
/// itself, and the places it takes and gives back.
@Suite struct AdmissionGateTests {
    static let path = "/api/agora/process-audio"

    /// The routes' names of the refusals a gate counted.
    final class Refusals: Sendable {
        private let names = Mutex<[String]>([])
        func add(_ name: String) { names.withLock { $0.append(name) } }
        var all: [String] { names.withLock { $0 } }
    }

    /// A connection whose gate admits to `admission` for one route, `path`; requests to it reach
    /// admission when `reaches` says so.
    func connection(
        _ admission: Admission, reaches: @escaping @Sendable (HTTPFields) -> Bool = { _ in true }
    ) throws -> (EmbeddedChannel, Refusals) {
        let refusals = Refusals()
        let route = AdmissionGate.Route(
            name: "/process-audio", refusal: ByteBuffer(string: #"{"success":false}"#), reachesAdmission: reaches)
        let rules = AdmissionGate.Rules(admission: admission, routes: [Self.path: route], retryAfter: 7) { route, _ in
            refusals.add(route.name)
        }
        let channel = EmbeddedChannel(handler: AdmissionGate(rules))
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

    @Test func aFullServerAnswers503OnTheRequestsHeadAndDropsItsBody() throws {
        let admission = full()
        let (channel, refusals) = try connection(admission)
        try channel.writeInbound(request(.post, Self.path + "?lang=de"))

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
        #expect(answer.last == .end(nil))
        #expect(refusals.all == ["/process-audio"])

        // Its body is dropped as it comes; the connection goes on with the next request.
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: #"{"audio": "UklGR"#)))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(try passedOn(channel).isEmpty)
        try channel.writeInbound(request(.get, "/healthz"))
        #expect(try passedOn(channel) == [request(.get, "/healthz")])
        #expect(admission.held == 1, "a refused request takes no place")
    }

    @Test func anAdmittedRequestTakesItsPlaceOnArrivalForItsHandlerToClaim() throws {
        let admission = Admission(concurrency: 1, queue: 0)
        let (channel, refusals) = try connection(admission)
        try channel.writeInbound(request())
        #expect(try passedOn(channel) == [request()])
        #expect(admission.held == 1)
        #expect(!admission.enter(), "the request holds the only place from its arrival")

        let id = ObjectIdentifier(channel)
        #expect(admission.claim(arrivedOn: id), "its handler takes the place over")
        #expect(!admission.claim(arrivedOn: id), "once")
        // Its answer ends: the place is the handler's, given back when it ends.
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        #expect(admission.held == 1)
        admission.leave()
        #expect(admission.held == 0)
        #expect(refusals.all.isEmpty)
    }

    @Test func aPlaceNoHandlerClaimedIsGivenBackWhenTheAnswerEnds() throws {
        let admission = Admission(concurrency: 1, queue: 0)
        let (channel, _) = try connection(admission)
        try channel.writeInbound(request())
        #expect(admission.held == 1)
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .notFound)))
        #expect(admission.held == 1)
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        #expect(admission.held == 0)
        #expect(!admission.claim(arrivedOn: ObjectIdentifier(channel)))
    }

    @Test func aPlaceNoHandlerClaimedIsGivenBackWhenTheConnectionEnds() throws {
        let admission = Admission(concurrency: 1, queue: 0)
        let (channel, _) = try connection(admission)
        try channel.writeInbound(request())
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

    @Test func aRefusalThatCannotKeepTheConnectionIsLeftToItsHandler() throws {
        let admission = full()
        let (channel, refusals) = try connection(admission)
        for fields: HTTPFields in [[.connection: "close"], [.expect: "100-continue"]] {
            try channel.writeInbound(request(.post, Self.path, fields))
            #expect(try answered(channel).isEmpty, "\(fields)")
            #expect(try passedOn(channel) == [request(.post, Self.path, fields)])
            try channel.writeOutbound(HTTPResponsePart.end(nil))
            _ = try answered(channel)
        }
        #expect(refusals.all.isEmpty)
        #expect(admission.held == 1)
    }

    @Test func otherRoutesAndRequestsThatDoNotReachAdmissionPassWithoutAPlace() throws {
        let admission = Admission(concurrency: 1, queue: 0)
        let (channel, _) = try connection(admission) { $0[.authorization] != nil }
        for part in [request(.get), request(.post, "/api/agora/join-with-bot"), request(.post, "/healthz"), request()] {
            try channel.writeInbound(part)
            #expect(try passedOn(channel) == [part])
            #expect(admission.held == 0, "\(part)")
            try channel.writeOutbound(HTTPResponsePart.end(nil))
        }
    }
}
