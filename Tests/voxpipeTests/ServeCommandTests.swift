import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

/// `voxpipe serve` as a process, called with curl, next to `voxpipe run` on the same spec.
@Suite(.needs(.whisperModels), .startsProcess("the voxpipe binary"))
struct ServeCommandTests {
    let lessonTutor = packageRoot.appendingPathComponent("Pipelines/lesson-tutor.json")
    let germanClip = packageRoot.appendingPathComponent("Samples/speech-de.m4a")

    /// Runs `body` with `voxpipe serve` on the lesson tutor listening on the port it gets; stops it after.
    func servingTheTutor<T>(_ body: (Int) throws -> T) throws -> T {
        let (server, port) = try serve([lessonTutor.path])
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        return try body(port)
    }

    /// What `voxpipe run` heard and answered in the lesson tutor's one turn on the German clip.
    struct BatchTurn: Sendable {
        var transcription: String?
        var reply: String?
    }

    /// The lesson tutor's one turn on the German clip through `voxpipe run`, run once for the
    /// suite: three tests compare what serve answers with it, and it is the same run each time.
    static let germanTurn = Result { () throws -> BatchTurn in
        let out = temporaryDirectory().appendingPathComponent("out")
        let lessonTutor = packageRoot.appendingPathComponent("Pipelines/lesson-tutor.json")
        let germanClip = packageRoot.appendingPathComponent("Samples/speech-de.m4a")
        let batch = try voxpipe(["run", lessonTutor.path, germanClip.path, "-o", out.path])
        guard batch.status == 0 else { throw VoxError(.internal, "voxpipe run: \(batch.stderr)") }
        let replies =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: out.appendingPathComponent("speech-de/replies.json"))) as? [String: Any]
        guard let turns = replies?["turns"] as? [[String: Any]], turns.count == 1 else {
            throw VoxError(.internal, "voxpipe run: not one turn in \(String(describing: replies))")
        }
        return BatchTurn(transcription: turns[0]["transcription"] as? String, reply: turns[0]["reply"] as? String)
    }

    @Test func theSameAudioThroughServeAndRunGivesTheSameTranscriptionAndReply() throws {
        let dir = temporaryDirectory()
        let body = dir.appendingPathComponent("body.json")
        try JSONSerialization.data(withJSONObject: [
            "audio": try Data(contentsOf: germanClip).base64EncodedString(), "mimeType": "audio/m4a",
        ]).write(to: body)
        let call = try servingTheTutor { port in
            try run(
                "/usr/bin/curl",
                [
                    "-s", "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", "@\(body.path)",
                    "http://127.0.0.1:\(port)/api/agora/process-audio",
                ])
        }
        let served = try #require(
            try JSONSerialization.jsonObject(with: Data(call.stdout.utf8)) as? [String: Any], "\(call.stdout)")
        let turn = try Self.germanTurn.get()
        #expect(served["transcription"] as? String == turn.transcription)
        #expect(served["reply"] as? String == turn.reply)
        #expect((served["transcription"] as? String)?.hasPrefix("Guten Morgen") == true)
    }

    @Test func aSpecThatCannotAnswerExits65WithTheReason() throws {
        let dir = temporaryDirectory()
        let spec = try writeSpec(
            #"{"stages": [{"id": "decode", "kind": "decode"}, {"id": "out", "kind": "write-audio"}]}"#, in: dir)
        let result = try voxpipe(["serve", spec.path, "--port", "0"])
        #expect(result.status == 65)
        #expect(
            result.stderr
                == "voxpipe: error: serve answers with transcribe, reply and synthesize stages, but the spec has no "
                + "transcribe stage\n")
    }
}

/// How `voxpipe serve` stops and fails to start.
extension ServeCommandTests {
    @Test func sigtermWithAHalfSentBodyExits143WithinTheGracePeriod() throws {
        let (server, port) = try serve([lessonTutor.path, "--shutdown-grace", "1"])
        defer { if server.isRunning { server.terminate() } }
        let slow = try RawConnection(port: port)
        slow.send(
            "POST /api/agora/process-text HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: 100\r\n\r\n{\"text\":")
        // The request is at the server (an answer to a second connection proves it reads).
        let probe = try RawConnection(port: port)
        probe.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(probe.readAnswer()?.status == 200)
        server.terminate()
        // Before, it waited for the client to finish its body, whatever the signal.
        guard waitUntil(limit: .seconds(120), { !server.isRunning }) else {
            Issue.record("still running 120 s after SIGTERM")
            return
        }
        #expect(server.terminationStatus == 143)
        #expect(slow.readToClose() != nil, "the half-sent request's connection was closed")
    }

    @Test func sigintExits130() throws {
        let (server, _) = try serve([lessonTutor.path])
        defer { if server.isRunning { server.terminate() } }
        server.interrupt()
        guard waitUntil(limit: .seconds(120), { !server.isRunning }) else {
            Issue.record("still running 120 s after SIGINT")
            return
        }
        #expect(server.terminationStatus == 130)
    }

    @Test func aPortInUseIsOneClearLineAndExit69() throws {
        let (first, port) = try serve([lessonTutor.path])
        defer {
            first.terminate()
            first.waitUntilExit()
        }
        let second = try voxpipe(["serve", lessonTutor.path, "--port", String(port)])
        #expect(second.status == 69, "\(second.stderr)")
        let lines = second.stderr.split(separator: "\n").filter { !$0.contains("warning") }
        #expect(
            lines.last?.hasSuffix(
                "cannot listen on 127.0.0.1:\(port): the port is in use (another server?); choose another with --port")
                == true, "\(second.stderr)")
        #expect(!second.stderr.contains("errno"))
    }

    @Test func aKeyFileOfCommentsOnlyIsRefusedAndCommentsAreNeverKeys() throws {
        let dir = temporaryDirectory()
        let keys = dir.appendingPathComponent("keys")
        try Data("# the tutor app's key\n\n".utf8).write(to: keys)
        let refused = try voxpipe(["serve", lessonTutor.path, "--port", "0", "--api-key-file", keys.path])
        #expect(refused.status == 64, "\(refused.stderr)")
        #expect(refused.stderr.contains("holds no key (only blank or # comment lines)"), "\(refused.stderr)")

        try Data("# the tutor app's key\nsk-served-1\n".utf8).write(to: keys)
        let (server, port) = try serve([lessonTutor.path, "--api-key-file", keys.path])
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        func models(_ key: String) throws -> String {
            try run(
                "/usr/bin/curl",
                [
                    "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer \(key)",
                    "http://127.0.0.1:\(port)/v1/models",
                ]
            ).stdout
        }
        #expect(try models("# the tutor app's key") == "401")
        #expect(try models("sk-served-1") == "200")
    }
}
