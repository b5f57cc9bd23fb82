import Foundation
import Testing
import VoxCore
import VoxTestSupport

@testable import VoxServe

/// A client's key (`--allow-client-keys`) is a secret like the server's own: one that would
/// inject a header is refused, and a provider that echoes it gets it into no answer (issue 27,
/// finding 3).
extension ServeFailureTests {
    @Test func aClientKeyWithALineBreakIs400AndNeverSent() async throws {
        let fake = try FakeOpenAIServer(key: "sk-server")
        let server = try await ServerFixture.start(spec: try spec(fake)) {
            $0.allowClientKeys = true
        }
        let key = "sk-client\r\nX-Injected: canary-header"
        let answer = try await server.post("\(api)/process-text", ["text": "Hello there", "apiKey": key])
        #expect(answer.status == 400)
        let error = try #require(answer.json["error"] as? String)
        #expect(error.contains("the API key in the request's apiKey holds a control character"), "\(error)")
        #expect(!error.contains("sk-client") && !error.contains("canary-header"))
        #expect(try fake.log().filter { ($0["path"] as? String) == "/v1/chat/completions" }.isEmpty)
    }

    @Test func aProviderEchoingTheClientKeyGetsItIntoNoAnswer() async throws {
        let client = "sk-client-\(UUID().uuidString)"
        let fake = try FakeOpenAIServer(key: client)
        let server = try await ServerFixture.start(spec: try spec(fake)) {
            $0.allowClientKeys = true
        }
        try fake.inject([["path": "/v1/chat/completions", "kind": "echo", "count": 10]])
        let answer = try await server.post("\(api)/process-text", ["text": "Hello there", "apiKey": client])
        #expect(answer.status == 200, "\(answer.json)")
        let reply = try #require(answer.json["reply"] as? String)
        #expect(reply.contains("Bearer [redacted]"), "\(reply)")
        let whole = try JSONSerialization.data(withJSONObject: answer.json)
        #expect(whole.range(of: Data(client.prefix(16).utf8)) == nil)
    }
}
