import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import ServiceLifecycle
import Synchronization
import VoxChunk
import VoxCore

/// `/v1/realtime`: OpenAI's Realtime API over WebSocket (`LiveSession`). `?intent=transcription`
/// opens a transcription session; without it, a conversation with the served spec's tutor (any
/// `model` a client names is accepted: the served spec decides what runs).
///
/// Bounds: `maxLiveSessions` open at once (one more gets an `error` event and a close, code
/// 1013), `liveIdleSeconds` without a client event closes a session, a session holds at most
/// `maxClipSeconds` of uncommitted audio, bearer keys as for `/v1` (a refused key gets an `error`
/// event and a close, 1008), and a client that goes away stops its turns. Turns go through the
/// server's turn scheduler like every request.
extension TutorServer {
    /// The path of the live sessions.
    static let livePath = "/v1/realtime"
    /// The largest frame and message a client may send (an append of ~20 s of 24-kHz audio).
    static let liveMaxMessage = 1 << 20

    /// The server's channels: HTTP/1.1 behind each connection's `RequestGate`, and the WebSocket
    /// upgrade of `/v1/realtime`. A connection's first head is bounded in time before either sees
    /// it (`FirstHeadDeadline`): the upgrade handler reads it before the gate is in place.
    func serverBuilder(rules: RequestGate.Rules) -> HTTPServerBuilder {
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(additionalChannelHandlers: [RequestGate(rules)]),
            ws: WebSocketServerConfiguration(
                maxFrameSize: Self.liveMaxMessage, autoPing: .enabled(timePeriod: .seconds(30))))
        return HTTPServerBuilder { responder in
            HeadGuardedChannel(
                inner: HTTP1WebSocketUpgradeChannel(responder: responder, configuration: configuration) {
                    head, _, _ in
                    self.upgrade(head)
                },
                idle: rules.idleTimeout, header: rules.headerTimeout)
        }
    }

    /// Whether a request becomes a live session: `GET /v1/realtime` with the WebSocket upgrade.
    func upgrade(_ head: HTTPRequest) -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>>
    {
        let target = head.path ?? ""
        let parts = target.split(separator: "?", maxSplits: 1)
        guard parts.first.map(String.init) == Self.livePath else { return .dontUpgrade }
        let query = parts.count > 1 ? parts[1].split(separator: "&") : []
        let intent = query.first { $0.hasPrefix("intent=") }.map { $0.dropFirst("intent=".count) }
        let kind: LiveSession.Kind = intent == "transcription" ? .transcription : .realtime
        let refused = unauthorized(authorization: head.headerFields[.authorization])
        return .upgrade([:]) { inbound, outbound, context in
            await self.live(kind: kind, refused: refused, inbound: inbound, outbound: outbound, logger: context.logger)
        }
    }

    /// What a live session gets from the server.
    var liveEnvironment: LiveSession.Environment {
        LiveSession.Environment(
            pipeline: pipeline, vadModel: vadModel, rateConversion: pipeline.rateConversion,
            maxBufferSeconds: settings.maxClipSeconds, answered: { self.metrics.liveResponse($0) },
            mayGuess: {
                let turns = self.scheduler.counts
                return LiveSession.mayGuess(
                    running: turns.running, waiting: turns.waiting, slots: self.settings.concurrency,
                    liveSessions: self.liveSessions.count, coresToLeave: CPUReader().pressure()?.coresToLeave ?? 0)
            }
        ) { session, work in
            try await self.runPipeline(upload: nil, order: "live-\(session)", call: OpenAICall(connection: nil), work)
        }
    }

    /// One live session, from its upgrade to its close.
    func live(
        kind: LiveSession.Kind, refused: ServeError?, inbound: WebSocketInboundStream,
        outbound: WebSocketOutboundWriter,
        logger: Logger
    ) async {
        let secrets = pipeline.secrets
        @Sendable func text(_ event: JSONValue) -> String {
            String(decoding: secrets.redact(event.canonicalData()), as: UTF8.self)
        }
        @Sendable func close(_ failure: ServeError, code: WebSocketErrorCode) async {
            try? await outbound.writeTextMessage(text(Self.errorEvent(failure, eventID: nil)))
            try? await outbound.close(code, reason: failure.reason)
        }
        if let refused { return await close(refused, code: .policyViolation) }
        guard liveSessions.enter() else {
            return await close(
                ServeError(
                    503, "session_limit_reached",
                    "every live session place (\(settings.maxLiveSessions)) is taken; try again shortly"),
                code: .unknown(1013))
        }
        defer {
            liveSessions.leave()
            // The last live session gone: what its turns used goes back to the system (off the
            // cooperative pool: malloc_trim holds the allocator's locks while it works).
            if liveSessions.count == 0 {
                let blocking = pipeline.source.context.blocking
                Task { try? await blocking.run { MemoryTrim.now() } }
            }
        }
        let (events, continuation) = AsyncStream<JSONValue>.makeStream()
        let session = LiveSession(kind: kind, environment: liveEnvironment) { continuation.yield($0) }
        let writer = Task {
            for await event in events { try? await outbound.writeTextMessage(text(event)) }
        }
        await session.start()
        let heard = Mutex(ContinuousClock.now)
        let idle = settings.liveIdleSeconds
        let watchdog = Task {
            while !Task.isCancelled {
                let deadline = heard.withLock { $0 } + .milliseconds(Int64(idle * 1000))
                guard ContinuousClock.now >= deadline else {
                    try? await Task.sleep(until: deadline)
                    continue
                }
                continuation.yield(
                    Self.errorEvent(
                        ServeError(
                            408, "session_idle_timeout",
                            "no client event for \(String(format: "%g", idle)) s: the session is closed")))
                continuation.finish()
                await writer.value
                try? await outbound.close(.goingAway, reason: "idle")
                return
            }
        }
        do {
            try await withGracefulShutdownHandler {
                for try await message in inbound.messages(maxSize: Self.liveMaxMessage) {
                    heard.withLock { $0 = .now }
                    switch message {
                    case .text(let text): await session.receive(text: text)
                    case .binary: await session.receiveBinary()
                    }
                }
            } onGracefulShutdown: {
                Task { try? await outbound.close(.goingAway, reason: "the server is shutting down") }
            }
        } catch {
            logger.debug("live session ended: \(describe(error))")
        }
        watchdog.cancel()
        await session.end()
        continuation.finish()
        await writer.value
    }
}

/// Live sessions open at once, up to a limit.
final class LiveSessionCount: Sendable {
    private let open = Mutex(0)
    let limit: Int

    init(limit: Int) { self.limit = limit }

    func enter() -> Bool {
        open.withLock { open in
            guard open < limit else { return false }
            open += 1
            return true
        }
    }

    func leave() { open.withLock { $0 -= 1 } }

    var count: Int { open.withLock { $0 } }
}

/// A server channel whose connections must finish their first request head in time: `idle` for
/// its first byte, then `header` for the rest (counted from the first byte, so trickling gains
/// nothing), before the channel `inner` sets up sees more than bytes. Later requests are the
/// `RequestGate`'s.
struct HeadGuardedChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner
    let idle: TimeAmount
    let header: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(FirstHeadDeadline(idle: idle, header: header))
        }.flatMap {
            inner.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async { await inner.handle(value: value, logger: logger) }
}

/// Closes a connection whose first request head has not ended (`\r\n\r\n`) in time; removes
/// itself once it has.
final class FirstHeadDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let idle: TimeAmount
    private let header: TimeAmount
    private var deadline: Scheduled<Void>?
    private var started = false
    /// The last bytes seen, for an end of head split across reads.
    private var tail: [UInt8] = []

    init(idle: TimeAmount, header: TimeAmount) {
        self.idle = idle
        self.header = header
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context, after: idle) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if deadline == nil { arm(context, after: idle) }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        if !started {
            started = true
            arm(context, after: header)
        }
        let bytes = tail + buffer.readableBytesView
        let ended =
            bytes.count >= 4 && (0...(bytes.count - 4)).contains { bytes[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) }
        tail = Array(bytes.suffix(3))
        context.fireChannelRead(data)
        if ended {
            deadline?.cancel()
            deadline = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The server is stopping: a connection that has sent nothing goes now.
        if event is ChannelShouldQuiesceEvent, !started {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    private func arm(_ context: ChannelHandlerContext, after amount: TimeAmount) {
        deadline?.cancel()
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: amount) { channel.close(promise: nil) }
    }
}
