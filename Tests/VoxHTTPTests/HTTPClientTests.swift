import Foundation
import Testing
import VoxCore
import VoxTestSupport
@testable import VoxHTTP

/// The fault matrix, against a real server on 127.0.0.1.
@Suite(.serialized) struct HTTPClientTests {
    let server: FakeOpenAIServer

    init() throws { server = try FakeOpenAIServer(key: "sk-test-\(UUID().uuidString.prefix(8))") }

    func settings(_ extra: [String: JSONValue] = [:]) -> HTTPSettings {
        var values: [String: JSONValue] = ["baseURL": .string(server.baseURL), "backoff": 0.2, "maxRetries": 3]
        values.merge(extra) { $1 }
        return HTTPSettings(StageOptions(stageID: "t", path: "p", baseDirectory: URL(fileURLWithPath: "/"), values: values, specs: HTTPSettings.options), environment: [:])
    }

    final class Waits: @unchecked Sendable {
        let lock = NSLock()
        var values: [Double] = []
        func add(_ v: Double) { lock.withLock { values.append(v) } }
    }

    /// A client whose waits are recorded (and really slept) and whose jitter is fixed at half.
    func client(_ settings: HTTPSettings, key: String? = nil, waits: Waits = Waits()) -> HTTPClient {
        HTTPClient(settings: settings, apiKey: key ?? server.key, recording: nil,
                   sleep: { waits.add($0); try await Task.sleep(nanoseconds: UInt64($0 * 1e9)) }, random: { 0.5 })
    }

    func get(_ client: HTTPClient) async throws -> HTTPResponse {
        try await client.send(HTTPRequest(method: "GET", url: client.url("models")))
    }

    func times(_ path: String) throws -> [Double] {
        try server.log().filter { $0["path"] as? String == path }.compactMap { $0["time"] as? Double }
    }

    @Test func a429WithRetryAfterIsWaitedOutThenSucceeds() async throws {
        try server.inject([["path": "/v1/models", "kind": "status", "status": 429, "retryAfter": 1, "count": 1]])
        let waits = Waits()
        let response = try await get(client(settings(), waits: waits))
        #expect(response.status == 200)
        #expect(waits.values == [1])
        let t = try times("/v1/models")
        #expect(t.count == 2)
        // The wait the client chose is exact (above); on the clock it is at least that long.
        // (An upper bound on wall time belongs in make bench: a loaded CI machine stretches it.)
        #expect(t[1] - t[0] >= 1.0, "waited \(t[1] - t[0]) s")
    }

    @Test func serverErrorsAreRetriedWithExponentialBackoffAndFullJitter() async throws {
        try server.inject([["path": "/v1/models", "kind": "status", "status": 500, "count": 1], ["path": "/v1/models", "kind": "status", "status": 503, "count": 1]])
        let waits = Waits()
        #expect(try await get(client(settings(), waits: waits)).status == 200)
        // Jitter fixed at 0.5: half of 0.2 s, then half of 0.4 s.
        #expect(waits.values.map { ($0 * 1000).rounded() } == [100, 200])
        let t = try times("/v1/models")
        #expect(t.count == 3)
        #expect(t[1] - t[0] >= 0.1 && t[2] - t[1] >= 0.2)
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
        try server.inject([["path": "/v1/models", "kind": "stall", "seconds": 4, "count": 1]])
        let response = try await get(client(settings(["timeout": 1])))
        #expect(response.status == 200)
        #expect(try times("/v1/models").count == 2)
    }

    @Test func aTruncatedBodyIsRetried() async throws {
        try server.inject([["path": "/v1/models", "kind": "truncate", "count": 1]])
        #expect(try await get(client(settings())).status == 200)
        #expect(try times("/v1/models").count == 2)
    }

    @Test func invalidJSONIsAnErrorNamingWhatCameBack() async throws {
        try server.inject([["path": "/v1/chat/completions", "kind": "invalid-json", "count": 1]])
        let connection = try OpenAIConnection(settings: settings(), recording: nil)
        let response = try await connection.postJSON("chat/completions", ["model": "m", "messages": []])
        #expect(throws: HTTPError.self) { try OpenAIConnection.object(response) }
        do { _ = try OpenAIConnection.object(response) } catch let e as HTTPError { #expect(e.message == "the server's answer is not a JSON object: <html>not json</html>") }
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
        let c = client(settings(["requestsPerMinute": 600]))
        for _ in 0..<6 { _ = try await get(c) }
        let t = try times("/v1/models")
        #expect(t.count == 6)
        // 600 a minute: one every 0.1 s, so five gaps take at least 0.45 s (within 10%).
        #expect(t[5] - t[0] >= 0.45, "six requests in \(t[5] - t[0]) s")
    }

    @Test func theBaseURLComesFromTheSpecElseTheEnvironmentElseOpenAI() {
        func base(_ values: [String: JSONValue], _ env: [String: String]) -> String {
            HTTPSettings(StageOptions(stageID: "t", path: "p", baseDirectory: URL(fileURLWithPath: "/"), values: values, specs: HTTPSettings.options), environment: env).baseURL
        }
        #expect(base(["baseURL": "http://a/v1/"], ["OPENAI_BASE_URL": "http://b/v1"]) == "http://a/v1")
        #expect(base([:], ["OPENAI_BASE_URL": "http://b/v1"]) == "http://b/v1")
        #expect(base([:], [:]) == "https://api.openai.com/v1")
    }
}
