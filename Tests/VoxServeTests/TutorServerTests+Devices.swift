import Foundation
import Testing
import VoxCore
import VoxRequest

@testable import VoxServe

/// Sessions per device without changing the app (issue 24): join-with-bot sets a session cookie,
/// the calls that carry it talk on that session, one device's stop ends only its own, and turns
/// of one session run one at a time, in order.
extension TutorServerTests {
    /// A device: the server and a cookie jar of its own, as URLSession keeps one.
    final class Device: @unchecked Sendable {
        let server: ServerFixture
        let api: String
        var cookie: String?

        init(_ server: ServerFixture, api: String) {
            self.server = server
            self.api = api
        }

        func call(_ method: String, _ route: String, _ object: [String: Any] = [:]) async throws -> [String: Any] {
            let body = method == "GET" ? Data() : try JSONSerialization.data(withJSONObject: object)
            let answer = try await server.call(
                method, "\(api)/\(route)", body: body, headers: cookie.map { [("Cookie", $0)] } ?? [])
            #expect(answer.status == 200, "\(route): \(answer.json)")
            if let set = answer.headers["set-cookie"] {
                let pair = String(set.prefix { $0 != ";" })
                cookie = set.contains("Max-Age=0") ? nil : pair
            }
            return answer.json
        }

        func say(_ text: String) async throws -> String {
            try await call("POST", "process-text", ["text": text])["reply"] as? String ?? ""
        }
    }

    static let greetings = [
        "Hallo! Schön, dass du da bist. Wie geht es dir heute?",
        "Guten Tag! Lass uns ein bisschen Deutsch üben. Wie heißt du?",
    ]

    @Test func twoDevicesKeepTheirConversationsApartAndStopEndsOnlyItsOwn() async throws {
        let server = try await StandInTutor.start()
        let a = Device(server, api: api), b = Device(server, api: api)
        let joinedA = try await a.call("POST", "join-with-bot", ["userId": "anna"])
        let channelA = try #require(joinedA["channel"] as? String)
        let cookie = try #require(try await server.post("\(api)/join-with-bot", ["userId": "x"]).headers["set-cookie"])
        #expect(cookie.wholeMatch(of: /voxpipe_session=[0-9a-f]{32}; Path=\/api\/agora; HttpOnly; SameSite=Lax/) != nil)
        let joinedB = try await b.call("POST", "join-with-bot", ["userId": "ben"])
        let channelB = try #require(joinedB["channel"] as? String)
        #expect(a.cookie != nil && b.cookie != nil && a.cookie != b.cookie)

        #expect(try await a.say("Hallo!") == Self.greetings[0])
        #expect(try await b.say("Hallo!") == Self.greetings[0])
        #expect(try await a.say("Hallo!") == Self.greetings[1])
        #expect(try await a.call("GET", "status")["channel"] as? String == channelA)
        #expect(try await b.call("GET", "status")["channel"] as? String == channelB)

        let stopped = try await b.call("POST", "stop")
        #expect(stopped["previousChannel"] as? String == channelB)
        #expect(b.cookie == nil)
        let statusA = try await a.call("GET", "status")
        #expect(statusA["isRunning"] as? Bool == true && statusA["channel"] as? String == channelA)
        // A's conversation goes on where it was: its third turn.
        #expect(try await a.say("Hallo!") == "Hallo! Schön, dass du da bist. Wie geht es dir heute?")
        #expect(try await a.call("GET", "status")["channel"] as? String == channelA)
    }

    @Test func aSessionsTurnsWaitForTheOneBeforeAndRunInTheOrderTheyCame() async throws {
        // Two places, so both turns are admitted and wait on the session.
        let fixture = try await StandInTutor.start { $0.concurrency = 2 }
        let device = Device(fixture, api: api)
        _ = try await device.call("POST", "join-with-bot", ["userId": "anna"])
        let session = try #require(device.cookie?.split(separator: "=").last.map(String.init))
        // Hold the session's turn, as a long turn would; then two turns come, one after the other.
        let scheduler = fixture.server.scheduler
        let (release, go) = AsyncStream.makeStream(of: Void.self)
        let held = Task {
            try await scheduler.run(session: session, refused: TutorServer.overloaded) {
                for await _ in release { break }
            }
        }
        while scheduler.counts.running == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let ended = Conversation()
        var turns: [Task<String, any Error>] = []
        for n in 1...2 {
            turns.append(
                Task {
                    defer { ended.append(ConversationTurn(user: String(n), assistant: "")) }
                    return try await device.say("Hallo!")
                })
            // Until it queues (no sleeping); a turn that does not wait ends instead, and the test fails.
            while scheduler.waiting(in: session) < n {
                try #require(ended.turns.isEmpty, "turn \(n) ran while the session's turn was held")
                // Gives the pool thread back while it looks again (a yield alone can keep it).
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        #expect(ended.turns.isEmpty)
        go.yield()
        try await held.value
        #expect(try await turns[0].value == Self.greetings[0])
        #expect(try await turns[1].value == Self.greetings[1])
    }
}
