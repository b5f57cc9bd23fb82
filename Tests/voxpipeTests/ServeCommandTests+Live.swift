import Foundation
import Testing
import VoxTestSupport

/// Live conversations (issue 39): streamed transcriptions and `/v1/realtime` sessions, with the
/// official OpenAI Python SDK as the client against `voxpipe serve` on 127.0.0.1.
extension ServeCommandTests {
    static let liveClient = packageRoot.appendingPathComponent("Tests/Fixtures/openai-sdk/live.py").path
    static let librivox = URL(fileURLWithPath: "/usr/share/pocketsphinx/test/data/librivox")

    func live(_ arguments: [String]) throws -> Any {
        let result = try run("/usr/bin/env", ["python3", Self.liveClient] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
    }

    @Test(.enabled(if: openAISDK, "needs the openai Python package (make setup installs it)"))
    func aStreamedTranscriptionSendsDeltasThenOneDoneWithRunsText() throws {
        let dir = temporaryDirectory()
        // Two turns: the clip, a pause, the clip again.
        let turn = dir.appendingPathComponent("turn.wav").path, pause = dir.appendingPathComponent("pause.wav").path
        let clip = dir.appendingPathComponent("two-turns.wav")
        try runTool("ffmpeg", ["-v", "error", "-i", germanClip.path, "-ac", "1", "-ar", "16000", turn])
        try runTool("sox", ["-n", "-r", "16000", "-c", "1", "-b", "16", pause, "trim", "0", "1.5"])
        try runTool("sox", [turn, pause, turn, clip.path])
        let got = try #require(
            try servingTheTutor { port in try live(["stream", "http://127.0.0.1:\(port)/v1", clip.path]) }
                as? [String: Any])
        let types = try #require(got["types"] as? [String])
        let deltas = try #require(got["deltas"] as? [[String: Any]])
        let done = try #require(got["done"] as? String)
        // A delta a segment (each turn here is one segment or two: StreamDeltaTests checks the
        // splitting), at least one a turn, then one done, last.
        #expect(types.count >= 3 && types.last == "transcript.text.done", "\(types)")
        #expect(types.dropLast().allSatisfy { $0 == "transcript.text.delta" }, "\(types)")
        #expect(deltas.compactMap { $0["delta"] as? String }.joined() == done)
        #expect(deltas.allSatisfy { ($0["logprobs"] as? Int ?? 0) > 0 }, "\(deltas)")
        #expect(((got["usage"] as? [String: Any])?["seconds"] as? Double ?? 0) > 8, "\(got)")

        // The same text `voxpipe run` writes for the same file with the same spec.
        let out = dir.appendingPathComponent("out")
        let batch = try voxpipe(["run", lessonTutor.path, clip.path, "-o", out.path])
        #expect(batch.status == 0, "\(batch.stderr)")
        let written = try JSONSerialization.jsonObject(
            with: Data(contentsOf: out.appendingPathComponent("two-turns/subs.json")))
        let text = try #require((written as? [String: Any])?["text"] as? String, "\(written)")
        #expect(done == text.trimmingCharacters(in: .whitespaces))
        #expect(done.hasPrefix("Guten Morgen"))
    }

    @Test(.enabled(if: openAISDK, "needs the openai Python package (make setup installs it)"))
    func aTranscriptionSessionFedAtRealTimePaceGetsOneTurnPerUtteranceWithTheBatchText() throws {
        let dir = temporaryDirectory()
        let lines = ["0870", "0880", "0890"].map {
            Self.librivox.appendingPathComponent("sense_and_sensibility_01_austen_64kb-\($0).wav").path
        }
        // Served: the REST transcription of each line, and the live session over all three, with
        // pauses of 1.2 s between them, in 40-ms appends at 24 kHz (as OpenAI's clients send).
        let upsampled = try lines.enumerated().map { i, line in
            let out = dir.appendingPathComponent("line\(i)-24k.wav").path
            try runTool("sox", [line, "-r", "24000", out])
            return out
        }
        // The German tutor is served; the session and the REST calls ask for English.
        let (events, rest) = try servingTheTutor { port -> ([[String: Any]], [String]) in
            let base = "http://127.0.0.1:\(port)/v1"
            let events = try #require(
                try live(["transcribe", base, "24000", "1200", "40", "en"] + upsampled) as? [[String: Any]])
            let rest = try lines.map { line in
                try run(
                    "/usr/bin/curl",
                    [
                        "-s", "\(base)/audio/transcriptions", "-F", "file=@\(line)", "-F", "model=whisper-1",
                        "-F", "response_format=text", "-F", "language=en",
                    ]
                ).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            return (events, rest)
        }
        func of(_ type: String) -> [[String: Any]] {
            events.filter { $0["type"] as? String == "input_audio_buffer.\(type)" }
        }
        let completed = events.filter {
            $0["type"] as? String == "conversation.item.input_audio_transcription.completed"
        }
        #expect(
            of("speech_started").count == 3 && of("speech_stopped").count == 3 && of("committed").count == 3,
            "\(events)")
        #expect(completed.count == 3, "\(events)")
        // Each turn's item goes from start to stop to commit to its transcript, in order.
        let items = of("committed").compactMap { $0["item_id"] as? String }
        #expect(of("speech_started").compactMap { $0["item_id"] as? String } == items)
        #expect(completed.compactMap { $0["item_id"] as? String } == items)
        let starts = of("speech_started").compactMap { $0["audio_start_ms"] as? Int }
        let ends = of("speech_stopped").compactMap { $0["audio_end_ms"] as? Int }
        #expect(zip(starts, ends).allSatisfy { $0 < $1 } && zip(ends, starts.dropFirst()).allSatisfy { $0 <= $1 })
        // English, as asked, not the spec's German: close to what the reader said.
        let reference = try String(contentsOf: Self.librivox.appendingPathComponent("transcription"), encoding: .utf8)
        for (turn, name) in zip(completed.compactMap { $0["transcript"] as? String }, ["0870", "0880", "0890"]) {
            let said = try #require(reference.split(separator: "\n").first { $0.contains("-\(name))") })
            let marked = said.split(separator: "(").first.map(String.init) ?? ""
            let words = marked.replacingOccurrences(of: "<s>", with: "").replacingOccurrences(of: "</s>", with: "")
            #expect(wordErrorRate(reference: words, hypothesis: turn) < 0.25, "\(turn) | \(words)")
        }
        // The words of each turn are those the REST route gives for its file, but for at most one.
        for (turn, whole) in zip(completed.compactMap { $0["transcript"] as? String }, rest) {
            let (a, b) = (scoringWords(turn), scoringWords(whole))
            #expect(!b.isEmpty && abs(a.count - b.count) <= 1, "\(turn) | \(whole)")
            #expect(zip(a, b).filter { $0 != $1 }.count <= 1, "\(turn) | \(whole)")
        }
    }

    @Test(.enabled(if: openAISDK, "needs the openai Python package (make setup installs it)"))
    func aConversationAnswersWithTextAndSpeechAndAnInterruptionCancelsTheAnswer() throws {
        let dir = temporaryDirectory()
        let clip = dir.appendingPathComponent("turn.wav").path
        try runTool("ffmpeg", ["-v", "error", "-i", germanClip.path, "-ac", "1", "-ar", "16000", clip])
        let (one, two) = try servingTheTutor { port -> ([String: Any], [String: Any]) in
            let base = "http://127.0.0.1:\(port)/v1"
            return (
                try #require(try live(["converse", base, "16000", clip]) as? [String: Any]),
                try #require(try live(["converse", base, "16000", clip, clip]) as? [String: Any])
            )
        }
        let turn = try Self.germanTurn.get()
        let events = try #require(one["events"] as? [[String: Any]])
        func of(_ type: String, in events: [[String: Any]]) -> [[String: Any]] {
            events.filter { $0["type"] as? String == type }
        }
        let heard = of("conversation.item.input_audio_transcription.completed", in: events)
        // The session hears the clip as ffmpeg resampled it, cut by its own VAD; the batch turn as
        // voxpipe resampled it: the same words but for at most one.
        let heardWords = scoringWords(heard.first?["transcript"] as? String ?? "")
        let batchWords = scoringWords(turn.transcription ?? "")
        #expect(!heardWords.isEmpty && heardWords.count == batchWords.count, "\(events)")
        #expect(zip(heardWords, batchWords).filter { $0 != $1 }.count <= 1, "\(events)")
        let said = of("response.output_audio_transcript.done", in: events).first?["transcript"] as? String
        #expect(said == turn.reply, "\(events)")
        #expect(of("response.done", in: events).first?["status"] as? String == "completed")
        // What was heard comes before the answer to it.
        let types = events.compactMap { $0["type"] as? String }
        let heardAt = types.firstIndex(of: "conversation.item.input_audio_transcription.completed")
        let answerAt = types.firstIndex(of: "response.output_audio_transcript.delta")
        #expect(heardAt != nil && answerAt != nil && heardAt! < answerAt!, "\(types)")
        // Speech that decodes: whole 16-bit samples, more than a second at 24 kHz.
        let bytes = one["audio_bytes"] as? Int ?? 0
        #expect(bytes > 48000 && bytes % 2 == 0, "\(bytes)")

        // The second utterance starts as the first answer begins: that answer is cancelled, the
        // second one completes, and the learner's turns are both heard.
        let interrupted = try #require(two["events"] as? [[String: Any]])
        let statuses = of("response.done", in: interrupted).compactMap { $0["status"] as? String }
        #expect(statuses == ["cancelled", "completed"], "\(interrupted)")
        #expect(of("input_audio_buffer.speech_started", in: interrupted).count == 2)
    }

    @Test(.enabled(if: openAISDK, "needs the openai Python package (make setup installs it)"))
    func brokenClientEventsGetErrorEventsAndTheSessionGoesOn() throws {
        let codes = try servingTheTutor { port in try live(["bad", "http://127.0.0.1:\(port)/v1"]) }
        #expect(
            codes as? [String] == [
                "session.created", "invalid_json", "invalid_event", "invalid_event", "invalid_base64", "invalid_audio",
                "unsupported_audio_format", "input_audio_buffer_commit_empty", "input_audio_buffer.cleared",
            ])
    }

    @Test(.enabled(if: openAISDK, "needs the openai Python package (make setup installs it)"))
    func liveSessionsAreKeyedBoundedClosedWhenIdleAndStopWhenTheClientGoes() throws {
        let dir = temporaryDirectory()
        let keys = dir.appendingPathComponent("keys")
        try "sk-live-test\n".write(to: keys, atomically: true, encoding: .utf8)
        let clip = dir.appendingPathComponent("turn.wav").path
        try runTool("ffmpeg", ["-v", "error", "-i", germanClip.path, "-ac", "1", "-ar", "16000", clip])
        let (server, port) = try serve([
            lessonTutor.path, "--api-key-file", keys.path, "--max-live-sessions", "1", "--live-idle-timeout", "2",
            "--max-clip", "3",
        ])
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        let got = try #require(
            try live(["limits", "http://127.0.0.1:\(port)/v1", "sk-live-test", clip]) as? [String: Any])
        // A wrong key: an error event, then a close (policy violation).
        #expect(got["wrong_key"] as? [AnyHashable] == ["invalid_api_key", 1008], "\(got)")
        // One place: a second session is refused with an error event and a close (try again later).
        #expect(got["first"] as? String == "session.created")
        #expect(got["second"] as? [AnyHashable] == ["session_limit_reached", 1013], "\(got)")
        // The client left as its answer began: its answer was cancelled, not finished for nobody,
        // no turn runs and its place is free again. The clip is longer than --max-clip, so its rest
        // is a second turn whose answer may have begun too before the client was seen to go (1 or 2).
        let after = try #require(got["after_leaving"] as? [String: Double])
        #expect(after["voxpipe_serve_turns_running"] == 0 && after["voxpipe_serve_live_sessions"] == 0, "\(after)")
        #expect((after["voxpipe_serve_live_responses_total{status=\"cancelled\"}"] ?? 0) >= 1, "\(after)")
        #expect(after["voxpipe_serve_live_responses_total{status=\"completed\"}"] == nil, "\(after)")
        // A session with no client event for 2 s: an error event, then a close (going away).
        #expect(got["idle"] as? [AnyHashable] == ["session.created", "session_idle_timeout", 1001], "\(got)")
        // Committing by hand, 3 s of buffer (--max-clip): the fourth 1-s append is refused, the session goes on.
        #expect(got["full"] as? [String] == ["input_audio_buffer_full", "input_audio_buffer.cleared"], "\(got)")
    }

    @Test(.enabled(if: openAISDK, "needs the openai Python package (make setup installs it)"))
    func aLiveConversationRemembersItsTurnsAsARESTSessionDoes() throws {
        let dir = temporaryDirectory()
        let clip = dir.appendingPathComponent("turn.wav")
        try runTool("ffmpeg", ["-v", "error", "-i", germanClip.path, "-ac", "1", "-ar", "16000", clip.path])
        let body = dir.appendingPathComponent("body.json")
        try JSONSerialization.data(withJSONObject: [
            "audio": try Data(contentsOf: clip).base64EncodedString(), "mimeType": "audio/wav",
        ]).write(to: body)
        let cookies = dir.appendingPathComponent("cookies").path
        let (live, rest) = try servingTheTutor { port -> ([[String: Any]], [String]) in
            let turns = try #require(
                try self.live(["turns", "http://127.0.0.1:\(port)/v1", "16000", clip.path, clip.path])
                    as? [[String: Any]])
            let rest = try (0..<2).map { _ in
                let answer = try run(
                    "/usr/bin/curl",
                    [
                        "-s", "-b", cookies, "-c", cookies, "-X", "POST", "-H", "Content-Type: application/json",
                        "--data-binary", "@\(body.path)", "http://127.0.0.1:\(port)/api/agora/process-audio",
                    ])
                let object = try JSONSerialization.jsonObject(with: Data(answer.stdout.utf8)) as? [String: Any]
                return object?["reply"] as? String ?? ""
            }
            return (turns, rest)
        }
        // The tutor's memory (here: which of its answers to the same question comes next) is the
        // session's: two live turns get the replies two REST turns of one session get.
        let replies = live.compactMap { $0["answered"] as? String }
        #expect(replies == rest, "\(live) | \(rest)")
        #expect(replies.count == 2 && replies[0] != replies[1], "\(replies)")
        #expect(live.allSatisfy { $0["status"] as? String == "completed" })
    }
}
