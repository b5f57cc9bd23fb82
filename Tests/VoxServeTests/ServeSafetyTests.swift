import Foundation
import Synchronization
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxServe

/// The attacks of a hostile client on 127.0.0.1 (issue 36), each against a real server: sessions
/// that belong to whoever holds their secret, joins that cannot flood them out, and requests
/// bounded in time and size before they hold anything. None transcribes: the stand-in tutor
/// serves them.
@Suite struct ServeSafetyTests {
    let api = "/api/agora"
    static let unknownName = "Das hast du mir noch nicht gesagt. Wie heißt du?"
    static let knowsAnna = "Du heißt Anna! Das habe ich mir gemerkt."

    typealias Device = TutorServerTests.Device

    /// A client that sends `cookie` (or none) as it is, whatever the server sets.
    func say(_ server: ServerFixture, _ text: String, cookie: String?) async throws -> [String: Any] {
        let answer = try await server.call(
            "POST", "\(api)/process-text", body: JSONSerialization.data(withJSONObject: ["text": text]),
            headers: cookie.map { [("Cookie", $0)] } ?? [])
        #expect(answer.status == 200, "\(answer.json)")
        return answer.json
    }

    @Test func noCookieAForgedOneOrAnotherDevicesCannotReadChangeOrEndALearnersSession() async throws {
        let server = try await StandInTutor.start()
        let anna = Device(server, api: api)
        let channel = try #require(
            try await anna.call("POST", "join-with-bot", ["userId": "anna"])["channel"] as? String)
        _ = try await anna.say("Ich heiße Anna")
        let forged = "voxpipe_session=" + Sessions.makeID()

        for cookie in [nil, forged, "voxpipe_session=1", "voxpipe_session=\(channel)"] {
            // Cannot read her conversation…
            #expect(try await say(server, "Wie heiße ich?", cookie: cookie)["reply"] as? String == Self.unknownName)
            // …nor change it, nor end it, nor see it.
            _ = try await say(server, "Ich heiße Mallory", cookie: cookie)
            let stopped = try await server.call("POST", "\(api)/stop", headers: cookie.map { [("Cookie", $0)] } ?? [])
            #expect(stopped.json["previousChannel"] is NSNull, "\(stopped.json)")
            let status = try await server.call("GET", "\(api)/status", headers: cookie.map { [("Cookie", $0)] } ?? [])
            #expect(status.json["channel"] is NSNull && status.json["isRunning"] as? Bool == false, "\(status.json)")
        }
        // Another device with a session of its own.
        let ben = Device(server, api: api)
        _ = try await ben.call("POST", "join-with-bot", ["userId": "ben"])
        #expect(try await ben.say("Wie heiße ich?") == Self.unknownName)
        _ = try await ben.call("POST", "stop")

        #expect(try await anna.say("Wie heiße ich?") == Self.knowsAnna)
        let status = try await anna.call("GET", "status")
        #expect(status["channel"] as? String == channel && status["isRunning"] as? Bool == true)
    }

    @Test func aTurnWithoutACookieGetsAnAnonymousSessionItsCookieContinues() async throws {
        let server = try await StandInTutor.start()
        let device = Device(server, api: api)
        _ = try await device.say("Ich heiße Anna")
        let cookie = try #require(device.cookie)
        #expect(cookie.wholeMatch(of: /voxpipe_session=[0-9a-f]{32}/) != nil, "\(cookie)")
        #expect(try await device.say("Wie heiße ich?") == Self.knowsAnna)
        // It is no bot in a channel: status shows nothing.
        #expect(try await device.call("GET", "status")["isRunning"] as? Bool == false)
    }

    @Test func singleLearnerModeSharesTheLastJoinedSessionWithTurnsWithoutACookie() async throws {
        let server = try await StandInTutor.start { $0.singleLearner = true }
        let kiosk = Device(server, api: api)
        let channel = try #require(
            try await kiosk.call("POST", "join-with-bot", ["userId": "anna"])["channel"] as? String)
        _ = try await kiosk.say("Ich heiße Anna")
        #expect(try await say(server, "Wie heiße ich?", cookie: nil)["reply"] as? String == Self.knowsAnna)
        let status = try await server.call("GET", "\(api)/status")
        #expect(status.json["channel"] as? String == channel)
    }

    @Test func aThousandRapidJoinsLeaveAnActiveLearnersSessionWorking() async throws {
        for rateLimited in [true, false] {
            let server = try await StandInTutor.start { settings in
                // A burst of ten and (nearly) nothing after it, whatever the time the flood takes.
                settings.joinsPerMinute = 0.001
                // Without the rate limit, the session cap alone must hold: a small one, quickly full.
                if !rateLimited {
                    settings.joinsPerMinute = 1e9
                    settings.joinBurst = 1_000_000
                    settings.maxConversations = 20
                }
            }
            let anna = Device(server, api: api)
            _ = try await anna.call("POST", "join-with-bot", ["userId": "anna"])
            _ = try await anna.say("Ich heiße Anna")
            var statuses: [Int: Int] = [:]
            for n in 0..<1000 {
                let joined = try await server.post("\(api)/join-with-bot", ["userId": "flood\(n)"])
                statuses[joined.status, default: 0] += 1
            }
            if rateLimited {
                #expect(statuses[200] == 9 && statuses[429] == 991, "\(statuses)")
            } else {
                #expect(statuses[200] == 19 && statuses[503] == 981, "\(statuses)")
            }
            #expect(try await anna.say("Wie heiße ich?") == Self.knowsAnna, "rate limited: \(rateLimited)")
        }
    }

    @Test func fortyTricklingConnectionsLeaveTurnsAdmitted() async throws {
        // Three places in all: forty slow uploads would take every one if a place were taken on arrival.
        let server = try await StandInTutor.start {
            $0.concurrency = 1
            $0.queue = 2
        }
        let body = #"{"text": "Hallo, wie geht es dir heute?"}"#
        var slow: [RawConnection] = []
        for _ in 0..<40 {
            let connection = try RawConnection(port: server.port)
            connection.send(
                "POST \(api)/process-text HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n" + body.prefix(5))
            slow.append(connection)
        }
        // Every one of them has sent its head: a turn behind them still gets its place.
        let turn = try await server.post("\(api)/process-text", ["text": "Hallo!"])
        #expect(turn.status == 200, "\(turn.json)")
        #expect(server.server.admission.held == 0)
        withExtendedLifetime(slow) {}
    }

    @Test func anOversizedContentLengthIsRefusedBeforeTheBodyIsSentOnEveryRoute() async throws {
        let server = try await StandInTutor.start { $0.maxBodyBytes = 1 << 20 }
        for (route, type) in [
            ("\(api)/process-audio", "application/json"),
            ("/v1/audio/transcriptions", "multipart/form-data; boundary=b"),
        ] {
            let connection = try RawConnection(port: server.port)
            connection.send(
                "POST \(route) HTTP/1.1\r\nHost: x\r\nContent-Type: \(type)\r\nContent-Length: 1000000000\r\n\r\n")
            let answer = try #require(connection.readAnswer(), "\(route): no answer before the body")
            #expect(answer.status == 413, "\(route): \(answer.head)")
            #expect(answer.body.contains("larger than the 1048576-byte limit"), "\(route)")
        }
    }

    @Test(.waitsOnTheClock("the idle timeout"))
    func anIdleConnectionIsClosedAfterTheIdleTimeout() async throws {
        let server = try await StandInTutor.start { $0.idleTimeout = 0.3 }
        let connection = try RawConnection(port: server.port)
        // Nothing sent: the server closes it (a read returns the end, not the 60-s timeout).
        #expect(connection.readToClose() == "")
    }

    @Test(.waitsOnTheClock("the header deadline"))
    func aTrickledHeadIsCutAtTheHeaderDeadlineHoweverOftenBytesCome() async throws {
        let server = try await StandInTutor.start {
            $0.headerTimeout = 0.5
            $0.idleTimeout = 60
        }
        let connection = try RawConnection(port: server.port)
        connection.send("GET /healthz HTTP/1.1\r\n")
        // A byte every 100 ms, as long as the connection is open, keeps an idle timer alive
        // forever; the head's deadline does not move.
        let trickle = Task.detached {
            while !Task.isCancelled, connection.send("X") { try? await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(connection.readToClose() != nil, "still open after the receive timeout")
        trickle.cancel()
    }

    @Test(.waitsOnTheClock("the body deadline"))
    func aHalfSentBodyGets408AtTheBodyDeadlineAndHoldsNoPlace() async throws {
        let server = try await StandInTutor.start { $0.bodyTimeout = 0.3 }
        let connection = try RawConnection(port: server.port)
        connection.send(
            "POST \(api)/process-text HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: 100\r\n\r\n{\"text\":")
        #expect(server.server.admission.held == 0)
        let answer = try #require(connection.readAnswer())
        #expect(answer.status == 408, "\(answer.head)")
        #expect(connection.readToClose() != nil)
    }

    @Test func healthzIsAnsweredOnTheEventLoopWhileEveryPoolThreadIsBusy() async throws {
        let server = try await StandInTutor.start()
        let port = server.port
        // Every thread of Swift's cooperative pool blocked until the health check has its answer:
        // a route handler could not run now; the gate, on the event loop, can.
        let answered = DispatchSemaphore(value: 0)
        let width = ProcessInfo.processInfo.activeProcessorCount
        final class Answer: @unchecked Sendable { var value: (status: Int, head: String, body: String)? }
        let result = Answer()
        let prober = Thread {
            if let connection = try? RawConnection(port: port) {
                connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                let answer = connection.readAnswer()
                result.value = answer
            }
            for _ in 0..<width { answered.signal() }
        }
        let blockers = (0..<width).map { _ in Task.detached { answered.wait() } }
        prober.start()
        for blocker in blockers { await blocker.value }
        let answer = try #require(result.value, "no answer within the receive timeout")
        #expect(answer.status == 200 && answer.body.contains("\"ok\""), "\(answer)")
    }

    @Test func aLongUploadToTheTranscriptionRouteIsRefusedFromItsHeader() async throws {
        let server = try await StandInTutor.start { $0.maxClipSeconds = 2 }
        let wav = try Data(contentsOf: packageRoot.appendingPathComponent("Samples/speech-en-22k-mono.wav"))
        let answer = try await TutorServerTests().transcribe(server, [], file: wav)
        #expect(answer.status == 422, "\(answer.body)")
        #expect(answer.body.contains("over the 2 s this server takes"), "\(answer.body)")
    }
}
