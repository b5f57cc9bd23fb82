import Foundation
import Testing
import VoxCore
import VoxTestSupport

@testable import VoxServe

/// The tutor API against a real server on 127.0.0.1, with a real HTTP client: the shipped lesson
/// tutor where a test transcribes (it needs the Whisper models), the stand-in tutor where none does.
@Suite struct TutorServerTests {
    let api = "/api/agora"

    @Test(.startsProcess("espeak-ng and ffprobe"))
    func processTextAnswersWithTheRulesReplyAndAnMP3OfIt() async throws {
        let server = try await SharedServer.speaking.value
        let answer = try await server.post(
            "\(api)/process-text", ["text": "Wie geht es dir?", "channel": "text-\(UUID().uuidString)"])
        #expect(answer.status == 200)
        #expect(answer.headers["content-type"] == "application/json")
        #expect(Set(answer.json.keys) == ["success", "reply", "audio"])
        #expect(answer.json["success"] as? Bool == true)
        #expect(answer.json["reply"] as? String == "Mir geht es gut, danke der Nachfrage! Und wie geht es dir?")
        let audio = try #require(Data(base64Encoded: answer.json["audio"] as? String ?? ""))
        let probed = try probe(audio, ext: "mp3")
        #expect(probed.codec == "mp3")
        // espeak-ng at 150 words a minute: ten words take some seconds.
        #expect(probed.seconds > 2 && probed.seconds < 10, "\(probed.seconds) s")
    }

    @Test(.needs(.whisperModels), .startsProcess("ffmpeg and ffprobe"))
    func processAudioTakesTheClipAsOneTurnWhateverMimeTypeIsClaimed() async throws {
        let server = try await SharedServer.tutor.value
        let clip = try Data(contentsOf: packageRoot.appendingPathComponent("Samples/speech-de.m4a"))
        let answer = try await server.post(
            "\(api)/process-audio",
            ["audio": clip.base64EncodedString(), "mimeType": "audio/wav", "channel": "audio-\(UUID().uuidString)"])
        #expect(answer.status == 200, "\(answer.json)")
        #expect(Set(answer.json.keys) == ["success", "transcription", "reply", "audio"])
        let transcription = try #require(answer.json["transcription"] as? String)
        #expect(transcription.hasPrefix("Guten Morgen"), "\(transcription)")
        #expect(answer.json["reply"] as? String == "Mir geht es gut, danke der Nachfrage! Und wie geht es dir?")
        let audio = try #require(Data(base64Encoded: answer.json["audio"] as? String ?? ""))
        #expect(try probe(audio, ext: "mp3").codec == "mp3")
    }

    @Test func joinStatusAndStopFollowTheDevicesSession() async throws {
        let server = try await StandInTutor.start()
        let before = try await server.call("GET", "\(api)/status")
        #expect(before.status == 200)
        #expect(before.json["isRunning"] as? Bool == false)
        #expect(before.json["channel"] is NSNull && before.json["startedAt"] is NSNull)

        let device = Device(server, api: api)
        let startedAfter = Date()
        let joined = try await device.call("POST", "join-with-bot", ["userId": "u17", "userName": "Anna"])
        let answeredBefore = Date()
        #expect(Set(joined.keys) == ["success", "appId", "channel", "token", "message"])
        #expect(joined["appId"] as? String == "test-app")
        let channel = try #require(joined["channel"] as? String)
        #expect(channel.wholeMatch(of: /tutor-u17-\d{13}/) != nil, "\(channel)")
        let millis = Int64(channel.split(separator: "-").last.map(String.init) ?? "") ?? 0
        // Named for when it was made: between the call and its answer.
        #expect(Double(millis) / 1000 >= startedAfter.timeIntervalSince1970.rounded(.down))
        #expect(Double(millis) / 1000 <= answeredBefore.timeIntervalSince1970)

        let running = try await device.call("GET", "status")
        #expect(running["isRunning"] as? Bool == true)
        #expect(running["channel"] as? String == channel)
        let startedAt = try #require(running["startedAt"] as? String)
        #expect(startedAt.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(startedAt)")

        let stopped = try await device.call("POST", "stop")
        #expect(Set(stopped.keys) == ["success", "message", "previousChannel"])
        #expect(stopped["previousChannel"] as? String == channel)
        #expect(try await device.call("GET", "status")["isRunning"] as? Bool == false)
        #expect(try await device.call("POST", "stop")["previousChannel"] is NSNull)
    }

    @Test func theTutorRemembersEachSessionsConversationApart() async throws {
        let server = try await SharedServer.standIn.value
        let a = Device(server, api: api), b = Device(server, api: api)
        var replies: [String] = []
        for device in [a, a, b] { replies.append(try await device.say("Hallo!")) }
        // The greeting rule answers turn N with its reply N: a second turn on a gets the second.
        #expect(replies[0] == "Hallo! Schön, dass du da bist. Wie geht es dir heute?")
        #expect(replies[1] == "Guten Tag! Lass uns ein bisschen Deutsch üben. Wie heißt du?")
        #expect(replies[2] == replies[0])
    }

    @Test func everyFailureIsTheJSONErrorShapeWithItsStatus() async throws {
        let server = try await SharedServer.standIn.value
        let wav = try Data(contentsOf: packageRoot.appendingPathComponent("Samples/speech-en-22k-mono.wav"))
        let cases: [(String, String, Data, Int, String)] = [
            ("bad base64", "process-audio", try json(["audio": "not base64!"]), 400, "audio: not valid base64"),
            (
                "unknown audio", "process-audio",
                try json([
                    "audio": Data("plain text, not a recording".utf8).base64EncodedString(), "mimeType": "audio/wav",
                ]),
                415, "audio: not a known audio format (mimeType said audio/wav)"
            ),
            (
                "damaged audio", "process-audio",
                try json(["audio": Data("RIFF0000WAVEfmt garbage".utf8).base64EncodedString()]),
                422, "decode (decode): "
            ),
            ("empty body", "process-audio", Data(), 400, "empty body: expected a JSON object"),
            ("not JSON", "process-text", Data("text=hallo".utf8), 400, "the body is not valid JSON"),
            ("no text", "process-text", try json(["text": "  "]), 400, "text: expected the learner's words"),
            ("no user", "join-with-bot", try json(["userName": "Anna"]), 400, "userId: expected a non-empty string"),
            (
                "long user", "join-with-bot", try json(["userId": String(repeating: "a", count: 45)]), 400,
                "userId: at most 44 characters"
            ),
            ("not an object", "process-text", Data("[1, 2]".utf8), 400, "expected a JSON object"),
            (
                "too large", "process-audio",
                try json(["audio": Data(count: 1 << 20).base64EncodedString()]), 413,
                "the body is larger than the 1048576-byte limit"
            ),
            ("no such route", "process-video", try json([:]), 404, "no such route: POST /api/agora/process-video"),
        ]
        _ = wav
        for (name, route, body, status, message) in cases {
            let answer = try await server.call("POST", "\(api)/\(route)", body: body)
            #expect(answer.status == status, "\(name)")
            #expect(answer.json["success"] as? Bool == false, "\(name)")
            let error = answer.json["error"] as? String ?? ""
            #expect(error.hasPrefix(message), "\(name): \(error)")
            #expect(!error.contains("\n") && !error.contains("sk-client") && !error.contains("/tmp/"), "\(name)")
        }
        let metrics = try await server.text("/metrics")
        #expect(metrics.contains("voxpipe_serve_failures_total{reason=\"bad_base64\"}"))
        #expect(metrics.contains("voxpipe_serve_failures_total{reason=\"too_large\"}"))
        // The damaged audio's reason comes from the decoder's own error type, not the stage's kind.
        #expect(metrics.contains("voxpipe_serve_failures_total{reason=\"undecodable_audio\"} 1"), "\(metrics)")
        #expect(metrics.contains("voxpipe_serve_requests_total{route=\"/process-audio\",status=\"415\"}"))
    }

    @Test func healthzAndMetricsAnswerInPrometheusFormat() async throws {
        let server = try await SharedServer.standIn.value
        let health = try await server.call("GET", "/healthz")
        #expect(health.status == 200)
        #expect(health.json["success"] as? Bool == true)
        _ = try await server.post("\(api)/join-with-bot", ["userId": 7])
        let metrics = try await server.text("/metrics")
        for line in [
            "# TYPE voxpipe_serve_requests_total counter", "# TYPE voxpipe_serve_request_seconds histogram",
            "# TYPE voxpipe_serve_in_flight gauge", "# TYPE voxpipe_serve_turns_running gauge",
            "# HELP voxpipe_serve_live_sessions Live sessions open (/v1/realtime).",
            "voxpipe_serve_request_seconds_bucket{route=\"/join-with-bot\",le=\"+Inf\"}",
            "voxpipe_serve_request_seconds_count{route=\"/join-with-bot\"}",
        ] {
            #expect(metrics.contains(line), "\(line)")
        }
        // Every sample line is `name{labels} value`.
        for line in metrics.split(separator: "\n") where !line.hasPrefix("#") {
            #expect(line.wholeMatch(of: /[a-z_]+(\{[^}]*\})? [0-9.e+-]+/) != nil, "\(line)")
        }
    }

    func json(_ object: [String: Any]) throws -> Data { try JSONSerialization.data(withJSONObject: object) }
}
