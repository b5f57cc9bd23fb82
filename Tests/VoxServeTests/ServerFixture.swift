import Foundation
import Logging
import Testing
import VoxCore
import VoxHTTP
import VoxResample
import VoxStages
import VoxTestSupport
import VoxTesting

@testable import VoxServe

/// The package's root folder.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// A `TutorServer` listening on 127.0.0.1 on a free port, in this process, and a real HTTP client
/// (libcurl) to call it with.
final class ServerFixture: Sendable {
    let port: Int
    let server: TutorServer
    let task: Task<Void, any Error>
    let client = CurlTransport()

    /// Loads `spec` (a path, or JSON text) with the stage kinds of `registry` (voxpipe's unless
    /// given) and listens; returns once the port is bound. The server's log lines go to `logs` when
    /// given.
    static func start(
        spec: URL, registry: StageRegistry = StageRegistry(voxpipeStageKinds), logs: CapturedLogs? = nil,
        configure: (inout ServeSettings) -> Void = { _ in }
    ) async throws -> ServerFixture {
        let json = try JSONValue.parse(Data(contentsOf: spec))
        var settings = ServeSettings()
        settings.host = "127.0.0.1"
        settings.port = 0
        settings.agora.appID = "test-app"
        // A long turn timeout unless a test sets its own: the whole suite runs beside a test's
        // server, on a machine that may be busy, and a slow turn is not what these tests test.
        settings.timeout = 900
        configure(&settings)
        let logger =
            logs?.logger(label: "voxpipe.serve.test")
            ?? Logger(label: "voxpipe.serve.test") { _ in
                SwiftLogNoOpLogHandler()
            }
        var context = StageContext(logger: logger, rateConversion: SoxrRateConversion())
        context.engines = testEngines
        let plan = try Planner.plan(
            json: json, baseDirectory: spec.deletingLastPathComponent(), defaultName: "test", registry: registry)
        let pipeline = try await TutorPipeline(plan: plan, context: context, maxClipSeconds: settings.maxClipSeconds)
        let server = TutorServer(pipeline: pipeline, settings: settings, logger: logger)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let task = Task { _ = try await server.run { port in continuation.yield(port) } }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw HarnessError("the server did not start") }
        return ServerFixture(port: port, server: server, task: task)
    }

    init(port: Int, server: TutorServer, task: Task<Void, any Error>) {
        self.port = port
        self.server = server
        self.task = task
    }

    deinit { task.cancel() }

    /// One exchange: `body` sent as is; the answer's status, headers and body parsed as JSON.
    func call(
        _ method: String, _ path: String, body: Data = Data(), headers: [(String, String)] = []
    ) async throws -> (status: Int, headers: [String: String], json: [String: Any]) {
        var request = HTTPRequest(
            method: method, url: "http://127.0.0.1:\(port)\(path)",
            headers: [("Content-Type", "application/json")] + headers, body: body)
        request.timeout = 1200
        let response = try await client.perform(request)
        let json = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any] ?? [:]
        return (response.status, response.headers, json)
    }

    /// POSTs a JSON object.
    func post(
        _ path: String, _ object: [String: Any]
    ) async throws -> (
        status: Int, headers: [String: String], json: [String: Any]
    ) {
        try await call("POST", path, body: JSONSerialization.data(withJSONObject: object))
    }

    /// GET `path` as text.
    func text(_ path: String) async throws -> String {
        String(
            decoding: try await client.perform(HTTPRequest(method: "GET", url: "http://127.0.0.1:\(port)\(path)")).body,
            as: UTF8.self)
    }
}

/// The tutor spec `make demo` runs: whisper base, rules, espeak-ng.
let lessonTutor = packageRoot.appendingPathComponent("Pipelines/lesson-tutor.json")

/// The lesson tutor without a model, for the handler tests that never transcribe: the shipped
/// spec with a stand-in recogniser that hears "hallo" in any clip, voice turns by energy instead of
/// Silero's, and libsndfile alone to decode (no ffmpeg fallback); its resampler and rules tutor are
/// the shipped ones. Its voice is a tone (nothing but this process: the fast tier) or the shipped
/// espeak-ng voice (a process per piece it speaks).
enum StandInTutor {
    enum Voice: Sendable { case tone, espeakNG }

    static func registry(_ voice: Voice) -> StageRegistry {
        var kinds = voxpipeStageKinds.filter {
            $0.kind != "transcribe" && (voice == .espeakNG || $0.kind != "synthesize")
        }
        kinds.append(StageKind(StandIn<TranscribeRole>.self))
        if voice == .tone { kinds.append(StageKind(StandIn<ToneRole>.self)) }
        return StageRegistry(kinds)
    }

    static func spec(_ voice: Voice) -> URL {
        switch voice {
        case .tone: toneSpec
        case .espeakNG: espeakSpec
        }
    }
    private static let toneSpec = write(.tone)
    private static let espeakSpec = write(.espeakNG)

    /// The spec, written in a folder of its own with the shipped rules beside it.
    private static func write(_ voice: Voice) -> URL {
        let folder = temporaryDirectory()
        do {
            let shipped = try JSONSerialization.jsonObject(with: Data(contentsOf: lessonTutor)) as? [String: Any] ?? [:]
            var spec = shipped
            spec["stages"] = (shipped["stages"] as? [[String: Any]] ?? []).map { stage in
                var stage = stage
                switch stage["kind"] as? String {
                case "decode": stage["fallback"] = "none"
                case "chunk": stage["detector"] = nil
                case "transcribe": stage = ["id": stage["id"] ?? "asr", "kind": "transcribe"]
                case "synthesize" where voice == .tone: stage = ["id": stage["id"] ?? "voice", "kind": "synthesize"]
                default: break
                }
                return stage
            }
            try FileManager.default.copyItem(
                at: lessonTutor.deletingLastPathComponent().appendingPathComponent("tutor-rules.json"),
                to: folder.appendingPathComponent("tutor-rules.json"))
            try JSONSerialization.data(withJSONObject: spec).write(to: folder.appendingPathComponent("tutor.json"))
        } catch {
            Issue.record("cannot write the stand-in tutor's spec: \(error)")
        }
        return folder.appendingPathComponent("tutor.json")
    }

    /// A server of its own on the stand-in tutor.
    static func start(
        voice: Voice = .tone, logs: CapturedLogs? = nil, configure: (inout ServeSettings) -> Void = { _ in }
    ) async throws -> ServerFixture {
        try await ServerFixture.start(spec: spec(voice), registry: registry(voice), logs: logs, configure: configure)
    }
}

/// A quarter of a second of a 440 Hz tone at 22.05 kHz for each reply with words: speech the
/// way espeak-ng gives it, without its process.
enum ToneRole: StandInRole {
    static let kind = "synthesize"
    static let rate = 22050
    static let tone = (0..<rate / 4).map { Float(0.3 * sin(2 * Double.pi * 440 * Double($0) / Double(rate))) }

    static func pass(_ reply: Reply) -> Speech? {
        guard !reply.text.isEmpty else { return nil }
        let chunk = reply.transcript.chunk
        return Speech(
            audio: AudioChunk(
                format: AudioFormat(sampleRate: rate, channels: 1), samples: tone, start: chunk.start,
                end: chunk.start + 0.25, index: chunk.index, cut: .synthesized),
            reply: reply)
    }
}

/// One server on the lesson-tutor spec for the tests that only read from it (models load once),
/// and one on the stand-in tutor with each voice.
enum SharedServer {
    // A long timeout: the whole test suite runs beside it, and a busy machine is not the server's fault.
    static let tutor = Task {
        try await ServerFixture.start(spec: lessonTutor) {
            $0.maxBodyBytes = 1 << 20
            $0.timeout = 900
        }
    }

    static let standIn = Task {
        try await StandInTutor.start {
            $0.maxBodyBytes = 1 << 20
            $0.timeout = 900
        }
    }

    static let speaking = Task {
        try await StandInTutor.start(voice: .espeakNG) {
            $0.maxBodyBytes = 1 << 20
            $0.timeout = 900
        }
    }
}

/// What ffprobe reads from an encoded answer: codec and seconds.
func probe(_ data: Data, ext: String) throws -> (codec: String, seconds: Double) {
    let url = temporaryDirectory().appendingPathComponent("answer.\(ext)")
    try data.write(to: url)
    let probed = try probedDuration(url)
    return (probed.codec, probed.seconds)
}
