import Foundation
import VoxCore
import VoxRequest

/// A provider's connection to its server: retries connection errors, 408, 409, 429 and 5xx with
/// exponential backoff and full jitter, honouring `Retry-After`; never retries other 4xx or an
/// `insufficient_quota` error; keeps to a requests-per-minute limit and a cap on requests in
/// flight; records or replays exchanges; and keeps the API key out of every message: a response
/// is redacted (`Secrets`) as it arrives, before anything reads, cuts short or records it.
public final class HTTPClient: Sendable {
    public let settings: HTTPSettings
    let apiKey: String?
    let recording: ExchangeRecording?
    let limiter: RateLimiter
    let transport: any HTTPTransport
    /// Waits between attempts and spaces requests; tests pass one that moves on without sleeping.
    let clock: any VoxClock
    /// The keys to redact from responses; `apiKey` is registered in it.
    let secrets: Secrets
    /// A number in 0..<1 for jitter.
    let random: @Sendable () -> Double

    /// `transport` nil means libcurl.
    public init(
        settings: HTTPSettings, apiKey: String?, recording: ExchangeRecording?,
        transport: (any HTTPTransport)? = nil, clock: any VoxClock = SystemClock(), secrets: Secrets = Secrets(),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.settings = settings
        self.apiKey = apiKey
        self.secrets = secrets
        if let apiKey { secrets.register(apiKey) }
        self.recording = recording
        self.transport = transport ?? CurlTransport()
        self.clock = clock
        limiter = RateLimiter(perMinute: settings.requestsPerMinute, maxInFlight: settings.maxInFlight, clock: clock)
        self.random = random
    }

    /// `{baseURL}/{path}`.
    public func url(_ path: String) -> String { settings.baseURL + "/" + path }

    /// Sends a request (the key is added here) and returns a 2xx response; throws `HTTPError`
    /// with the server's own message otherwise.
    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        if case .replay(let folder) = recording { return try replay(request, from: folder) }
        var authorized = request
        if let apiKey = self.key {
            secrets.register(apiKey)
            authorized.headers.append(("Authorization", "Bearer \(apiKey)"))
        }
        // A line break in a header would end it and start another (keys are checked at load; this
        // holds for every header).
        let breaksLine = { (header: (String, String)) in
            (header.0 + header.1).unicodeScalars.contains(where: isControl)
        }
        if let (name, _) = authorized.headers.first(where: breaksLine) {
            throw redacted(HTTPError(.invalidRequest, "the \(name) header holds a control character; not sent"))
        }
        authorized.connectTimeout = settings.connectTimeout
        authorized.timeout = settings.timeout(forBytes: request.body.count)
        authorized.lowSpeedBytes = settings.lowSpeedBytes
        authorized.lowSpeedSeconds = settings.lowSpeedSeconds
        var attempt = 0
        while true {
            try Task.checkCancellation()
            let outcome: Result<HTTPResponse, any Error>
            try await limiter.acquire()
            do {
                outcome = .success(redacted(try await transport.perform(authorized)))
            } catch {
                outcome = .failure(error)
            }
            await limiter.release()
            // A cancelled task's transfer was aborted: that is no failure to retry or report.
            if case .failure(let error) = outcome, error is CancellationError { throw error }
            let (retry, wait, failure) = judge(outcome, attempt: attempt)
            if retry == false {
                if let failure { throw redacted(failure) }
                guard case .success(let response) = outcome else {
                    throw redacted(HTTPError(.invalidResponse, "no response"))
                }
                if case .record(let folder) = recording { try record(request, response, into: folder) }
                return response
            }
            attempt += 1
            try await clock.sleep(wait)
        }
    }

    /// Whether to try again, after how long, or the error to give up with.
    func judge(
        _ outcome: Result<HTTPResponse, any Error>, attempt: Int
    ) -> (retry: Bool, wait: Double, failure: HTTPError?) {
        let backoff = random() * min(settings.backoffCap, settings.backoffBase * pow(2, Double(attempt)))
        let canRetry = attempt < settings.maxRetries
        switch outcome {
        case .failure(let error):
            let failure = (error as? HTTPError) ?? HTTPError(.connection, describe(error))
            return (
                canRetry, backoff,
                canRetry ? nil : HTTPError(failure.code, "\(failure.message) (gave up after \(attempt + 1) attempts)")
            )
        case .success(let response):
            if (200..<300).contains(response.status) { return (false, 0, nil) }
            let message = Self.serverMessage(response)
            if response.status == 429 && message.code == "insufficient_quota" {
                return (
                    false, 0,
                    HTTPError(.quota, "the account has no quota left (429 insufficient_quota): \(message.text)")
                )
            }
            let retryable = [408, 409, 429].contains(response.status) || (500..<600).contains(response.status)
            guard retryable && canRetry else {
                let after = retryable ? " (gave up after \(attempt + 1) attempts)" : ""
                return (
                    false, 0,
                    HTTPError(
                        .status(response.status), "the server answered \(response.status): \(message.text)\(after)")
                )
            }
            return (true, Self.retryAfter(response) ?? backoff, nil)
        }
    }

    /// `Retry-After` in seconds (a number, or an HTTP date), capped at 10 minutes.
    static func retryAfter(_ response: HTTPResponse) -> Double? {
        guard let value = response.headers["retry-after"] else { return nil }
        if let seconds = Double(value.trimmingCharacters(in: .whitespaces)) { return min(max(0, seconds), 600) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: value).map { min(max(0, $0.timeIntervalSinceNow), 600) }
    }

    /// OpenAI-style `{"error": {"message", "code"}}`, else the start of the body.
    static func serverMessage(_ response: HTTPResponse) -> (text: String, code: String?) {
        if let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any],
            let error = object["error"] as? [String: Any]
        {
            return ((error["message"] as? String) ?? "error", (error["code"] as? String) ?? (error["type"] as? String))
        }
        let text = String(decoding: response.body.prefix(200), as: UTF8.self).trimmingCharacters(
            in: .whitespacesAndNewlines)
        return (text.isEmpty ? "(empty body)" : text, nil)
    }

    /// The key this request goes with: a serve client's (`RequestKey.clientAPIKey`), else the provider's.
    var key: String? { RequestValues.current[.clientAPIKey] ?? apiKey }

    /// The error with every key (if a server echoed one) replaced.
    func redacted(_ error: HTTPError) -> HTTPError {
        let message = secrets.redact(error.message)
        return message == error.message ? error : HTTPError(error.code, message)
    }

    /// The response with every key replaced in its body and headers, before anything reads it.
    func redacted(_ response: HTTPResponse) -> HTTPResponse {
        var clean = response
        clean.body = secrets.redact(response.body)
        clean.headers = response.headers.mapValues(secrets.redact)
        return clean
    }

    // MARK: record and replay

    /// The recording's name for a request: method, path after the base URL, and the body. No
    /// header (the key is one) takes part.
    func exchangeKey(_ request: HTTPRequest) -> String {
        let path =
            request.url.hasPrefix(settings.baseURL)
            ? String(request.url.dropFirst(settings.baseURL.count)) : request.url
        let d = Digest(.sha256)
        d.update(Data("\(request.method) \(path)\n".utf8))
        d.update(request.body)
        return d.finalizeHex()
    }

    struct Exchange: Codable {
        var method: String
        var path: String
        var requestBodySHA256: String
        var response: HTTPResponse
    }

    func record(_ request: HTTPRequest, _ response: HTTPResponse, into folder: URL) throws {
        let path =
            request.url.hasPrefix(settings.baseURL)
            ? String(request.url.dropFirst(settings.baseURL.count)) : request.url
        let clean = redacted(response)
        let exchange = Exchange(
            method: request.method, path: path, requestBodySHA256: Digest.hex(request.body), response: clean)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try AtomicFile.write(
            try encoder.encode(exchange), to: folder.appendingPathComponent("\(exchangeKey(request)).json"))
    }

    func replay(_ request: HTTPRequest, from folder: URL) throws -> HTTPResponse {
        let file = folder.appendingPathComponent("\(exchangeKey(request)).json")
        guard let data = FileManager.default.contents(atPath: file.path),
            let exchange = try? JSONDecoder().decode(Exchange.self, from: data)
        else {
            let path =
                request.url.hasPrefix(settings.baseURL)
                ? String(request.url.dropFirst(settings.baseURL.count)) : request.url
            throw HTTPError(
                .notRecorded,
                "--http-replay: no recorded exchange for \(request.method) \(path) (\(file.lastPathComponent) in "
                    + "\(folder.path))"
            )
        }
        return exchange.response
    }
}

func isControl(_ scalar: Unicode.Scalar) -> Bool { scalar.properties.generalCategory == .control }

/// Spaces requests to keep under a per-minute limit and caps those in flight (with the one
/// semaphore voxpipe's waits share, which hands a freed place straight to the next waiter).
actor RateLimiter {
    let interval: Double
    let clock: any VoxClock
    var next: Double
    let inFlight: AsyncSemaphore

    init(perMinute: Double, maxInFlight: Int, clock: any VoxClock) {
        interval = perMinute > 0 ? 60 / perMinute : 0
        inFlight = AsyncSemaphore(permits: maxInFlight)
        self.clock = clock
        next = clock.now
    }

    /// Waits for a place in flight and for the request's turn under the per-minute limit; throws
    /// `CancellationError` when the task is cancelled while it waits for a place.
    func acquire() async throws {
        guard await inFlight.acquire() else { throw CancellationError() }
        if interval > 0 {
            let now = clock.now
            let start = max(now, next)
            next = start + interval
            if start > now { try? await clock.sleep(start - now) }
        }
    }

    func release() async { await inFlight.release() }
}
