import Foundation
import Testing
import VoxCore
import VoxFormats
import VoxTestSupport
import VoxTesting

/// The package's root folder.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// The voxpipe binary built beside the test bundle.
let voxpipeBinary: URL = {
    var dir = Bundle.main.bundleURL
    for _ in 0..<4 {
        let candidate = dir.appendingPathComponent("voxpipe")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        dir = dir.deletingLastPathComponent()
    }
    return packageRoot.appendingPathComponent(".build/debug/voxpipe")
}()

struct Invocation {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs voxpipe with arguments; waits for it.
func voxpipe(
    _ arguments: [String], environment: [String: String]? = nil, currentDirectory: URL? = nil
) throws -> Invocation {
    try run(voxpipeBinary.path, arguments, environment: environment, currentDirectory: currentDirectory)
}

/// Runs a program with arguments and no standard input; waits for it.
func run(
    _ program: String, _ arguments: [String], environment: [String: String]? = nil, currentDirectory: URL? = nil
) throws -> Invocation {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let currentDirectory { process.currentDirectoryURL = currentDirectory }
    let out = FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-out-\(UUID().uuidString)")
    let err = FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-err-\(UUID().uuidString)")
    FileManager.default.createFile(atPath: out.path, contents: nil)
    FileManager.default.createFile(atPath: err.path, contents: nil)
    defer {
        try? FileManager.default.removeItem(at: out)
        try? FileManager.default.removeItem(at: err)
    }
    process.standardOutput = try FileHandle(forWritingTo: out)
    process.standardError = try FileHandle(forWritingTo: err)
    process.standardInput = FileHandle.nullDevice
    try process.run()
    waitOrKill(process, arguments)
    return Invocation(
        status: process.terminationStatus,
        stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "")
}

/// A suite over the text tutor (`Pipelines/lesson-tutor-text.json`) at `folder/tutor.check.json`,
/// with one lesson as text beside it (`lessons/anna.txt`, item `anna`) and `expectations` (JSON
/// objects, comma-separated).
func textTutorSuite(in folder: URL, expectations: String) throws -> URL {
    let lessons = folder.appendingPathComponent("lessons")
    try FileManager.default.createDirectory(at: lessons, withIntermediateDirectories: true)
    try "Hallo, ich heiße Anna.\nWie geht es dir?\nGrüße aus der Straße!\n".write(
        to: lessons.appendingPathComponent("anna.txt"), atomically: true, encoding: .utf8)
    let suite = folder.appendingPathComponent("tutor.check.json")
    try """
    {"spec": "\(packageRoot.appendingPathComponent("Pipelines/lesson-tutor-text.json").path)",
     "inputs": ["lessons"], "expect": [\(expectations)]}
    """.write(to: suite, atomically: true, encoding: .utf8)
    return suite
}

func writeSpec(_ json: String, in dir: URL, name: String = "spec.json") throws -> URL {
    let url = dir.appendingPathComponent(name)
    try Data(json.utf8).write(to: url)
    return url
}

func files(under dir: URL) -> [String] {
    ((try? FileManager.default.subpathsOfDirectory(atPath: dir.path)) ?? []).filter {
        var isDir: ObjCBool = false
        FileManager.default.fileExists(atPath: dir.appendingPathComponent($0).path, isDirectory: &isDir)
        return !isDir.boolValue
    }.sorted()
}

/// Starts `voxpipe serve` on a free port, with `environment` added to the test's own; returns the
/// process and the port it printed.
func serve(_ arguments: [String], environment: [String: String] = [:]) throws -> (Process, Int) {
    let process = Process()
    process.executableURL = voxpipeBinary
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    // A long turn timeout unless the test sets one: the suite may share a busy machine.
    let timeout = arguments.contains("--timeout") ? [] : ["--timeout", "900"]
    process.arguments = ["serve"] + arguments + timeout + ["--port", "0"]
    let err = Pipe()
    process.standardError = err
    process.standardOutput = FileHandle.nullDevice
    process.standardInput = FileHandle.nullDevice
    try process.run()
    // Read stderr up to the line that says where it listens (no sleeping: the read waits).
    var text = ""
    while !text.contains("\n") || !text.contains("serving") {
        let data = err.fileHandleForReading.availableData
        if data.isEmpty { break }
        text += String(decoding: data, as: UTF8.self)
    }
    guard let match = text.firstMatch(of: /127\.0\.0\.1:(\d+)/), let port = Int(match.1) else {
        process.terminate()
        throw HarnessError("voxpipe serve did not start: \(text)")
    }
    return (process, port)
}

/// A voxpipe process started in the background.
struct Running {
    let process: Process
    let out: URL
    let err: URL

    /// What the process has written to stderr so far.
    var stderrSoFar: String { (try? String(contentsOf: err, encoding: .utf8)) ?? "" }

    /// Waits until the process has written a line containing `text` to stderr (true), or has
    /// exited without (false). Polls what it wrote, so it waits as long as the run needs on a
    /// busy machine and no longer; `limit` only stops a test whose run hangs.
    func waitForStderr(containing text: String, limit: Duration = .seconds(600)) -> Bool {
        waitUntil(limit: limit) { stderrSoFar.contains(text) || !process.isRunning } && stderrSoFar.contains(text)
    }

    func wait() -> Invocation {
        waitOrKill(process, process.arguments ?? [])
        defer {
            try? FileManager.default.removeItem(at: out)
            try? FileManager.default.removeItem(at: err)
        }
        return Invocation(
            status: process.terminationStatus,
            stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "")
    }
}

/// Starts voxpipe (or `program`, e.g. a wrapper that runs it as another user) in the background.
func start(
    _ arguments: [String], environment: [String: String]? = nil, program: URL = voxpipeBinary
) throws -> Running {
    let process = Process()
    process.executableURL = program
    process.arguments = arguments
    if let environment { process.environment = environment }
    let out = FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-out-\(UUID().uuidString)")
    let err = FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-err-\(UUID().uuidString)")
    FileManager.default.createFile(atPath: out.path, contents: nil)
    FileManager.default.createFile(atPath: err.path, contents: nil)
    process.standardOutput = try FileHandle(forWritingTo: out)
    process.standardError = try FileHandle(forWritingTo: err)
    process.standardInput = FileHandle.nullDevice
    try process.run()
    return Running(process: process, out: out, err: err)
}

func sha256(_ url: URL) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["sha256sum", url.path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
}

/// Every output file under `dir` with its SHA-256; manifests and lock files aside (they hold
/// times and process ids).
func outputHashes(_ dir: URL) throws -> [String: String] {
    var hashes: [String: String] = [:]
    for path in files(under: dir) where !path.hasSuffix("voxpipe.manifest.json") && !path.hasSuffix(".lock") {
        hashes[path] = try sha256(dir.appendingPathComponent(path))
    }
    return hashes
}

/// Waits for a child process, at most `limit` (20 minutes: a run in these tests takes seconds, a
/// minute or two on a busy machine); one still going then hangs: it is killed and the test fails
/// naming it, so a hang fails one test instead of stopping the whole run.
func waitOrKill(_ process: Process, _ arguments: [String], limit: Duration = .seconds(1200)) {
    if !waitUntil(limit: limit, { !process.isRunning }) {
        kill(process.processIdentifier, SIGKILL)
        let program = process.executableURL?.lastPathComponent ?? "?"
        Issue.record("\(program) \(arguments.joined(separator: " ")) still ran after \(limit): killed")
    }
    process.waitUntilExit()
}

/// Polls `condition` every few milliseconds until it holds (true) or `limit` passes (false): for
/// waiting on what another process writes, never for a fixed time.
func waitUntil(limit: Duration = .seconds(600), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        usleep(5_000)
    }
    return true
}

/// The item manifests under an output folder: how many items a run has finished.
func manifestCount(_ dir: URL) -> Int {
    files(under: dir).filter { $0.hasSuffix("voxpipe.manifest.json") }.count
}

/// Runs voxpipe (as another user through `setpriv` when given) and waits for it, polling without
/// holding a thread, at most `watchdogSeconds` (20 minutes, as `waitOrKill`: a limit that only
/// ends a run that hangs, never a slow one); a run still going then is killed and the test fails.
func watched(_ arguments: [String], setpriv: [String]? = nil) async throws -> Invocation {
    let running =
        try setpriv.map {
            try start($0 + [voxpipeBinary.path] + arguments, program: URL(fileURLWithPath: "/usr/bin/setpriv"))
        } ?? start(arguments)
    let watchdogSeconds: Int64 = 1200
    let deadline = ContinuousClock.now + .seconds(watchdogSeconds)
    while running.process.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
    if running.process.isRunning {
        running.process.terminate()
        kill(running.process.processIdentifier, SIGKILL)
        Issue.record("voxpipe \(arguments.joined(separator: " ")) still ran after \(watchdogSeconds) s: killed")
    }
    return running.wait()
}

/// `setpriv` arguments that run voxpipe as nobody when the tests run as root (who may read and
/// write anything, so permissions would test nothing); nil otherwise.
let asNobody: [String]? = getuid() == 0 ? ["--reuid=65534", "--regid=65534", "--clear-groups"] : nil

/// `count` 8 kHz mono tones of `seconds` (one second: 16,044 bytes) named `t1.wav`, `t2.wav`, …
/// in `dir/in`.
func tones(_ count: Int, seconds: Int = 1, in dir: URL) throws -> URL {
    let input = dir.appendingPathComponent("in")
    try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
    let samples = (0..<8000 * seconds).map { Float(sin(Double($0) * 2 * .pi * 440 / 8000) * 0.5) }
    for i in 1...count {
        try WAVData.pcm16(samples, format: AudioFormat(sampleRate: 8000, channels: 1))
            .write(to: input.appendingPathComponent("t\(i).wav"))
    }
    return input
}
