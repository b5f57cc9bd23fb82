import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxServe

/// The tutor app's join carries `openAiApiKey`: without `--allow-client-keys` the key is ignored
/// (the server's own key answers), with one warning line that names the field, never the key
/// (issue 24).
extension ServeFailureTests {
    @Test func aClientKeyIsIgnoredWithOneWarningThatNeverShowsIt() async throws {
        let fake = try FakeOpenAIServer(key: "sk-server")
        let logs = CapturedLogs()
        let server = try await ServerFixture.start(spec: try spec(fake), logs: logs)
        let key = "sk-client-\(UUID().uuidString)"
        let joined = try await server.post("\(api)/join-with-bot", ["userId": "u1", "openAiApiKey": key])
        #expect(joined.status == 200, "\(joined.json)")
        let turn = try await server.post("\(api)/process-text", ["text": "Hello there", "apiKey": key])
        #expect(turn.status == 200, "\(turn.json)")
        // The fake takes only the server's key: the client's was not sent.
        let chats = try fake.log().filter { ($0["path"] as? String) == "/v1/chat/completions" }
        #expect(chats.map { $0["authorized"] as? Bool } == [true])
        let warnings = logs.records.filter { $0.level == .warning && $0.message.contains("API key") }
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.message.contains("openAiApiKey") == true, "\(warnings)")
        #expect(!logs.records.contains { "\($0.message) \($0.metadata)".contains(key) })
    }
}

extension ServeFailureTests {
    @Test func withAllowClientKeysAJoinsKeyServesThatSessionOnly() async throws {
        let fake = try FakeOpenAIServer(key: "sk-server")
        let server = try await ServerFixture.start(spec: try spec(fake)) { $0.allowClientKeys = true }
        let key = "sk-client-\(UUID().uuidString)"
        var cookies: [String] = []
        for body: [String: Any] in [["userId": "a", "openAiApiKey": key], ["userId": "b"]] {
            let joined = try await server.post("\(api)/join-with-bot", body)
            cookies.append(String(try #require(joined.headers["set-cookie"]).prefix { $0 != ";" }))
        }
        let body = try JSONSerialization.data(withJSONObject: ["text": "Hello there"])
        let a = try await server.call("POST", "\(api)/process-text", body: body, headers: [("Cookie", cookies[0])])
        let b = try await server.call("POST", "\(api)/process-text", body: body, headers: [("Cookie", cookies[1])])
        // The fake refuses the client's key (503: the provider will not serve it): a's turn went
        // with it, b's with the server's.
        #expect(a.status == 503 && b.status == 200, "\(a.json) \(b.json)")
        #expect(!(a.json["error"] as? String ?? "").contains(key))
        let chats = try fake.log().filter { ($0["path"] as? String) == "/v1/chat/completions" }
        #expect(chats.map { $0["authorized"] as? Bool } == [false, true])
    }
}
