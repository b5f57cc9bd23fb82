import Hummingbird
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Every request passes here first, on its connection's event loop, after Hummingbird's HTTP codec
/// and before its async channel. The gate bounds each request in time and memory before anything
/// else sees it, and answers what must never wait for a busy server:
///
/// - **Deadlines.** A connection with no request for `idleTimeout` is closed; a request head must
///   be complete `headerTimeout` after its first byte, its body `bodyTimeout` after its head (408
///   and close, or just close when its handler already has it). Deadlines count from the event,
///   not from the last byte, so a client that trickles a byte at a time gains nothing.
/// - **Sizes.** A body over `maxBodyBytes` is refused with 413 from its Content-Length, before it
///   is read, or as it passes the limit; the connection is closed (its rest is not read).
/// - **Admission after the body.** A pipeline request's head and body are held here until the body
///   has fully arrived (within a server-wide byte budget); only then is it admitted (takes a
///   place) and passed on, or refused with 503 and Retry-After here. A slow upload holds no place.
/// - **Health.** `GET /healthz` and `/metrics` are answered here, whatever else is queued.
/// - **Shutdown.** When the server quiesces, a connection that is reading a request (a half-sent
///   body) or idle is closed at once; one whose request is being answered closes after its answer.
///
/// A request with an earlier one unanswered on its connection (pipelining), or that waits for a
/// 100 Continue, is passed on as it comes: its handler enters admission itself.
final class RequestGate: ChannelDuplexHandler, RemovableChannelHandler {
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
        var maxBodyBytes = 16 << 20
        var idleTimeout: TimeAmount = .seconds(15)
        var headerTimeout: TimeAmount = .seconds(10)
        var bodyTimeout: TimeAmount = .seconds(30)
        /// Bytes of held bodies all connections may hold at once.
        var budget = BodyBudget(limit: 64 << 20)
        /// Answers a GET the gate answers itself (`/healthz`, `/metrics`): content type and body.
        var answers: @Sendable (String) -> (type: String, body: ByteBuffer)? = { _ in nil }
        /// Counts and logs a refusal made here: the route's name, the status, and the time it took.
        let refused: @Sendable (String, Int, Duration) -> Void
    }

    private enum Reading {
        /// Between requests.
        case idle
        /// Bytes of a head have come.
        case head
        /// A pipeline request held until its body ends.
        case holding(Route, [HTTPRequestPart], bytes: Int)
        /// A request passed on as it comes.
        case passing(bytes: Int)
        /// A refused request whose rest is dropped.
        case discarding
    }

    private let rules: Rules
    private var reading = Reading.idle
    /// Requests passed on whose answers have not ended yet.
    private var unanswered = 0
    /// The request being answered took its place here.
    private var tookPlace = false
    /// Bytes this connection holds of the budget.
    private var held = 0
    private var deadline: Scheduled<Void>?
    /// Bytes of the next head have come (its deadline runs).
    private var headStarted = false
    private var quiescing = false

    init(_ rules: Rules) { self.rules = rules }

    // MARK: inbound

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Bytes came that made no head yet: the head's deadline runs from here.
        if case .idle = reading, unanswered == 0, deadline != nil, context.channel.isActive, !headStarted {
            headStarted = true
            schedule(context, after: rules.headerTimeout)
        }
        context.fireChannelReadComplete()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let arrived = ContinuousClock.now
        let part = unwrapInboundIn(data)
        switch (reading, part) {
        case (.discarding, .end):
            reading = .idle
            arm(context)
        case (.discarding, _):
            break
        case (_, .head(let head)):
            headStarted = false
            cancelDeadline()
            if let length = head.headerFields[.contentLength].flatMap(Int.init), length > rules.maxBodyBytes {
                refuse(context, status: .contentTooLarge, body: tooLarge, close: true)
                rules.refused(rules.routes[path(head)]?.name ?? path(head), 413, ContinuousClock.now - arrived)
                return
            }
            schedule(context, after: rules.bodyTimeout)
            if unanswered == 0, head.method == .get, let answer = rules.answers(path(head)) {
                reading = .discarding
                answerHere(context, type: answer.type, body: answer.body)
                return
            }
            if unanswered == 0, let route = route(of: head), head.headerFields[.expect] == nil {
                reading = .holding(route, [part], bytes: 0)
                return
            }
            reading = .passing(bytes: 0)
            unanswered += 1
            context.fireChannelRead(data)
        case (.holding(let route, var parts, let bytes), .body(let buffer)):
            let total = bytes + buffer.readableBytes
            guard total <= rules.maxBodyBytes else { return refuseTooLarge(context, route.name, arrived) }
            guard rules.budget.take(buffer.readableBytes) else {
                refuse(context, status: .serviceUnavailable, body: route.refusal, close: true)
                rules.refused(route.name, 503, ContinuousClock.now - arrived)
                return
            }
            held += buffer.readableBytes
            parts.append(part)
            reading = .holding(route, parts, bytes: total)
        case (.holding(let route, let parts, _), .end):
            cancelDeadline()
            giveBackHeld()
            if rules.admission.enter(arrivingOn: ObjectIdentifier(context.channel)) {
                tookPlace = true
                reading = .idle
                unanswered += 1
                for held in parts { context.fireChannelRead(wrapInboundOut(held)) }
                context.fireChannelRead(data)
            } else {
                reading = .idle
                refuse(context, status: .serviceUnavailable, body: route.refusal, close: false)
                rules.refused(route.name, 503, ContinuousClock.now - arrived)
                arm(context)
            }
        case (.passing(let bytes), .body(let buffer)):
            let total = bytes + buffer.readableBytes
            guard total <= rules.maxBodyBytes else { return refuseTooLarge(context, "other", arrived) }
            reading = .passing(bytes: total)
            context.fireChannelRead(data)
        case (.passing, .end):
            cancelDeadline()
            reading = .idle
            context.fireChannelRead(data)
        case (.idle, _), (.head, _), (.holding, .head), (.passing, .head):
            // Body parts without a head: the codec never gives them; passed on as they came.
            context.fireChannelRead(data)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            quiescing = true
            // Only a connection whose request is being answered stays, to end after its answer
            // (Hummingbird's own handler sees to that); one reading a request (a half-sent body) or
            // idle ends now.
            guard case .idle = reading, unanswered > 0 else {
                context.close(promise: nil)
                return
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelDeadline()
        giveBackHeld()
        giveBackPlace(context)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelDeadline()
        giveBackHeld()
        giveBackPlace(context)
    }

    // MARK: outbound

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            unanswered = max(0, unanswered - 1)
            giveBackPlace(context)
            context.write(data, promise: promise)
            if unanswered == 0, case .idle = reading {
                if quiescing {
                    context.close(promise: nil)
                } else {
                    arm(context)
                }
            }
            return
        }
        context.write(data, promise: promise)
    }

    // MARK: deadlines

    /// Starts the idle deadline (no request on the connection).
    private func arm(_ context: ChannelHandlerContext) {
        headStarted = false
        schedule(context, after: rules.idleTimeout)
    }

    private func schedule(_ context: ChannelHandlerContext, after delay: TimeAmount) {
        cancelDeadline()
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: delay) { [weak self] in
            guard let self else { return }
            self.deadline = nil
            self.expired(channel)
        }
    }

    private func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }

    /// A deadline passed: a held request gets 408 (nothing of it was passed on); anything else
    /// just ends with the connection (a handler reading a body sees it end).
    private func expired(_ channel: any Channel) {
        if case .holding(let route, _, _) = reading {
            var fields = HTTPFields()
            fields[.contentType] = "application/json"
            fields[.connection] = "close"
            let body = ByteBuffer(string: #"{"error":"the request did not arrive in time","success":false}"#)
            fields[.contentLength] = String(body.readableBytes)
            fields[.server] = TutorServer.serverName
            channel.write(
                HTTPResponsePart.head(HTTPResponse(status: .requestTimeout, headerFields: fields)), promise: nil)
            channel.write(HTTPResponsePart.body(body), promise: nil)
            channel.writeAndFlush(HTTPResponsePart.end(nil), promise: nil)
            rules.refused(route.name, 408, .zero)
        }
        reading = .discarding
        channel.close(promise: nil)
    }

    // MARK: answers

    private var tooLarge: ByteBuffer {
        ByteBuffer(
            string: #"{"error":"the body is larger than the \#(rules.maxBodyBytes)-byte limit","success":false}"#)
    }

    private func refuseTooLarge(_ context: ChannelHandlerContext, _ name: String, _ arrived: ContinuousClock.Instant) {
        giveBackHeld()
        refuse(context, status: .contentTooLarge, body: tooLarge, close: true)
        rules.refused(name, 413, ContinuousClock.now - arrived)
    }

    /// The path of a request head, without its query.
    private func path(_ head: HTTPRequest) -> String {
        let target = head.path ?? "/"
        return target.firstIndex(of: "?").map { String(target[..<$0]) } ?? target
    }

    /// The pipeline route a request goes to, when it goes to admission.
    private func route(of head: HTTPRequest) -> Route? {
        guard head.method == .post, let route = rules.routes[path(head)], route.reachesAdmission(head.headerFields)
        else { return nil }
        return route
    }

    private func answerHere(_ context: ChannelHandlerContext, type: String, body: ByteBuffer) {
        var fields = HTTPFields()
        fields[.contentType] = type
        fields[.contentLength] = String(body.readableBytes)
        fields[.server] = TutorServer.serverName
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .ok, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Answers here; with `close`, the connection ends after it (the rest of the request is not
    /// read). Without, the request had ended.
    private func refuse(
        _ context: ChannelHandlerContext, status: HTTPResponse.Status, body: ByteBuffer, close: Bool
    ) {
        cancelDeadline()
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.contentLength] = String(body.readableBytes)
        if status == .serviceUnavailable { fields[.retryAfter] = String(rules.retryAfter) }
        if close { fields[.connection] = "close" }
        fields[.server] = TutorServer.serverName
        context.write(wrapOutboundOut(.head(HTTPResponse(status: status, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        // Refused before its end came: the rest of it is dropped (a connection being closed reads no more).
        if close { reading = .discarding }
        if close {
            // Lingering close: the answer goes out, the sending side is shut, and what the client
            // still sends is read and dropped for a moment, so the answer is not lost to a reset.
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                channel.close(mode: .output).whenFailure { _ in channel.close(promise: nil) }
            }
            schedule(context, after: .seconds(2))
        } else {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }

    private func giveBackHeld() {
        if held > 0 { rules.budget.give(held) }
        held = 0
    }

    /// The place the request took here, unless its handler claimed it.
    private func giveBackPlace(_ context: ChannelHandlerContext) {
        guard tookPlace else { return }
        tookPlace = false
        rules.admission.release(arrivedOn: ObjectIdentifier(context.channel))
    }
}

/// The bytes of request bodies the gates of all connections hold at once, at most `limit`.
final class BodyBudget: Sendable {
    let limit: Int
    private let used = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    /// Takes `bytes`; false (nothing taken) when that would pass the limit.
    func take(_ bytes: Int) -> Bool {
        var current = used.load(ordering: .relaxed)
        while current + bytes <= limit {
            let (done, original) = used.compareExchange(
                expected: current, desired: current + bytes, ordering: .acquiringAndReleasing)
            if done { return true }
            current = original
        }
        return false
    }

    func give(_ bytes: Int) { used.subtract(bytes, ordering: .acquiringAndReleasing) }

    var inUse: Int { used.load(ordering: .relaxed) }
}
