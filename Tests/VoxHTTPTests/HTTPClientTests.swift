import Foundation
import Testing
import VoxCore
import VoxTestSupport

@testable import VoxHTTP

/// The fault matrix, against a real server on 127.0.0.1.
@Suite(.serialized, .startsProcess("the fake OpenAI server (Python)")) struct HTTPClientTests {
    let server: FakeOpenAIServer

    init() throws { server = try FakeOpenAIServer(key: "sk-test-\(UUID().uuidString.prefix(8))") }

    func settings(_ extra: [String: JSONValue] = [:]) -> HTTPSettings {
        var values: [String: JSONValue] = ["baseURL": .string(server.baseURL), "backoff": 0.2, "maxRetries": 3]
        values.merge(extra) { $1 }
        return HTTPSettings(
            StageOptions(
                stageID: "t", path: "p", baseDirectory: URL(fileURLWithPath: "/"), values: values,
                specs: HTTPSettings.options), environment: [:])
    }

    /// A client over libcurl whose waits go by a manual clock (recorded, never slept) and whose
    /// jitter is fixed at half.
    func client(_ settings: HTTPSettings, key: String? = nil, clock: ManualClock = ManualClock()) -> HTTPClient {
        HTTPClient(settings: settings, apiKey: key ?? server.key, recording: nil, clock: clock, random: { 0.5 })
    }

    func get(_ client: HTTPClient) async throws -> HTTPResponse {
        try await client.send(HTTPRequest(method: "GET", url: client.url("models")))
    }

    func times(_ path: String) throws -> [Double] {
        try server.log().filter { $0["path"] as? String == path }.compactMap { $0["time"] as? Double }
    }

    @Test func a429WithRetryAfterIsWaitedOutThenSucceeds() async throws {
        try server.inject([["path": "/v1/models", "kind": "status", "status": 429, "retryAfter": 1, "count": 1]])
        let clock = ManualClock()
        let response = try await get(client(settings(), clock: clock))
        #expect(response.status == 200)
        #expect(clock.sleeps == [1])
        #expect(try times("/v1/models").count == 2)
    }

    @Test func serverErrorsAreRetriedWithExponentialBackoffAndFullJitter() async throws {
        try server.inject([
            ["path": "/v1/models", "kind": "status", "status": 500, "count": 1],
            ["path": "/v1/models", "kind": "status", "status": 503, "count": 1],
        ])
        let clock = ManualClock()
        #expect(try await get(client(settings(), clock: clock)).status == 200)
        // Jitter fixed at 0.5: half of 0.2 s, then half of 0.4 s.
        #expect(clock.sleeps.map { ($0 * 1000).rounded() } == [100, 200])
        #expect(try times("/v1/models").count == 3)
    }

    @Test func retriesGiveUpAfterMaxRetriesWithTheServersMessage() async throws {
        try server.inject([["path": "/v1/models", "kind": "status", "status": 502, "count": 3]])
        do {
            _ = try await get(client(settings(["maxRetries": 2])))
            Issue.record("expected an error")
        } catch let error as HTTPError {
            #expect(error.code == .status(502))
            #expect(error.message == "the server answered 502: injected 502 (gave up after 3 attempts)")
        }
    }

    @Test func aStalledResponseTimesOutAndIsRetried() async throws {
        // Wide margins, so a busy machine cannot make the answered retry look stalled too: the
        // first answer would take 60 s, the timeout is 3 s, the retry is answered at once.
        try server.inject([["path": "/v1/models", "kind": "stall", "seconds": 60, "count": 1]])
        let response = try await get(client(settings(["timeout": 3])))
        #expect(response.status == 200)
        #expect(try times("/v1/models").count == 2)
    }

    @Test func aCancelledRequestIsAbortedNotRetriedOrWaitedOut() async throws {
        // Held by the server until released: only the cancellation can end it before the timeout.
        try server.inject([["path": "/v1/models", "kind": "hold", "count": 1]])
        defer { try? server.release() }
        let held = client(settings(["timeout": 60, "maxRetries": 0]))
        let request = Task { try await get(held) }
        #expect(try await eventually { try !times("/v1/models").isEmpty })
        request.cancel()
        // Without the abort, the transfer ends in the 60-s timeout as an HTTPError.
        await #expect(throws: CancellationError.self) { _ = try await request.value }
    }

    @Test func aTruncatedBodyIsRetried() async throws {
        try server.inject([["path": "/v1/models", "kind": "truncate", "count": 1]])
        #expect(try await get(client(settings())).status == 200)
        #expect(try times("/v1/models").count == 2)
    }

    @Test func invalidJSONIsAnErrorNamingWhatCameBack() async throws {
        try server.inject([["path": "/v1/chat/completions", "kind": "invalid-json", "count": 1]])
        let connection = try OpenAIConnection(settings: settings(), context: testContext())
        let response = try await connection.postJSON("chat/completions", ["model": "m", "messages": []])
        #expect(throws: HTTPError.self) { try OpenAIConnection.object(response) }
        do { _ = try OpenAIConnection.object(response) } catch let e as HTTPError {
            #expect(e.message == "the server's answer is not a JSON object: <html>not json</html>")
        }
    }

    @Test func a401IsNotRetriedAndTheKeyNeverShows() async throws {
        let key = "sk-canary-\(UUID().uuidString)"
        do {
            _ = try await get(client(settings(), key: key))
            Issue.record("expected an error")
        } catch let error as HTTPError {
            #expect(error.code == .status(401))
            #expect(!error.message.contains(key))
            #expect(error.message.hasPrefix("the server answered 401: Incorrect API key provided"))
        }
        #expect(try times("/v1/models").count == 1)
    }

    @Test func insufficientQuotaIsNotRetried() async throws {
        try server.inject([["path": "/v1/models", "kind": "quota", "count": 1]])
        do {
            _ = try await get(client(settings()))
            Issue.record("expected an error")
        } catch let error as HTTPError {
            #expect(error.code == .quota)
        }
        #expect(try times("/v1/models").count == 1)
    }

    @Test func aRequestsPerMinuteLimitSpacesRequests() async throws {
        let clock = ManualClock()
        let c = client(settings(["requestsPerMinute": 600]), clock: clock)
        for _ in 0..<6 { _ = try await get(c) }
        #expect(try times("/v1/models").count == 6)
        // 600 a minute: one every 0.1 s; the first goes at once.
        #expect(clock.sleeps.map { ($0 * 1000).rounded() } == [100, 100, 100, 100, 100])
    }
}

/// The client's retry and rate-limit logic over a scripted transport: no server, no real time.
@Suite struct HTTPClientLogicTests {
    func settings(_ extra: [String: JSONValue] = [:]) -> HTTPSettings {
        var values: [String: JSONValue] = ["baseURL": "http://127.0.0.1:9/v1", "backoff": 1, "maxRetries": 3]
        values.merge(extra) { $1 }
        return HTTPSettings(
            StageOptions(
                stageID: "t", path: "p", baseDirectory: URL(fileURLWithPath: "/"), values: values,
                specs: HTTPSettings.options), environment: [:])
    }

    func send(
        _ script: [ScriptedTransport.Step], _ settings: HTTPSettings, clock: ManualClock = ManualClock()
    ) async throws -> (HTTPResponse, ScriptedTransport) {
        let transport = ScriptedTransport(script, clock: clock)
        let client = HTTPClient(
            settings: settings, apiKey: "sk-x", recording: nil, transport: transport, clock: clock, random: { 0.5 })
        return (try await client.send(HTTPRequest(method: "GET", url: client.url("models"))), transport)
    }

    @Test func theBaseURLComesFromTheSpecElseTheEnvironmentElseOpenAI() {
        func base(_ values: [String: JSONValue], _ env: [String: String]) -> String {
            HTTPSettings(
                StageOptions(
                    stageID: "t", path: "p", baseDirectory: URL(fileURLWithPath: "/"), values: values,
                    specs: HTTPSettings.options), environment: env
            ).baseURL
        }
        #expect(base(["baseURL": "http://a/v1/"], ["OPENAI_BASE_URL": "http://b/v1"]) == "http://a/v1")
        #expect(base([:], ["OPENAI_BASE_URL": "http://b/v1"]) == "http://b/v1")
        #expect(base([:], [:]) == "https://api.openai.com/v1")
    }

    @Test func aBrokenConnectionIsRetriedWithBackoffThenSucceeds() async throws {
        let clock = ManualClock()
        let (response, transport) = try await send(
            [
                .fail(HTTPError(.connection, "reset")), .fail(HTTPError(.timeout, "slow")),
                .respond(ScriptedTransport.models),
            ],
            settings(), clock: clock)
        #expect(response.status == 200)
        #expect(clock.sleeps == [0.5, 1.0])
        #expect(transport.requests.map(\.time) == [1000, 1000.5, 1001.5])
        // The key and the provider's limits go with every attempt.
        #expect(
            transport.requests.allSatisfy {
                $0.header("authorization") == "Bearer sk-x" && $0.request.connectTimeout == settings().connectTimeout
            })
    }

    @Test func backoffIsCappedAndRetryAfterWins() async throws {
        let clock = ManualClock()
        let busy = ScriptedTransport.json(503, #"{"error":{"message":"busy"}}"#)
        let limited = ScriptedTransport.json(429, #"{"error":{"message":"slow down"}}"#, headers: ["retry-after": "7"])
        _ = try await send(
            [.respond(busy), .respond(busy), .respond(busy), .respond(limited), .respond(ScriptedTransport.models)],
            settings(["maxRetries": 5, "backoff": 10]), clock: clock)
        // Half of 10, 20, then of the 30-s cap (not 40); then the server's own 7 s.
        #expect(clock.sleeps == [5, 10, 15, 7])
    }

    @Test func aClientErrorIsNotRetriedAndGivesTheServersMessage() async throws {
        let clock = ManualClock()
        await #expect(throws: HTTPError(.status(400), "the server answered 400: bad field")) {
            _ = try await send(
                [.respond(ScriptedTransport.json(400, #"{"error":{"message":"bad field"}}"#))], settings(), clock: clock
            )
        }
        #expect(clock.sleeps.isEmpty)
    }
}

/// Which category each HTTP failure falls in: what decides serve's status and a run's exit.
@Suite struct HTTPFailureCategoryTests {
    @Test func aProviderThatCannotServeIsUnavailableAndABrokenAnswerIsUpstreamNeverBadInput() {
        // Down, stalled, out of quota, refusing the key, rate-limited or failing: retry later (503).
        let unavailable: [HTTPFailure] =
            [.connection, .timeout, .quota, .notRecorded]
            + [401, 403, 404, 408, 429, 500, 502, 503].map { .status($0) }
        for failure in unavailable { #expect(failure.category == .unavailable, "\(failure)") }
        // An answer that breaks the API, or a refusal of the request made: the provider's fault (502).
        for failure: HTTPFailure in [.invalidResponse, .status(400), .status(409), .status(422)] {
            #expect(failure.category == .upstream, "\(failure)")
        }
        // Only a request voxpipe will not send is the input's fault; either way one item fails (exit 1).
        #expect(HTTPFailure.invalidRequest.category == .badInput)
        #expect(HTTPFailure.invalidResponse.category.exitCode == VoxFailure.badInput.exitCode)
    }
}
