import Hummingbird
import NIOCore
import NIOHTTPTypes

/// Admits or refuses a pipeline request on its connection's event loop, as its head arrives:
/// request head → passed on holding a place, or answered 503 with Retry-After here (its body read
/// and dropped as it comes, the connection kept). A refusal never waits for a thread of Swift's
/// cooperative pool, which turns keep busy (decoding, resampling, hashing): decided in the
/// request's handler it took as long as the pool's next free moment, up to a tenth of a second.
///
/// Sits in each connection's pipeline after Hummingbird's HTTP codec, before its async channel.
/// A place taken here is the request's: its handler claims it (`Admission.claim(arrivedOn:)`)
/// and gives it back when it ends; one no handler claimed is given back when the request's answer
/// ends or the connection does. Only a request with no earlier one unanswered on its connection
/// is decided here (an answer written here would overtake the earlier one's); the others, and a
/// refused request that asks to close the connection or to be told to continue, are left to their
/// handler, which enters and refuses as before.
final class AdmissionGate: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// A route whose requests run the pipeline, as the gate sees it.
    struct Route: Sendable {
        /// Its name in the metrics and the log.
        let name: String
        /// The body of its 503 (JSON, in the route's error shape).
        let refusal: ByteBuffer
        /// Whether a request reaches admission: an OpenAI route refuses one without a valid key
        /// (401) before it looks for a place.
        let reachesAdmission: @Sendable (HTTPFields) -> Bool
    }

    /// What the gate shares with its server.
    struct Rules: Sendable {
        let admission: Admission
        /// The pipeline routes by path (no query).
        let routes: [String: Route]
        /// The Retry-After of a refusal, in seconds.
        let retryAfter: Int
        /// Counts and logs a refusal made here: the route, and the time it took.
        let refused: @Sendable (Route, Duration) -> Void
    }

    private let rules: Rules
    /// Requests passed on whose answers have not ended yet.
    private var unanswered = 0
    /// The request being answered took its place here.
    private var tookPlace = false
    /// The request being read was refused here: the rest of it is dropped.
    private var discarding = false

    init(_ rules: Rules) { self.rules = rules }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let arrived = ContinuousClock.now
        switch unwrapInboundIn(data) {
        case .head(let head):
            if unanswered == 0, let route = route(of: head) {
                if rules.admission.enter(arrivingOn: ObjectIdentifier(context.channel)) {
                    tookPlace = true
                } else if Self.canAnswerAtOnce(head) {
                    refuse(route, context: context)
                    rules.refused(route, ContinuousClock.now - arrived)
                    discarding = true
                    return
                }
            }
            unanswered += 1
            context.fireChannelRead(data)
        case .body:
            if !discarding { context.fireChannelRead(data) }
        case .end:
            if discarding {
                discarding = false
            } else {
                context.fireChannelRead(data)
            }
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            unanswered = max(0, unanswered - 1)
            giveBackPlace(context)
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        giveBackPlace(context)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { giveBackPlace(context) }

    /// The pipeline route a request goes to, when it goes to admission.
    private func route(of head: HTTPRequest) -> Route? {
        guard head.method == .post, let target = head.path else { return nil }
        let path = target.firstIndex(of: "?").map { String(target[..<$0]) } ?? target
        guard let route = rules.routes[path], route.reachesAdmission(head.headerFields) else { return nil }
        return route
    }

    /// Whether a refusal can be answered here and the connection kept: not when the client asks
    /// to close it after this request, nor when it waits for a 100 Continue before its body.
    private static func canAnswerAtOnce(_ head: HTTPRequest) -> Bool {
        let connection = head.headerFields[.connection]?.lowercased() ?? ""
        return !connection.contains("close") && head.headerFields[.expect] == nil
    }

    private func refuse(_ route: Route, context: ChannelHandlerContext) {
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.contentLength] = String(route.refusal.readableBytes)
        fields[.retryAfter] = String(rules.retryAfter)
        fields[.server] = TutorServer.serverName
        let head = HTTPResponse(status: .serviceUnavailable, headerFields: fields)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(route.refusal)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// The place the request took here, unless its handler claimed it.
    private func giveBackPlace(_ context: ChannelHandlerContext) {
        guard tookPlace else { return }
        tookPlace = false
        rules.admission.release(arrivedOn: ObjectIdentifier(context.channel))
    }
}
