import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import UnixSignals
import VoxChunk
import VoxCore
import VoxDecode
import VoxRequest

/// `voxpipe serve`: the German tutor's REST API (the routes its mobile clients call) on
/// Hummingbird, answering every turn with one `TutorPipeline` loaded at start.
///
///   POST {prefix}/process-audio  {audio, mimeType}  → {success, transcription, reply, audio}
///   POST {prefix}/process-text   {text}             → {success, reply, audio}
///   POST {prefix}/join-with-bot  {userId, userName} → {success, appId, channel, token, message}
///   POST {prefix}/stop                              → {success, message, previousChannel}
///   GET  {prefix}/status                            → {success, isRunning, channel, startedAt}
///   GET  /healthz, GET /metrics
///
/// A session belongs to whoever holds its secret: `join-with-bot` starts one and sets its cookie
/// (`voxpipe_session`, 128 random bits, HttpOnly, SameSite=Lax); calls carrying it talk in that
/// session, and its `stop` ends only it. A turn without a valid cookie gets an anonymous session of
/// its own (and a cookie for it), so no client reaches another's conversation by leaving the
/// cookie out or making one up; `--single-learner` instead gives such turns the one shared session
/// (the last joined channel), for a kiosk with a single learner. Turns of one session run one at
/// a time, in order.
///
/// A clip with no speech is a turn with nothing said: `success: true`, empty transcription, reply
/// and audio (422 with `noSpeechIsError`).
///
/// Every failure is `{"success": false, "error": "…"}` with its status: 400 bad JSON, base64 or
/// fields, 408 a body that did not arrive in time, 413 too large a body, 415 audio of no known
/// format, 422 audio the pipeline cannot use, 429 too many joins from one address, 500 a pipeline
/// failure, 503 (with Retry-After) when every turn and queue place (or every session place) is
/// taken, 504 past the timeout.
public final class TutorServer: Sendable {
    public let settings: ServeSettings
    let pipeline: TutorPipeline
    let metrics = ServeMetrics()
    /// Pipeline requests at once: `concurrency` run, `queue` more wait their turn, the rest are
    /// refused as their body ends, unread by a handler.
    let admission: Admission
    /// The shared session of single-learner mode: turns without a session cookie talk on it.
    let shared = BotSession()
    /// The learners' sessions, by the secret their cookies carry.
    let sessions: Sessions
    /// Joins per client address.
    let joins: Mutex<JoinRate>
    /// Which admitted turns run: slots, order per session, withdrawals.
    let scheduler: TurnScheduler
    let translator = Translator()
    let conversations: Conversations
    /// The request bodies the connections' gates hold until they have arrived, all told.
    let bodyBudget: BodyBudget
    let logger: Logger
    /// Whether the ignored-client-key warning was given (it is given once).
    let ignoredKeyWarning = Once()
    /// The live sessions open (`/v1/realtime`).
    let liveSessions: LiveSessionCount
    /// The Silero model live sessions detect turns with; nil when it is not installed.
    let vadModel: URL?

    /// The routes' names in metrics, besides the prefix.
    static let routes = ["/process-audio", "/process-text", "/join-with-bot", "/stop", "/status"]
    /// The tutor routes that run the pipeline (admitted or refused on arrival), besides the prefix.
    static let pipelineRoutes = ["/process-audio", "/process-text"]
    /// What the server calls itself in its answers' Server header.
    static let serverName = "voxpipe"
    /// The channel of requests that name none while no session runs (single-learner mode).
    static let defaultChannel = "default"

    public init(pipeline: TutorPipeline, settings: ServeSettings, logger: Logger) {
        self.pipeline = pipeline
        self.settings = settings
        self.logger = logger
        // Idle again (for a second): the memory the turns used goes back to the system, on a thread
        // of its own (malloc_trim holds the allocator's locks while it works).
        let blocking = pipeline.source.context.blocking
        admission = Admission(concurrency: settings.concurrency, queue: settings.queue) {
            Task { try? await blocking.run { MemoryTrim.now() } }
        }
        conversations = Conversations(limit: settings.maxConversations)
        scheduler = TurnScheduler(concurrency: settings.concurrency, queueLimit: settings.queue)
        sessions = Sessions(limit: settings.maxConversations, idleAfter: settings.sessionIdleSeconds)
        joins = Mutex(JoinRate(perMinute: settings.joinsPerMinute, burst: settings.joinBurst))
        bodyBudget = BodyBudget(limit: max(64 << 20, 4 * settings.maxBodyBytes))
        liveSessions = LiveSessionCount(limit: settings.maxLiveSessions)
        let silero = SileroVAD.resolve("silero", baseDirectory: URL(fileURLWithPath: "/"))
        vadModel = silero.found ? silero.file : nil
    }

    /// How `run` ended.
    public enum Ending: Sendable, Equatable {
        /// Its task was cancelled.
        case cancelled
        /// SIGTERM or SIGINT (the number): it stopped taking connections, gave running turns the
        /// grace period, then cancelled what was left.
        case signal(Int32)
    }

    /// Listens until the task is cancelled or, with `signals`, SIGTERM/SIGINT arrive: then it stops
    /// taking connections, closes idle and half-sent ones at once, lets the turns in flight finish
    /// for `shutdownGrace` seconds and cancels the rest (a second signal cancels at once).
    /// `onListening` gets the port taken (the one asked for, or a free one for 0). A port that
    /// cannot be taken is a `TutorError(.cannotListen)`.
    @discardableResult
    public func run(
        handlingSignals signals: Bool = false, onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws -> Ending {
        for warning in startupWarnings { logger.warning("\(warning)") }
        let rules = gateRules
        let app = Application(
            router: makeRouter(),
            server: serverBuilder(rules: rules),
            configuration: ApplicationConfiguration(
                address: .hostname(settings.host, port: settings.port), serverName: Self.serverName),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? 0) },
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let received = FirstSignal()
        let grace = settings.shutdownGrace
        // Trapped before the server listens: a signal that comes as it starts is not the default death.
        let trapped = signals ? await UnixSignalsSequence(trapping: .sigterm, .sigint) : nil
        // The server runs in a task of its own, so that whatever stops it — a signal, or this task
        // being cancelled — stops it gracefully first: no new connections, idle and half-sent ones
        // closed, and the turns in flight given the grace period before they are cancelled. (Cancelled
        // outright, NIO drops connections that arrived but were not yet taken up, and traps.)
        let running = Task { try await group.run() }
        let stopping = Once()
        @Sendable func stop(graceful: Bool) {
            guard graceful else { return running.cancel() }
            guard stopping.claim() else { return }
            Task {
                await group.triggerGracefulShutdown()
                try await Task.sleep(for: .milliseconds(Int(grace * 1000)))
                running.cancel()
            }
        }
        let watcher = trapped.map { trapped in
            Task {
                for await signal in trapped {
                    // A second signal gives up on the turns at once.
                    stop(graceful: received.record(signal.rawValue))
                }
            }
        }
        defer { watcher?.cancel() }
        do {
            try await withTaskCancellationHandler {
                try await running.value
            } onCancel: {
                stop(graceful: true)
            }
        } catch is CancellationError where received.number != nil {
            // The grace period ran out, or a second signal came: the turns left were cancelled.
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw TutorError(
                .cannotListen,
                "cannot listen on \(settings.host):\(settings.port): the port is in use (another server?); "
                    + "choose another with --port")
        } catch let error as IOError {
            throw TutorError(.cannotListen, "cannot listen on \(settings.host):\(settings.port): \(error.description)")
        }
        if let signal = received.number { return .signal(signal) }
        return .cancelled
    }

    /// What each connection's gate knows: the limits, the pipeline routes and their refusals, the
    /// answers it gives itself, and how a refusal is counted (as the server counts one of its own).
    var gateRules: RequestGate.Rules {
        let busy = encodedBuffer(FailureAnswer(error: Self.overloaded.message))
        var routes: [String: RequestGate.Route] = [:]
        for name in Self.pipelineRoutes {
            routes[settings.routePrefix + name] = .init(name: name, refusal: busy) { _ in true }
        }
        for route in OpenAIRoute.allCases {
            routes[route.rawValue] = .init(
                name: route.rawValue, refusal: encodedBuffer(OpenAIFailure(Self.overloaded))
            ) {
                self.unauthorized(authorization: $0[.authorization]) == nil
            }
        }
        func amount(_ seconds: Double) -> TimeAmount { .milliseconds(Int64(max(0.001, seconds) * 1000)) }
        var rules = RequestGate.Rules(
            admission: admission, routes: routes, retryAfter: settings.retryAfter
        ) { name, status, elapsed in
            self.metrics.started()
            let failure: ServeError =
                switch status {
                case 503: Self.overloaded
                case 413: ServeError(413, "too_large", "the body is larger than the limit")
                default: ServeError(status, "request_timeout", "the request did not arrive in time")
                }
            self.record(name, status: status, failure: failure, elapsed: elapsed)
        }
        rules.maxBodyBytes = settings.maxBodyBytes
        rules.idleTimeout = amount(settings.idleTimeout)
        rules.headerTimeout = amount(settings.headerTimeout)
        rules.bodyTimeout = amount(settings.bodyTimeout)
        rules.budget = bodyBudget
        let health = ByteBuffer(string: Self.healthy)
        rules.answers = { path in
            switch path {
            case "/healthz": ("application/json", health)
            case "/metrics": ("text/plain; version=0.0.4", ByteBuffer(string: self.renderedMetrics))
            default: nil
            }
        }
        return rules
    }

    /// What the server says once at start: settings that a client will trip over (no app id, no
    /// certificate for tokens).
    public var startupWarnings: [String] { settings.agora.warnings }

    func makeRouter() -> Router<ServeRequestContext> {
        let router = Router(context: ServeRequestContext.self)
        router.add(middleware: JSONErrorMiddleware())
        // Answered by each connection's gate on the event loop; these serve pipelined requests.
        router.get("/healthz") { _, _ in self.encoded(200, Self.healthy) }
        router.get("/metrics") { _, _ in self.metricsResponse() }
        addOpenAIRoutes(to: router)
        let api = router.group(RouterPath(settings.routePrefix))
        api.post("/process-audio") { request, context in
            await self.answer("/process-audio", request, context, AudioTurnRequest.self, pipeline: true) {
                try await self.processAudio($0)
            }
        }
        api.post("/process-text") { request, context in
            await self.answer("/process-text", request, context, TextTurnRequest.self, pipeline: true) {
                try await self.processText($0)
            }
        }
        api.post("/join-with-bot") { request, context in
            await self.answer("/join-with-bot", request, context, JoinRequest.self) { try await self.join($0) }
        }
        api.post("/stop") { request, context in
            await self.answer("/stop", request, context, EmptyRequest.self, bodyRequired: false) {
                try await self.stop($0)
            }
        }
        api.get("/status") { request, context in
            await self.answer("/status", request, context, EmptyRequest.self, bodyRequired: false) {
                await self.status($0)
            }
        }
        return router
    }

    static let healthy = #"{"status":"ok","success":true}"#

    func metricsResponse() -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
            body: .init(byteBuffer: ByteBuffer(string: renderedMetrics)))
    }

    /// The request metrics, and the gauges of what runs now: turns running and waiting, live sessions.
    var renderedMetrics: String {
        let turns = scheduler.counts
        return metrics.render(
            turnsRunning: turns.running, turnsWaiting: turns.waiting, liveSessions: liveSessions.count)
    }

    // MARK: routes

    /// Ends the cookie's session (only it; in single-learner mode without one, the shared one);
    /// the cookie is cleared.
    func stop(_ call: Call<EmptyRequest>) async throws -> StopAnswer {
        var previous: String?
        if let session = call.session {
            if let ended = sessions.end(session.id) {
                removed([ended])
                if !ended.anonymous { previous = ended.channel }
                if settings.singleLearner, await shared.channel == ended.channel { _ = await shared.stop() }
            }
            call.setCookie = sessionCookie(nil)
        } else if settings.singleLearner {
            previous = await shared.stop()
            if let previous { conversations.forget(previous) }
        }
        return StopAnswer(
            message: previous == nil ? "The bot was not running" : "The bot left the channel",
            previousChannel: previous)
    }

    /// The cookie's session (in single-learner mode without one, the shared one's); nothing
    /// without a session.
    func status(_ call: Call<EmptyRequest>) async -> StatusAnswer {
        var (channel, started): (String?, Date?) = (nil, nil)
        if let session = call.session {
            if !session.anonymous { (channel, started) = (session.channel, session.startedAt) }
        } else if settings.singleLearner {
            (channel, started) = await (shared.channel, shared.startedAt)
        }
        return StatusAnswer(isRunning: channel != nil, channel: channel, startedAt: started.map(Self.iso8601))
    }

    func processAudio(_ call: Call<AudioTurnRequest>) async throws -> TurnAnswer {
        let audio = call.body.audio
        let head = [UInt8](audio.prefix(512))
        guard head.count >= FileSniffer.minimumBytes, let format = FileSniffer.format(of: head) else {
            let claimed = call.body.mimeType.map { " (mimeType said \($0))" } ?? ""
            throw ServeError(
                415, "unknown_audio",
                "audio: not a known audio format\(claimed); send WAV, FLAC, Ogg, MP3 or M4A")
        }
        let (upload, length) = try await pipeline.store(upload: audio, ext: Self.ext(format))
        defer { try? FileManager.default.removeItem(at: upload) }
        // A clip over --max-clip is refused from its header, before it is queued or decoded.
        try refuseLong(length)
        let turn = try await turnSession(call, channel: nil)
        defer { turn.end() }
        let conversation = conversations.conversation(for: turn.key)
        let answer = try await runPipeline(upload: upload, order: turn.key, call: call) {
            try await self.pipeline.answer(audioFile: upload, conversation: conversation, overrides: $0)
        }
        if answer.transcription.isEmpty {
            // The learner thinking is a turn with nothing said: nothing to answer, nothing remembered.
            if settings.noSpeechIsError {
                throw ServeError(422, "no_speech", "audio: no speech was recognised in the clip")
            }
            return TurnAnswer(transcription: "", reply: "", audio: "")
        }
        return TurnAnswer(transcription: answer.transcription, reply: answer.reply, audio: try await spoken(answer))
    }

    func processText(_ call: Call<TextTurnRequest>) async throws -> TurnAnswer {
        let text = call.body.text
        let turn = try await turnSession(call, channel: call.body.channel)
        defer { turn.end() }
        let conversation = conversations.conversation(for: turn.key)
        let answer = try await runPipeline(upload: nil, order: turn.key, call: call) {
            try await self.pipeline.answer(text: text, conversation: conversation, overrides: $0)
        }
        return TurnAnswer(reply: answer.reply, audio: try await spoken(answer))
    }

    /// Starts a session for the device (ending the one its cookie named) and sets its cookie; in
    /// single-learner mode the shared session moves to the new channel too.
    func join(_ call: Call<JoinRequest>) async throws -> JoinAnswer {
        if let wait = joins.withLock({ $0.take(call.client, now: sessions.now) }) {
            throw ServeError(
                429, "too_many_joins",
                "too many joins from this address; try again in \(Int(min(wait, 3600).rounded(.up))) s",
                retryAfter: Int(min(wait, 3600).rounded(.up)))
        }
        let user = call.body.userID
        if let session = call.session, let ended = sessions.end(session.id) { removed([ended]) }
        let now = Date()
        let channel = "tutor-\(user)-\(Int64((now.timeIntervalSince1970 * 1000).rounded(.down)))"
        let token: String?
        do {
            token = try settings.agora.token(channel: channel)
        } catch let error as AgoraTokenError {
            throw ServeError(500, "token", "could not make the Agora token: \(error.message)")
        }
        guard
            let (id, evicted) = sessions.start(
                LearnerSession(
                    channel: channel, startedAt: now, anonymous: false, clientKey: call.clientKey, lastUsed: 0))
        else { throw Self.sessionsFull }
        call.keyKept = true
        removed(evicted)
        if settings.singleLearner {
            let previous = await shared.join(channel: channel, now: now)
            if let previous { conversations.forget(previous) }
        }
        call.setCookie = sessionCookie(id)
        return JoinAnswer(
            appId: settings.agora.appID, channel: channel, token: token,
            message: "The tutor joined \(channel) for \(call.body.userName ?? user)")
    }

    // MARK: sessions

    /// The session a turn talks in, held (not evicted) until `end()`.
    struct TurnSession: Sendable {
        /// Its conversation's and turn order's key.
        var key: String
        var end: @Sendable () -> Void = {}
    }

    /// The cookie's session; without one, a new anonymous session (its cookie set on the answer),
    /// or in single-learner mode the shared session (the body's channel, else the last joined).
    func turnSession<Body>(_ call: Call<Body>, channel named: String?) async throws -> TurnSession {
        let session: LearnerSession
        if let found = call.session {
            session = found
        } else if settings.singleLearner {
            if let named, !named.isEmpty { return TurnSession(key: named) }
            return TurnSession(key: await shared.channel ?? Self.defaultChannel)
        } else {
            let channel = "anonymous-\(Sessions.makeID().prefix(12))"
            guard
                let (id, evicted) = sessions.start(
                    LearnerSession(
                        channel: channel, startedAt: Date(), anonymous: true, clientKey: nil, lastUsed: 0))
            else { throw Self.sessionsFull }
            removed(evicted)
            call.setCookie = sessionCookie(id)
            guard let started = sessions.use(id).session else { throw Self.sessionsFull }
            session = started
        }
        sessions.request(session.id, by: 1)
        let sessions = sessions
        return TurnSession(key: settings.singleLearner ? session.channel : session.id) {
            sessions.request(session.id, by: -1)
        }
    }

    /// Forgets what ended sessions held: their conversations and their keys.
    func removed(_ ended: [LearnerSession]) {
        for session in ended {
            conversations.forget(settings.singleLearner ? session.channel : session.id)
            if let key = session.clientKey { pipeline.secrets.unregister(key) }
        }
    }

    /// The answer when every session place is held by an active learner.
    static let sessionsFull = ServeError(
        503, "sessions_full", "every session place is taken by an active learner; try again shortly")

    /// The Set-Cookie value that names session `id` (nil: clears the cookie).
    func sessionCookie(_ id: String?) -> String {
        let path = settings.routePrefix.isEmpty ? "/" : settings.routePrefix
        let value = id.map { "\(Sessions.cookie)=\($0)" } ?? "\(Sessions.cookie)=; Max-Age=0"
        return "\(value); Path=\(path); HttpOnly; SameSite=Lax"
    }

    /// The session id a request's Cookie header names, if any.
    static func sessionID(_ request: Request) -> String? {
        let pairs = request.headers[values: .cookie].flatMap { $0.split(separator: ";") }
        for pair in pairs {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0] == Sessions.cookie, !parts[1].isEmpty { return parts[1] }
        }
        return nil
    }

    // MARK: helpers

    /// Refuses a clip whose header states a length over --max-clip.
    func refuseLong(_ seconds: Double?) throws {
        if let seconds, seconds > settings.maxClipSeconds {
            throw ServeError(
                422, "too_long",
                "audio: the clip is \(String(format: "%.1f", seconds)) s long, over the "
                    + "\(String(format: "%g", settings.maxClipSeconds)) s this server takes (--max-clip)")
        }
    }

    /// The spoken reply, base64, in the configured format; "" when there was no reply to speak.
    func spoken(_ answer: TutorPipeline.Answer) async throws -> String {
        guard let speech = answer.speech, speech.frames > 0 else { return "" }
        return try await pipeline.encode(speech, as: settings.audio).base64EncodedString()
    }

    /// Runs a pipeline turn when the scheduler lets it (the request already holds a place), within
    /// the timeout; failures become `ServeError`s. Turns with one `order` key (a session's) run one
    /// at a time, in the order they came. The turn is cancelled — its engines aborted, its child
    /// processes terminated — when the time is up, when the client goes away, or when the
    /// request's own task is cancelled (the server shuts down).
    func runPipeline(
        upload: URL?, order key: String, call: some CallContext,
        _ work: @escaping @Sendable (RequestOverrides) async throws -> TutorPipeline.Answer
    ) async throws -> TutorPipeline.Answer {
        let scheduler = scheduler
        let clientKey = call.clientKey
        // Waits for its slot behind its session's earlier turns; refused when every place is taken
        // (places bound the waiters already: the queue limit only guards that). A deadline or a
        // departed client cancels the task: a waiting turn leaves the queue, a running one stops.
        let turn = Task { () async throws -> TutorPipeline.Answer in
            try await scheduler.run(session: key, refused: TutorServer.overloaded) {
                try await work(RequestOverrides(apiKey: clientKey))
            }
        }
        do {
            return try await withTaskCancellationHandler {
                try await ClientGoneWatcher.watching(call.connection, onGone: { turn.cancel() }) {
                    try await Deadline.race(turn, seconds: settings.timeout)
                }
            } onCancel: {
                turn.cancel()
            }
        } catch let error as ServeError {
            throw error
        } catch is ClientGone {
            // Nobody reads this answer: it names the request in the log and the metrics (nginx's 499).
            throw ServeError(499, "client_gone", "the client went away; its turn was stopped")
        } catch is DeadlinePassed {
            throw ServeError(
                504, "timeout", "the pipeline did not answer within \(String(format: "%g", settings.timeout)) s")
        } catch let failure as StageFailure {
            var message = failure.description
            if let upload { message = message.replacingOccurrences(of: upload.path, with: "the audio") }
            throw ServeError(failure, message: message)
        }
    }

    /// The answer to a pipeline request when every place is taken: 503 with Retry-After, given
    /// as its body ends, on its connection's event loop.
    static let overloaded = ServeError(503, "overloaded", "the server is busy; try again shortly")

    /// Reads and decodes the body (off the event loop and the cooperative pool), finds the
    /// cookie's session, answers, and counts the request.
    func answer<Body: Decodable & Sendable, Answer: Encodable & Sendable>(
        _ route: String, _ request: Request, _ context: ServeRequestContext, _ type: Body.Type,
        pipeline: Bool = false, bodyRequired: Bool = true,
        _ handler: @escaping @Sendable (Call<Body>) async throws -> Answer
    ) async -> Response {
        await counted(route) {
            if pipeline {
                // The place its connection's gate took as its body ended, else one of its own.
                guard admission.claim(arrivedOn: ObjectIdentifier(context.channel)) || admission.enter() else {
                    return (failure(Self.overloaded), Self.overloaded)
                }
            }
            defer { if pipeline { admission.leave() } }
            var call: Call<Body>?
            defer { if let call { forgetKey(of: call) } }
            do {
                let decoded = try await readBody(request, as: WithClientKey<Body>.self, required: bodyRequired)
                var session: LearnerSession?
                if let id = Self.sessionID(request) {
                    let (found, expired) = sessions.use(id)
                    session = found
                    if let expired { removed([expired]) }
                }
                let key = try clientKey(decoded?.key)
                let made = Call(
                    body: try decoded?.body ?? Body(from: EmptyDecoder()), session: session,
                    clientKey: key ?? session?.clientKey, connection: context.channel,
                    client: context.channel.remoteAddress?.ipAddress ?? "unknown")
                made.keyFromRequest = key
                call = made
                var answer = encoded(200, try await handler(made))
                if let cookie = made.setCookie { answer.headers[.setCookie] = cookie }
                return (answer, nil)
            } catch {
                let serveError =
                    ServeError.from(error)
                var answer = failure(serveError)
                if let cookie = call?.setCookie { answer.headers[.setCookie] = cookie }
                return (answer, serveError)
            }
        }
    }

    /// A key a request brought for itself only is forgotten with its answer; one its join brought
    /// lives as long as the session.
    func forgetKey<Body>(of call: Call<Body>) {
        if let key = call.keyFromRequest, !call.keyKept { pipeline.secrets.unregister(key) }
    }

    /// The body decoded as `T`: nil for an empty body that is not required.
    func readBody<T: Decodable & Sendable>(_ request: Request, as type: T.Type, required: Bool) async throws -> T? {
        let data = try await readData(request)
        guard !data.isEmpty else {
            if !required { return nil }
            throw ServeError.badRequest("empty_body", "empty body: expected a JSON object")
        }
        // A 16-MB body takes a while to parse: on the blocking executor, never on a thread that answers.
        return try await pipeline.source.context.blocking.run { _ in
            do {
                return try JSONDecoder().decode(T.self, from: data)
            } catch {
                throw ServeError.decoding(error)
            }
        }
    }

    /// The body's bytes, up to --max-body.
    func readData(_ request: Request) async throws -> Data {
        let limit = settings.maxBodyBytes
        let tooLarge = ServeError(413, "too_large", "the body is larger than the \(limit)-byte limit")
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit { throw tooLarge }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch {
            if (error as? any HTTPResponseError)?.status == .contentTooLarge { throw tooLarge }
            throw ServeError.badRequest("bad_body", "could not read the body: \(describe(error))")
        }
        return Data(buffer.readableBytesView)
    }

    /// Answers with `work`, counts the request in the metrics and logs a failure (503 and 429 get
    /// Retry-After).
    func counted(_ route: String, _ work: () async -> (Response, ServeError?)) async -> Response {
        metrics.started()
        let started = ContinuousClock.now
        var (response, failure) = await work()
        // What the request freed goes back now, not when the next request happens to reuse it.
        Heap.returnFreeMemory()
        if let failure, failure.status == 503 || failure.status == 429 {
            response.headers[.retryAfter] = String(failure.retryAfter ?? settings.retryAfter)
        }
        record(
            route, status: failure?.status ?? Int(response.status.code), failure: failure,
            elapsed: ContinuousClock.now - started)
        return response
    }

    /// Logs a failed request and counts a request in the metrics (started before).
    func record(_ route: String, status: Int, failure: ServeError?, elapsed: Duration) {
        if let failure {
            logger.log(
                level: failure.status >= 500 ? .warning : .info, "request failed",
                metadata: [
                    "http.route": .string(route), "http.status": .stringConvertible(failure.status),
                    "error": .string(self.pipeline.secrets.redact(failure.message)),
                ])
        }
        metrics.finished(
            route: route, status: status,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            failure: failure?.reason)
    }

    /// The key a body carried. Without `allowClientKeys` it is ignored (the server's providers use
    /// their own keys) and the server says so once, naming the field, never the key. With it, a key
    /// that holds a control character is refused (it would inject a header upstream), and an
    /// accepted key is registered with the pipeline's secrets while it is in use (this request, or
    /// the session its join starts), so no answer, log line or recording shows it.
    func clientKey(_ found: (field: String, value: String?)?) throws -> String? {
        guard let (name, key) = found else { return nil }
        guard settings.allowClientKeys else {
            if ignoredKeyWarning.claim() {
                logger.warning(
                    """
                    a request carried an API key (\(name)); keys from requests are ignored and the server's \
                    providers use their own (start with --allow-client-keys to use them); said once
                    """)
            }
            return nil
        }
        guard let key, !key.isEmpty else { return nil }
        do {
            try Secrets.check(key, source: "the request's \(name)")
        } catch let error as VoxError {
            throw ServeError.badRequest("client_key", error.message)
        }
        pipeline.secrets.register(key)
        return key
    }

    /// `value` as the answer's JSON body (secrets redacted).
    func encoded(_ status: Int, _ value: some Encodable) -> Response {
        Response(
            status: HTTPResponse.Status(code: status), headers: [.contentType: "application/json"],
            body: .init(byteBuffer: encodedBuffer(value)))
    }

    /// The answer to a failed tutor request.
    func failure(_ error: ServeError) -> Response { encoded(error.status, FailureAnswer(error: error.message)) }

    func encodedBuffer(_ value: some Encodable) -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data =
            (try? encoder.encode(value)).map(pipeline.secrets.redact)
            ?? Data(#"{"error":"internal error: the answer could not be encoded","success":false}"#.utf8)
        return ByteBuffer(bytes: data)
    }

    /// Base64 as clients send it: standard or URL-safe alphabet, padded or not, maybe wrapped or
    /// behind a `data:…;base64,` prefix. Nil for anything else.
    static func decodeBase64(_ text: String) -> Data? {
        var s = Substring(text)
        if s.hasPrefix("data:"), let comma = s.firstIndex(of: ",") { s = s[s.index(after: comma)...] }
        var cleaned = String(s.filter { !$0.isWhitespace })
        cleaned = cleaned.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        if cleaned.count % 4 != 0 { cleaned += String(repeating: "=", count: 4 - cleaned.count % 4) }
        return Data(base64Encoded: cleaned)
    }

    /// The extension an upload of a sniffed format is saved with.
    static func ext(_ format: String) -> String {
        switch format {
        case "WAV", "RF64": "wav"
        case "W64": "w64"
        case "FLAC": "flac"
        case "Ogg": "ogg"
        case "MP3": "mp3"
        case "MP4/M4A": "m4a"
        case "AIFF": "aiff"
        case "CAF": "caf"
        case "AU": "au"
        case "Matroska/WebM": "webm"
        default: "bin"
        }
    }

    /// ISO 8601 in UTC with milliseconds: `2025-01-31T09:15:02.123Z`.
    static func iso8601(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}

/// The first of the signals that stop a server.
final class FirstSignal: Sendable {
    private let value = Atomic<Int32>(0)

    /// True when `number` is the first.
    func record(_ number: Int32) -> Bool {
        value.compareExchange(expected: 0, desired: number, ordering: .acquiringAndReleasing).exchanged
    }

    var number: Int32? {
        let n = value.load(ordering: .acquiring)
        return n == 0 ? nil : n
    }
}

/// What every route's request carries besides its body: the key it brought and its connection.
protocol CallContext: Sendable {
    var clientKey: String? { get }
    var connection: (any Channel)? { get }
}

/// One request as a route sees it: its decoded body, the live session its cookie names, the key
/// it brought (or its session's), its connection and client address, and the cookie the answer
/// sets.
final class Call<Body: Sendable>: CallContext, Sendable {
    let body: Body
    let session: LearnerSession?
    let clientKey: String?
    /// The connection the request came on: its turn stops when the client goes away.
    let connection: (any Channel)?
    /// The client's address (joins are counted by it).
    let client: String
    private let state = Mutex<(setCookie: String?, keyFromRequest: String?, keyKept: Bool)>((nil, nil, false))

    init(
        body: Body, session: LearnerSession? = nil, clientKey: String? = nil, connection: (any Channel)? = nil,
        client: String = "local"
    ) {
        self.body = body
        self.session = session
        self.clientKey = clientKey
        self.connection = connection
        self.client = client
    }

    /// A Set-Cookie value for the answer.
    var setCookie: String? {
        get { state.withLock { $0.setCookie } }
        set { state.withLock { $0.setCookie = newValue } }
    }
    /// The key this request's body brought (registered with the secrets for it).
    var keyFromRequest: String? {
        get { state.withLock { $0.keyFromRequest } }
        set { state.withLock { $0.keyFromRequest = newValue } }
    }
    /// The key became a session's: it is not forgotten with the answer.
    var keyKept: Bool {
        get { state.withLock { $0.keyKept } }
        set { state.withLock { $0.keyKept = newValue } }
    }
}

/// Decodes nothing: the body of a request that sent none.
struct EmptyDecoder: Decoder {
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        throw DecodingError.valueNotFound(
            Key.self, .init(codingPath: [], debugDescription: "no body"))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.valueNotFound([Any].self, .init(codingPath: [], debugDescription: "no body"))
    }
    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DecodingError.valueNotFound(Any.self, .init(codingPath: [], debugDescription: "no body"))
    }
}

/// Thrown by `Deadline.race` when the time ran out first.
struct DeadlinePassed: Error {}

enum Deadline {
    /// The task's result, or `DeadlinePassed` after `seconds`: the task is then cancelled (its
    /// engines abort, its child processes are terminated) and left to end on its own, so the
    /// answer does not wait for it.
    static func race<T: Sendable>(_ task: Task<T, any Error>, seconds: Double) async throws -> T {
        let once = ResumeOnce<T>()
        return try await withCheckedThrowingContinuation { continuation in
            once.set(continuation)
            let timer = Task {
                try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1e9))
                if !Task.isCancelled, once.resume(with: .failure(DeadlinePassed())) { task.cancel() }
            }
            Task {
                let result = await task.result
                timer.cancel()
                once.resume(with: result)
            }
        }
    }
}

/// A continuation resumed by whichever comes first.
final class ResumeOnce<T: Sendable>: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<T, any Error>?, done: Bool)>((nil, false))

    func set(_ continuation: CheckedContinuation<T, any Error>) { state.withLock { $0.continuation = continuation } }

    /// True when this call resumed it.
    @discardableResult
    func resume(with result: Result<T, any Error>) -> Bool {
        let taken: CheckedContinuation<T, any Error>? = state.withLock { state in
            guard !state.done else { return nil }
            state.done = true
            defer { state.continuation = nil }
            return state.continuation
        }
        taken?.resume(with: result)
        return taken != nil
    }
}

/// Errors the router itself raises (no such route) as the API's JSON error shape.
struct JSONErrorMiddleware: RouterMiddleware {
    typealias Context = ServeRequestContext

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError {
            let message =
                error.status == .notFound ? "no such route: \(request.method) \(request.uri.path)" : "\(error)"
            let data =
                (try? JSONSerialization.data(
                    withJSONObject: ["success": false, "error": message],
                    options: [.sortedKeys, .withoutEscapingSlashes]))
                ?? Data()
            return Response(
                status: error.status, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
    }
}
