import Foundation
import Testing
import VoxCore

@testable import VoxServe

/// OpenAI's transcription API on the tutor server (issue 24, item 6, first part): the same
/// recogniser as the tutor's turns, in every response format, and OpenAI's error shape.
extension TutorServerTests {
    /// A multipart/form-data body of `fields` and the clip as `file`.
    static func multipart(_ fields: [(String, String)], file: Data?) -> (body: Data, type: String) {
        let boundary = "voxpipe-test-\(UUID().uuidString)"
        var body = Data()
        for (name, value) in fields {
            body += Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
        }
        if let file {
            body += Data(
                "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"clip.m4a\"\r\n".utf8)
            body += Data("Content-Type: application/octet-stream\r\n\r\n".utf8) + file + Data("\r\n".utf8)
        }
        body += Data("--\(boundary)--\r\n".utf8)
        return (body, "multipart/form-data; boundary=\(boundary)")
    }

    func transcribe(
        _ server: ServerFixture, _ fields: [(String, String)], file: Data?
    ) async throws -> (status: Int, headers: [String: String], body: String) {
        let (body, type) = Self.multipart(fields, file: file)
        var request = HTTPRequest(
            method: "POST", url: "http://127.0.0.1:\(server.port)/v1/audio/transcriptions",
            headers: [("Content-Type", type)], body: body)
        request.timeout = 1200
        let response = try await server.client.perform(request)
        return (response.status, response.headers, String(decoding: response.body, as: UTF8.self))
    }

    @Test(.needs(.whisperModels), .startsProcess("ffmpeg"))
    func transcriptionsAnswerAsJSONTextAndVerboseJSONWithTheTutorsTranscription() async throws {
        let server = try await SharedServer.tutor.value
        let clip = try Data(contentsOf: packageRoot.appendingPathComponent("Samples/speech-de.m4a"))
        let turn = try await server.post("\(api)/process-audio", ["audio": clip.base64EncodedString()])
        let expected = try #require(turn.json["transcription"] as? String)

        let json = try await transcribe(server, [("model", "whisper-1")], file: clip)
        #expect(json.status == 200, "\(json.body)")
        let object = try JSONSerialization.jsonObject(with: Data(json.body.utf8)) as? [String: Any]
        #expect(object?["text"] as? String == expected)

        let text = try await transcribe(server, [("model", "whisper-1"), ("response_format", "text")], file: clip)
        #expect(text.body == expected + "\n")
        #expect(text.headers["content-type"]?.hasPrefix("text/plain") == true)

        // srt and vtt: through the OpenAI SDK against `voxpipe serve` (ServeCommandTests), the
        // same handler; each format is another decode of the clip.
        let verbose = try await transcribe(
            server, [("response_format", "verbose_json"), ("timestamp_granularities[]", "word")], file: clip)
        let detail = try #require(try JSONSerialization.jsonObject(with: Data(verbose.body.utf8)) as? [String: Any])
        #expect(detail["text"] as? String == expected && detail["task"] as? String == "transcribe")
        let segments = try #require(detail["segments"] as? [[String: Any]])
        #expect(!segments.isEmpty && (segments.first?["start"] as? Double ?? -1) >= 0)
        #expect(detail["words"] is [[String: Any]])
    }

    @Test func transcriptionMistakesAreOpenAIErrors() async throws {
        let server = try await SharedServer.standIn.value
        let clip = try Data(contentsOf: packageRoot.appendingPathComponent("Samples/speech-de.m4a"))
        let cases: [([(String, String)], Data?, Int, String)] = [
            ([("model", "whisper-1")], nil, 400, "file: expected the audio as a file part"),
            ([("response_format", "mp4")], clip, 400, "response_format: \"mp4\" is not one of json, text, srt, vtt"),
            ([], Data("not audio at all, just text".utf8), 415, "file: not a known audio format"),
        ]
        for (fields, file, status, message) in cases {
            let answer = try await transcribe(server, fields, file: file)
            #expect(answer.status == status, "\(answer.body)")
            let object = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
            let error = try #require(object?["error"] as? [String: Any], "\(answer.body)")
            #expect((error["message"] as? String)?.hasPrefix(message) == true, "\(error)")
            #expect(error["type"] as? String == "invalid_request_error")
        }
        let models = try await server.call("GET", "/v1/models")
        #expect(models.json["object"] as? String == "list")
        #expect(((models.json["data"] as? [[String: Any]])?.first?["object"] as? String) == "model")
    }
}

extension TutorServerTests {
    func speak(
        _ server: ServerFixture, _ object: [String: Any]
    ) async throws -> (
        status: Int, headers: [String: String], body: Data
    ) {
        var request = HTTPRequest(
            method: "POST", url: "http://127.0.0.1:\(server.port)/v1/audio/speech",
            headers: [("Content-Type", "application/json")], body: try JSONSerialization.data(withJSONObject: object))
        request.timeout = 1200
        let response = try await server.client.perform(request)
        return (response.status, response.headers, response.body)
    }

    @Test(.startsProcess("espeak-ng, ffmpeg and ffprobe"))
    func speechSpeaksTheInputInTheFormatAskedThatFFprobeReads() async throws {
        let server = try await SharedServer.speaking.value
        let input = "Hallo! Wie geht es dir heute?"
        for (format, ext, codec, type) in [
            ("mp3", "mp3", "mp3", "audio/mpeg"), ("wav", "wav", "pcm_s16le", "audio/wav"),
            ("flac", "flac", "flac", "audio/flac"), ("opus", "opus", "opus", "audio/ogg; codecs=opus"),
            ("aac", "m4a", "aac", "audio/mp4"),
        ] {
            let answer = try await speak(
                server, ["model": "tts-1", "voice": "alloy", "input": input, "response_format": format])
            #expect(answer.status == 200, "\(format): \(String(decoding: answer.body, as: UTF8.self))")
            #expect(answer.headers["content-type"] == type)
            let probed = try probe(answer.body, ext: ext)
            #expect(probed.codec == codec && probed.seconds > 0.5, "\(format): \(probed)")
        }
        let pcm = try await speak(server, ["model": "tts-1", "input": input, "response_format": "pcm"])
        #expect(pcm.status == 200 && pcm.body.count % 2 == 0)
        // 16-bit mono at 24 kHz: as long as the WAV's speech, give or take the resampler's edges.
        #expect(Double(pcm.body.count) / 48000 > 0.5)
    }

    @Test(.startsProcess("espeak-ng"))
    func speechHonoursSpeedAndAVoiceTheSynthesizerHas() async throws {
        let server = try await SharedServer.speaking.value
        func pcm(_ extra: [String: Any]) async throws -> Data {
            let answer = try await speak(
                server,
                ["input": "Guten Morgen! Wie geht es dir heute?", "response_format": "pcm"].merging(extra) { $1 })
            #expect(answer.status == 200, "\(extra): \(String(decoding: answer.body, as: UTF8.self))")
            return answer.body
        }
        // espeak-ng's output depends a little on what it spoke before in the process (its pitch
        // flutter and wave phase run on), so lengths are compared, not bytes.
        let normal = Double(try await pcm([:]).count)
        let alloy = Double(try await pcm(["voice": "alloy"]).count)  // not an espeak-ng voice: the spec's
        #expect(abs(alloy - normal) < normal * 0.05, "\(alloy) vs \(normal)")
        let fast = Double(try await pcm(["speed": 2.0]).count)
        let slow = Double(try await pcm(["speed": 0.5]).count)
        // Twice the rate takes about half as long; half the rate about twice as long.
        #expect(fast < normal * 0.7, "\(fast) vs \(normal)")
        #expect(slow > normal * 1.4, "\(slow) vs \(normal)")
    }

    @Test func speechMistakesAreOpenAIErrors() async throws {
        let server = try await SharedServer.standIn.value
        let cases: [([String: Any], String)] = [
            (["model": "tts-1"], "input: expected the text to speak as a non-empty string"),
            (["input": "Hallo", "response_format": "mp4"], "response_format: \"mp4\" is not one of mp3, opus, aac"),
            (["input": "Hallo", "speed": 9], "speed: expected a number from 0.25 to 4"),
            (["input": "Hallo", "speed": "fast"], "speed: expected a number from 0.25 to 4"),
        ]
        for (body, message) in cases {
            let answer = try await speak(server, body)
            #expect(answer.status == 400)
            let object = try JSONSerialization.jsonObject(with: answer.body) as? [String: Any]
            let error = try #require(object?["error"] as? [String: Any])
            #expect((error["message"] as? String)?.hasPrefix(message) == true, "\(error)")
        }
    }
}

extension TutorServerTests {
    @Test func withKeysTheOpenAIRoutesTakeOnlyAKnownBearerTokenAndTheTutorRoutesStayOpen() async throws {
        let server = try await StandInTutor.start { $0.apiKeys = ["sk-serve-one", "sk-serve-two"] }
        let cases: [([(String, String)], Int, String?)] = [
            ([], 401, "missing API key: send Authorization: Bearer <key>"),
            ([("Authorization", "Bearer sk-serve-on")], 401, "incorrect API key provided"),
            ([("Authorization", "Bearer sk-serve-one!")], 401, "incorrect API key provided"),
            ([("Authorization", "Bearer sk-serve-two")], 200, nil),
        ]
        for (headers, status, message) in cases {
            let models = try await server.call("GET", "/v1/models", headers: headers)
            #expect(models.status == status, "\(headers)")
            let error = models.json["error"] as? [String: Any]
            #expect(error?["message"] as? String == message)
            if message != nil { #expect(error?["code"] as? String == "invalid_api_key") }
        }
        let speech = try await server.post("/v1/audio/speech", ["input": "Hallo"])
        #expect(speech.status == 401)
        let turn = try await server.post("\(api)/process-text", ["text": "Hallo!"])
        #expect(turn.status == 200)
    }
}

extension TutorServerTests {
    @Test(.needs(.whisperModels), .startsProcess("ffmpeg"))
    func translationsAnswerInEnglishFromTheSpecsWhisperStage() async throws {
        let server = try await SharedServer.tutor.value
        let clip = try Data(contentsOf: packageRoot.appendingPathComponent("Samples/speech-de.m4a"))
        let (body, type) = Self.multipart([("model", "whisper-1"), ("response_format", "verbose_json")], file: clip)
        var request = HTTPRequest(
            method: "POST", url: "http://127.0.0.1:\(server.port)/v1/audio/translations",
            headers: [("Content-Type", type)], body: body)
        request.timeout = 1200
        let response = try await server.client.perform(request)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        let object = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
        let text = try #require(object["text"] as? String)
        #expect(object["task"] as? String == "translate")
        #expect(text.lowercased().contains("good morning"), "\(text)")
        #expect(!text.contains("Guten Morgen"))
    }
}
