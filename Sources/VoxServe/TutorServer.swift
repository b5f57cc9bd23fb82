import Foundation
import Hummingbird
import Logging
import NIOCore
import Synchronization
import VoxCore
import VoxDecode

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
/// Each device's join sets a session cookie; calls carrying it talk on that device's channel, and
/// its `stop` ends only that session. Calls without it use the body's channel, else the shared
/// session's, else `default`. Turns of one channel run one at a time, in order.
///
/// A clip with no speech is a turn with nothing said: `success: true`, empty transcription, reply
/// and audio (422 with `noSpeechIsError`).
///
/// Every failure is `{"success": false, "error": "…"}` with its status: 400 bad JSON, base64 or
/// fields, 413 too large a body, 415 audio of no known format, 422 audio the pipeline cannot use,
/// 500 a pipeline failure, 503 (with Retry-After) when every turn and queue place is taken, 504
/// past the timeout.
public final class TutorServer: Sendable {
    public let settings: ServeSettings
    let pipeline: TutorPipeline
    let metrics = ServeMetrics()
    /// Pipeline requests at once: `concurrency` run, `queue` more wait their turn, the rest are
    /// refused on arrival, unread.
    let admission: Admission
    /// The shared session: requests without a session cookie (and without a channel) talk on it.
    let session = BotSession()
    /// Each device's session, named by the cookie its join set.
    let devices: DeviceSessions
    let turnOrder = TurnOrder()
    let translator = Translator()
    let conversations: Conversations
    let logger: Logger
    /// Whether the ignored-client-key warning was given (it is given once).
    let ignoredKeyWarning = Once()

    /// The routes' names in metrics, besides the prefix.
    static let routes = ["/process-audio", "/process-text", "/join-with-bot", "/stop", "/status"]
    /// The tutor routes that run the pipeline (admitted or refused on arrival), besides the prefix.
    static let pipelineRoutes = ["/process-audio", "/process-text"]
    /// What the server calls itself in its answers' Server header.
    static let serverName = "voxpipe"
    /// The channel of requests that name none while no session runs.
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
        devices = DeviceSessions(limit: settings.maxConversations)
    }

    /// Listens until the task is cancelled (or, with `signals`, SIGTERM/SIGINT arrive: then it
    /// stops taking connections and lets the running requests finish). `onListening` gets the
    /// port taken (the one asked for, or a free one for 0).
    public func run(
        handlingSignals signals: Bool = false, onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        for warning in startupWarnings { logger.warning("\(warning)") }
        let rules = admissionGateRules
        let app = Application(
            router: makeRouter(),
            server: .http1(configuration: .init(additionalChannelHandlers: [AdmissionGate(rules)])),
            configuration: ApplicationConfiguration(
                address: .hostname(settings.host, port: settings.port), serverName: Self.serverName),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? 0) },
            logger: logger)
        if signals {
            try await app.runService()
        } else {
            try await app.run()
        }
    }

    /// What each connection's `AdmissionGate` knows: the pipeline routes and their refusals, and
    /// how a refusal is counted (as the server counts one of its own).
    var admissionGateRules: AdmissionGate.Rules {
        let busy: [String: Any] = ["success": false, "error": Self.overloaded.message]
        var routes: [String: AdmissionGate.Route] = [:]
        for name in Self.pipelineRoutes {
            routes[settings.routePrefix + name] = .init(name: name, refusal: jsonBuffer(busy)) { _ in true }
        }
        for route in OpenAIRoute.allCases {
            routes[route.rawValue] = .init(
                name: route.rawValue, refusal: jsonBuffer(openAIErrorObject(Self.overloaded))
            ) {
                self.unauthorized(authorization: $0[.authorization]) == nil
            }
        }
        return .init(admission: admission, routes: routes, retryAfter: settings.retryAfter) { route, elapsed in
            self.metrics.started()
            self.record(route.name, status: 503, failure: Self.overloaded, elapsed: elapsed)
        }
    }

    /// What the server says once at start: settings that a client will trip over (no app id, no
    /// certificate for tokens).
    public var startupWarnings: [String] { settings.agora.warnings }

    func makeRouter() -> Router<ServeRequestContext> {
        let router = Router(context: ServeRequestContext.self)
        router.add(middleware: JSONErrorMiddleware())
        router.get("/healthz") { _, _ in self.json(200, ["success": true, "status": "ok"]) }
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(string: self.metrics.render())))
        }
        addOpenAIRoutes(to: router)
        let api = router.group(RouterPath(settings.routePrefix))
        api.post("/process-audio") { request, context in
            await self.answer("/process-audio", request, context, pipeline: true) { try await self.processAudio($0) }
        }
        api.post("/process-text") { request, context in
            await self.answer("/process-text", request, context, pipeline: true) { try await self.processText($0) }
        }
        api.post("/join-with-bot") { request, context in
            await self.answer("/join-with-bot", request, context) { try await self.join($0) }
        }
        api.post("/stop") { request, context in
            await self.answer("/stop", request, context, bodyRequired: false) { try await self.stop($0) }
        }
        api.get("/status") { request, context in
            await self.answer("/status", request, context, bodyRequired: false) { exchange in
                var (channel, started) = await (self.session.channel, self.session.startedAt)
                if let device = exchange.session { (channel, started) = (device.channel, device.startedAt) }
                return [
                    "success": true, "isRunning": channel != nil, "channel": channel.map { $0 as Any } ?? NSNull(),
                    "startedAt": started.map { Self.iso8601($0) as Any } ?? NSNull(),
                ]
            }
        }
        return router
    }

    // MARK: routes

    /// Ends the cookie's session (only it), else the shared one; the cookie is cleared.
    func stop(_ exchange: Exchange) async throws -> [String: Any] {
        let previous: String?
        if let id = exchange.sessionID, let ended = await devices.end(id) {
            previous = ended.channel
            if await session.channel == ended.channel { _ = await session.stop() }
            exchange.setCookie = sessionCookie(nil)
        } else {
            previous = await session.stop()
            if let previous { await devices.end(channel: previous) }
        }
        if let previous { conversations.forget(previous) }
        return [
            "success": true,
            "message": previous == nil ? "The bot was not running" : "The bot left the channel",
            "previousChannel": previous.map { $0 as Any } ?? NSNull(),
        ]
    }

    func processAudio(_ exchange: Exchange) async throws -> [String: Any] {
        let body = exchange.body
        guard let encoded = body["audio"] as? String, !encoded.isEmpty else {
            throw ServeError.badRequest("bad_request", "audio: expected the clip as a base64 string")
        }
        guard let audio = Self.decodeBase64(encoded) else {
            throw ServeError.badRequest("bad_base64", "audio: not valid base64")
        }
        let head = [UInt8](audio.prefix(512))
        guard head.count >= FileSniffer.minimumBytes, let format = FileSniffer.format(of: head) else {
            let claimed = (body["mimeType"] as? String).map { " (mimeType said \($0))" } ?? ""
            throw ServeError(
                415, "unknown_audio",
                "audio: not a known audio format\(claimed); send WAV, FLAC, Ogg, MP3 or M4A")
        }
        let (upload, length) = try await pipeline.store(upload: audio, ext: Self.ext(format))
        defer { try? FileManager.default.removeItem(at: upload) }
        // A clip over --max-clip is refused from its header, before it is queued or decoded.
        if let seconds = length, seconds > settings.maxClipSeconds {
            throw ServeError(
                422, "too_long",
                "audio: the clip is \(String(format: "%.1f", seconds)) s long, over the "
                    + "\(String(format: "%g", settings.maxClipSeconds)) s this server takes (--max-clip)")
        }
        let channel = await channel(exchange)
        let conversation = conversations.conversation(for: channel)
        let answer = try await runPipeline(upload: upload, channel: channel, connection: exchange.connection) {
            try await self.pipeline.answer(audioFile: upload, conversation: conversation)
        }
        if answer.transcription.isEmpty {
            // The learner thinking is a turn with nothing said: nothing to answer, nothing remembered.
            if settings.noSpeechIsError {
                throw ServeError(422, "no_speech", "audio: no speech was recognised in the clip")
            }
            return ["success": true, "transcription": "", "reply": "", "audio": ""]
        }
        return [
            "success": true, "transcription": answer.transcription, "reply": answer.reply,
            "audio": try await spoken(answer),
        ]
    }

    func processText(_ exchange: Exchange) async throws -> [String: Any] {
        guard let text = (exchange.body["text"] as? String)?.trimmingCharacters(in: .whitespacesAndNewlines),
            !text.isEmpty
        else {
            throw ServeError.badRequest("bad_request", "text: expected the learner's words as a non-empty string")
        }
        let channel = await channel(exchange)
        let conversation = conversations.conversation(for: channel)
        let answer = try await runPipeline(upload: nil, channel: channel, connection: exchange.connection) {
            try await self.pipeline.answer(text: text, conversation: conversation)
        }
        return ["success": true, "reply": answer.reply, "audio": try await spoken(answer)]
    }

    /// Starts a session for the device (ending the one its cookie named) and sets its cookie; the
    /// shared session moves to the new channel too, as it did before devices had sessions.
    func join(_ exchange: Exchange) async throws -> [String: Any] {
        let body = exchange.body
        let user: String
        switch body["userId"] {
        case let s as String where !s.isEmpty && s.count <= 128: user = s
        case let n as NSNumber where !(n is Bool) && n.doubleValue == n.doubleValue.rounded(): user = n.stringValue
        default: throw ServeError.badRequest("bad_request", "userId: expected a non-empty string")
        }
        guard user.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }) else {
            throw ServeError.badRequest("bad_request", "userId: letters, digits, '-', '_' and '.' only")
        }
        let name = (body["userName"] as? String) ?? user
        if let id = exchange.sessionID, let ended = await devices.end(id) { conversations.forget(ended.channel) }
        let now = Date()
        let (channel, previous) = await session.join(userID: user, now: now)
        // The channel the shared session left may be a device's: then it is that device's to end.
        if let previous, await !devices.holds(channel: previous) { conversations.forget(previous) }
        let (id, evicted) = await devices.start(
            DeviceSession(channel: channel, startedAt: now, clientKey: exchange.clientKey))
        for channel in evicted { conversations.forget(channel) }
        exchange.setCookie = sessionCookie(id)
        let token: String?
        do {
            token = try settings.agora.token(channel: channel)
        } catch let error as AgoraTokenError {
            throw ServeError(500, "token", "could not make the Agora token: \(error.message)")
        }
        return [
            "success": true, "appId": settings.agora.appID, "channel": channel, "token": token ?? NSNull(),
            "message": "The tutor joined \(channel) for \(name)",
        ]
    }

    // MARK: helpers

    /// The channel a turn belongs to: the cookie's session's, else the body's `channel`, else the
    /// shared session's, else the default.
    func channel(_ exchange: Exchange) async -> String {
        if let device = exchange.session { return device.channel }
        if let named = exchange.body["channel"] as? String, !named.isEmpty { return named }
        return await session.channel ?? Self.defaultChannel
    }

    /// The Set-Cookie value that names session `id` (nil: clears the cookie).
    func sessionCookie(_ id: String?) -> String {
        let path = settings.routePrefix.isEmpty ? "/" : settings.routePrefix
        let value = id.map { "\(DeviceSessions.cookie)=\($0)" } ?? "\(DeviceSessions.cookie)=; Max-Age=0"
        return "\(value); Path=\(path); HttpOnly; SameSite=Lax"
    }

    /// The session id a request's Cookie header names, if any.
    static func sessionID(_ request: Request) -> String? {
        let pairs = request.headers[values: .cookie].flatMap { $0.split(separator: ";") }
        for pair in pairs {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0] == DeviceSessions.cookie, !parts[1].isEmpty { return parts[1] }
        }
        return nil
    }

    /// The spoken reply, base64, in the configured format; "" when there was no reply to speak.
    func spoken(_ answer: TutorPipeline.Answer) async throws -> String {
        guard let speech = answer.speech, speech.frames > 0 else { return "" }
        return try await pipeline.encode(speech, as: settings.audio).base64EncodedString()
    }

    /// Runs a pipeline turn when admitted (the request already holds a place), within the
    /// timeout; failures become `ServeError`s. Turns on one channel run one at a time, in the
    /// order they came (once admitted). The turn is cancelled — its engines aborted, its child
    /// processes terminated — when the time is up, when the client of `connection` goes away, or
    /// when the request's own task is cancelled (the server shuts down).
    func runPipeline(
        upload: URL?, channel: String, connection: (any Channel)?,
        _ work: @escaping @Sendable () async throws -> TutorPipeline.Answer
    ) async throws -> TutorPipeline.Answer {
        let (slots, queue) = (admission.slots, settings.queue)
        let order = turnOrder
        let turn = Task { () async throws -> TutorPipeline.Answer in
            // Places bound the waiters already; the queue limit only guards that.
            guard await slots.acquire(queueLimit: queue) else { throw TutorServer.overloaded }
            // Admitted first, so a busy server still refuses; the turn before it holds a place already.
            // Place and slot are given back before the turn's task ends (awaited, not left to tasks of
            // their own), so a client that got its answer finds them free for its next request.
            await order.acquire(channel)
            do {
                // A request that timed out while it waited does not run.
                try Task.checkCancellation()
                let answer = try await work()
                await order.release(channel)
                await slots.release()
                return answer
            } catch {
                await order.release(channel)
                await slots.release()
                throw error
            }
        }
        do {
            return try await withTaskCancellationHandler {
                try await ClientGoneWatcher.watching(connection, onGone: { turn.cancel() }) {
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
    /// on arrival, before the body is read (Hummingbird drains it after the answer, so the
    /// connection stays usable).
    static let overloaded = ServeError(503, "overloaded", "the server is busy; try again shortly")

    /// Reads the body as a JSON object, answers, and counts the request.
    func answer(
        _ route: String, _ request: Request, _ context: ServeRequestContext, pipeline: Bool = false,
        bodyRequired: Bool = true, _ handler: @escaping @Sendable (Exchange) async throws -> [String: Any]
    ) async -> Response {
        await counted(route) {
            if pipeline {
                // The place its connection's gate took as it arrived, else one of its own.
                guard admission.claim(arrivedOn: ObjectIdentifier(context.channel)) || admission.enter() else {
                    return (json(503, ["success": false, "error": Self.overloaded.message]), Self.overloaded)
                }
            }
            defer { if pipeline { admission.leave() } }
            do {
                var body = try await readObject(request, required: bodyRequired)
                let key = try clientKey(&body)
                let id = Self.sessionID(request)
                let session: DeviceSession? = if let id { await devices[id] } else { nil }
                let exchange = Exchange(
                    body: body, sessionID: id, session: session, clientKey: key, connection: context.channel)
                // A key the session's join brought serves its later turns (only with allowClientKeys).
                var answer = try await ClientCredentials.$apiKey.withValue(key ?? session?.clientKey) {
                    json(200, try await handler(exchange))
                }
                if let cookie = exchange.setCookie { answer.headers[.setCookie] = cookie }
                return (answer, nil)
            } catch {
                let serveError =
                    (error as? ServeError) ?? ServeError(500, "internal", "internal error: \(describe(error))")
                return (json(serveError.status, ["success": false, "error": serveError.message]), serveError)
            }
        }
    }

    /// Answers with `work`, counts the request in the metrics and logs a failure (503 gets
    /// Retry-After).
    func counted(_ route: String, _ work: () async -> (Response, ServeError?)) async -> Response {
        metrics.started()
        let started = ContinuousClock.now
        var (response, failure) = await work()
        if failure?.status == 503 { response.headers[.retryAfter] = String(settings.retryAfter) }
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

    func readObject(_ request: Request, required: Bool) async throws -> [String: Any] {
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
        guard buffer.readableBytes > 0 else {
            if !required { return [:] }
            throw ServeError.badRequest("empty_body", "empty body: expected a JSON object")
        }
        let data = Data(buffer.getBytes(at: buffer.readerIndex, length: buffer.readableBytes) ?? [])
        guard let value = try? JSONSerialization.jsonObject(with: data) else {
            throw ServeError.badRequest("bad_json", "the body is not valid JSON")
        }
        guard let object = value as? [String: Any] else {
            throw ServeError.badRequest("bad_json", "expected a JSON object")
        }
        return object
    }

    /// A key sent in the body, removed from it. Without `allowClientKeys` it is ignored (the
    /// server's providers use their own keys) and the server says so once, naming the field, never
    /// the key. With it, a key that holds a control character is refused (it would inject a header
    /// upstream), and an accepted key is registered with the pipeline's secrets, so no answer, log
    /// line or recording shows it.
    func clientKey(_ body: inout [String: Any]) throws -> String? {
        let names = body.keys.filter { name in
            let folded = name.lowercased().replacingOccurrences(of: "_", with: "")
            return folded.hasSuffix("apikey") || folded == "key" || folded == "authorization"
        }
        guard let name = names.first else { return nil }
        guard settings.allowClientKeys else {
            for name in names { body.removeValue(forKey: name) }
            if ignoredKeyWarning.claim() {
                logger.warning(
                    """
                    a request carried an API key (\(name)); keys from requests are ignored and the server's \
                    providers use their own (start with --allow-client-keys to use them); said once
                    """)
            }
            return nil
        }
        let key = body[name] as? String
        for name in names { body.removeValue(forKey: name) }
        guard let key, !key.isEmpty else { return nil }
        do {
            try Secrets.check(key, source: "the request's \(name)")
        } catch let error as VoxError {
            throw ServeError.badRequest("client_key", error.message)
        }
        pipeline.secrets.register(key)
        return key
    }

    func json(_ status: Int, _ object: [String: Any]) -> Response {
        Response(
            status: HTTPResponse.Status(code: status), headers: [.contentType: "application/json"],
            body: .init(byteBuffer: jsonBuffer(object)))
    }

    /// `object` as an answer's JSON body, secrets redacted.
    func jsonBuffer(_ object: [String: Any]) -> ByteBuffer {
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            .map(pipeline.secrets.redact)
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

/// One request as a route sees it: the JSON body (client keys removed), the device session its
/// cookie names, the key it brought, and the cookie the answer sets.
final class Exchange: @unchecked Sendable {
    let body: [String: Any]
    /// The cookie's session id, and the session when it is a live one.
    let sessionID: String?
    let session: DeviceSession?
    let clientKey: String?
    /// The connection the request came on: its turn stops when the client goes away.
    let connection: (any Channel)?
    /// A Set-Cookie value for the answer.
    var setCookie: String?

    init(
        body: [String: Any], sessionID: String?, session: DeviceSession?, clientKey: String?,
        connection: (any Channel)? = nil
    ) {
        self.body = body
        self.sessionID = sessionID
        self.session = session
        self.clientKey = clientKey
        self.connection = connection
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
