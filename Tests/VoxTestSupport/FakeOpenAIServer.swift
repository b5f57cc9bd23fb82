import Foundation

/// Tests/Fixtures/fake_openai.py on 127.0.0.1: the OpenAI wire formats, faults on demand, and a
/// log of the requests it saw.
public final class FakeOpenAIServer: @unchecked Sendable {
    public let port: Int
    public let key: String
    let process: Process

    public init(key: String) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/fake_openai.py")
        let portFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "voxpipe-fake-openai-\(UUID().uuidString).port")
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, key, portFile.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Python starts in a second or so, much longer on a busy machine: wait while it runs.
        var port: Int?
        let deadline = ContinuousClock.now + .seconds(300)
        while port == nil && process.isRunning && ContinuousClock.now < deadline {
            port = (try? String(contentsOf: portFile, encoding: .utf8)).flatMap { Int($0) }
            if port == nil { usleep(25_000) }
        }
        try? FileManager.default.removeItem(at: portFile)
        guard let port else {
            process.terminate()
            throw CocoaError(.fileReadUnknown)
        }
        self.port = port
        self.key = key
    }

    deinit { stop() }

    public func stop() {
        // SIGTERM can go unanswered by a serving Python; a test fixture may be killed outright.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    public var baseURL: String { "http://127.0.0.1:\(port)/v1" }

    /// Queues faults: each `["path": "/v1/…", "kind": "status", "status": 500, "count": 2, …]`.
    public func inject(_ faults: [[String: Any]]) throws {
        _ = try call("POST", "/_faults", body: JSONSerialization.data(withJSONObject: faults))
    }

    /// Ends every "hold" fault's wait (they answer 500), and those to come.
    public func release() throws {
        _ = try call("POST", "/_release")
    }

    /// Queues chat answers for the next requests that offer tools: each a `message` object as the
    /// wire has it (`["tool_calls": [...]]` or `["content": "…"]`).
    public func script(_ messages: [[String: Any]]) throws {
        _ = try call("POST", "/_script", body: JSONSerialization.data(withJSONObject: messages))
    }

    /// The requests seen so far: method, path, time, authorized (and a chat request's messages).
    public func log() throws -> [[String: Any]] {
        (try JSONSerialization.jsonObject(with: call("GET", "/_log")) as? [[String: Any]]) ?? []
    }

    func call(_ method: String, _ path: String, body: Data? = nil) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["curl", "-s", "--max-time", "600", "-X", method, "http://127.0.0.1:\(port)\(path)"]
            + (body.map { ["--data-binary", String(decoding: $0, as: UTF8.self)] } ?? [])
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return data
    }
}
