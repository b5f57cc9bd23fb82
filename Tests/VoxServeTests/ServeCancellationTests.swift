import Foundation
import Synchronization
import Testing
import VoxCore
import VoxProcess
import VoxTestSupport
import VoxTesting

@testable import VoxServe

/// A reply stage that never answers by itself: it starts `sh` as a child process on the stage
/// context's blocking executor, which writes its process id to the file `pidFile` names and then
/// sleeps ten minutes. The id is written beside the file and moved into place, so the file never
/// exists empty (a child killed between creating the file and writing to it left one before).
/// Only cancellation (terminating the child) ends it.
struct HoldingReply: Stage {
    typealias Input = Transcript
    typealias Output = Reply
    typealias Configuration = String
    static let kind = "reply"
    static let summary = "a reply that waits in a child process until it is cancelled"
    static let options = [OptionSpec("pidFile", .string, help: "where the child writes its process id")]
    static func configure(_ options: StageOptions) throws -> String { options.string("pidFile") ?? "" }

    let pidFile: String
    let blocking: BlockingExecutor

    init(id: String, configuration: String, context: StageContext) {
        pidFile = configuration
        blocking = context.blocking
    }

    func run(_ input: Inbox<Transcript>, _ output: Outbox<Reply>, _ item: ItemContext) async throws {
        for try await transcript in input {
            let sh = URL(fileURLWithPath: "/bin/sh")
            _ = try await ExternalTool.run(
                sh, ["-c", "echo $$ > '\(pidFile).new' && mv '\(pidFile).new' '\(pidFile)'; exec sleep 600"],
                input: Data(), on: blocking)
            try await output.send(Reply(transcript: transcript, text: "never"))
        }
    }
}

/// A turn that times out or whose client goes away stops its work; a full server refuses at once.
@Suite(.startsProcess("sh")) struct ServeCancellationTests {
    let api = "/api/agora"
    let registry = StageRegistry([
        StageKind(StandIn<DecodeRole>.self), StageKind(StandIn<TranscribeRole>.self),
        StageKind(HoldingReply.self), StageKind(StandIn<SynthesizeRole>.self),
    ])

    /// A server whose reply stage holds every turn in a child process that writes its pid to `pidFile`.
    func server(
        pidFile: URL, configure: (inout ServeSettings) -> Void = { _ in }
    ) async throws -> ServerFixture {
        let url = temporaryDirectory().appendingPathComponent("holding.json")
        try Data(
            """
            {"stages": [{"id": "decode", "kind": "decode"}, {"id": "asr", "kind": "transcribe"},
              {"id": "tutor", "kind": "reply", "pidFile": "\(pidFile.path)"}, {"id": "voice", "kind": "synthesize"}]}
            """.utf8
        ).write(to: url)
        return try await ServerFixture.start(spec: url, registry: registry, configure: configure)
    }

    /// The pid the held turn's child wrote, once it has.
    func childStarted(_ pidFile: URL) async throws -> pid_t {
        var pid: pid_t?
        let started = try await eventually {
            pid = (try? String(contentsOf: pidFile, encoding: .utf8)).flatMap {
                pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            return pid != nil
        }
        guard started, let pid else {
            Issue.record("the held turn's child did not start")
            throw CancellationError()
        }
        return pid
    }

    /// Whether process `pid` has ended (and was waited for).
    func ended(_ pid: pid_t) async throws -> Bool { try await eventually { kill(pid, 0) != 0 } }

    @Test(.waitsOnTheClock("the turn timeout"))
    func aTurnPastTheTimeoutIs504AndItsWorkStops() async throws {
        let pidFile = temporaryDirectory().appendingPathComponent("child.pid")
        let server = try await server(pidFile: pidFile) { $0.timeout = 5 }
        let answered = Flag()
        let turn = Task {
            defer { answered.set() }
            return try await server.post("\(api)/process-text", ["text": "hallo"]).status
        }
        // The child starts well within the timeout, unless the whole suite holds the process's
        // threads for longer: then the turn is cancelled before its work begins (ExternalTool
        // starts no child for a cancelled job), and there is no child to look for.
        let started = try await eventually { FileManager.default.fileExists(atPath: pidFile.path) || answered.isSet }
        let timedOut = try await turn.value
        #expect(started)
        #expect(timedOut == 504)
        guard FileManager.default.fileExists(atPath: pidFile.path) else { return }
        let child = try await childStarted(pidFile)
        // Ten minutes of sleep unless the timeout's cancellation killed it.
        #expect(try await ended(child), "the timed-out turn's child process \(child) still runs")
    }

    @Test func aClientThatGoesAwayStopsItsTurnAndFreesItsSlot() async throws {
        let (server, client, child, pidFile) = try await fullServer()
        client.close()
        #expect(try await ended(child), "the turn of a client that left still runs its child process \(child)")
        // Its request ends (its place and slot are given back)...
        #expect(
            try await eventually { server.server.admission.held == 0 },
            "the request of a client that left still holds its place")
        // (counted as its handler returns, just after its place is given back)
        let gone = "voxpipe_serve_failures_total{reason=\"client_gone\"} 1"
        let counted = try await eventually { try await server.text("/metrics").contains(gone) }
        #expect(counted, "the request of a client that left is not counted as client_gone")
        // ...and the next turn is admitted (and held: it stops when this client goes too).
        try FileManager.default.removeItem(at: pidFile)
        let next = try RawConnection(port: server.port)
        try next.post("\(api)/process-text", #"{"text": "hallo"}"#)
        let second = try await childStarted(pidFile)
        next.close()
        #expect(try await ended(second))
    }

    /// A server of one place, taken by a held turn: the server, the turn's client and its child,
    /// and the file where a held turn's child writes its pid.
    func fullServer() async throws -> (ServerFixture, RawConnection, pid_t, pidFile: URL) {
        let pidFile = temporaryDirectory().appendingPathComponent("child.pid")
        let server = try await server(pidFile: pidFile) {
            $0.concurrency = 1
            $0.queue = 0
        }
        let held = try RawConnection(port: server.port)
        try held.post("\(api)/process-text", #"{"text": "hallo"}"#)
        return (server, held, try await childStarted(pidFile), pidFile)
    }

    @Test func aFullServerAnswers503WithRetryAfterAsTheBodyArrives() async throws {
        let (server, held, child, _) = try await fullServer()
        // A place is taken only once the body has arrived (a slow upload holds none); a full
        // server refuses then, before the handler decodes anything.
        let client = try RawConnection(port: server.port)
        defer { client.close() }
        try client.post("\(api)/process-audio", #"{"audio": "UklGR"}"#)
        let head = try client.receiveHead()
        #expect(head.hasPrefix("HTTP/1.1 503"), "\(head)")
        #expect(head.lowercased().contains("retry-after: 1"), "\(head)")
        // The held turn's client goes: its child goes with it.
        held.close()
        #expect(try await ended(child))
    }
}

/// A flag set once, read from any task.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
