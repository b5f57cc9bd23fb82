import Foundation
import Logging
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

/// One server on the lesson-tutor spec for the tests that only read from it (models load once).
enum SharedServer {
    // A long timeout: the whole test suite runs beside it, and a busy machine is not the server's fault.
    static let tutor = Task {
        try await ServerFixture.start(spec: lessonTutor) {
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
