import Foundation
import Logging
import VoxCore
import VoxFormats

// libFuzzer calls `LLVMFuzzerTestOneInput` once per input; `VOXFUZZ_TARGET` says which place
// where outside bytes come in gets them (scripts/fuzz.sh sets it). Every target takes the bytes
// the way voxpipe does (a file where voxpipe reads a file, a response body where it parses
// one) through the modules' public API, and a bad input must end in a voxpipe error, never a
// crash: any other error stops the fuzzer as a finding too.

/// One place where bytes from outside enter voxpipe.
protocol FuzzTarget {
    /// Feeds one input; throws the error voxpipe gave for it.
    func run(_ data: Data) throws
    /// Seed inputs the target's own fixtures define (BagIt files, indexes), written by
    /// `VOXFUZZ_WRITE_SEEDS=DIR`; targets whose seeds are plain files have none.
    func seeds() throws -> [String: Data]
}

extension FuzzTarget {
    func seeds() throws -> [String: Data] { [:] }
}

/// Every target by name.
let targetNames = [
    "decode", "upload", "sidecar", "spec", "rules", "bagit", "chunks", "http", "ledger", "join", "verify",
    "multipart", "mp4", "wav", "metrics",
]

func makeTarget(_ name: String, workspace: URL, root: URL) throws -> any FuzzTarget {
    switch name {
    case "decode": return DecodeTarget(workspace: workspace)
    case "upload": return try UploadTarget(workspace: workspace, root: root)
    case "sidecar": return try SidecarTarget(workspace: workspace, root: root)
    case "spec": return try SpecTarget(workspace: workspace, root: root)
    case "rules": return RulesTarget(workspace: workspace)
    case "bagit": return try BagItTarget(workspace: workspace)
    case "chunks": return try ChunksTarget(workspace: workspace, root: root)
    case "http": return HTTPTarget(workspace: workspace)
    case "ledger": return try LedgerTarget(workspace: workspace)
    case "join": return JoinTarget(workspace: workspace)
    case "verify": return try VerifyTarget(workspace: workspace)
    case "multipart": return MultipartTarget()
    case "mp4": return MP4Target(workspace: workspace)
    case "wav": return WAVTarget()
    case "metrics": return MetricsTarget()
    default: fail("VOXFUZZ_TARGET=\(name) is not a target (one of: \(targetNames.joined(separator: ", ")))")
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("voxfuzz: \(message)\n".utf8))
    removeWorkspace()
    // _exit: libFuzzer reports a plain exit() as a crash of the input.
    _exit(2)
}

/// The scratch folder of this process, removed at exit.
nonisolated(unsafe) var workspacePath: String?

func removeWorkspace() {
    if let path = workspacePath { try? FileManager.default.removeItem(atPath: path) }
}

/// The target of this process, set up on the first input.
let target: any FuzzTarget = {
    LoggingSystem.bootstrap { _ in SwiftLogNoOpLogHandler() }
    let environment = ProcessInfo.processInfo.environment
    guard let name = environment["VOXFUZZ_TARGET"] else {
        fail("set VOXFUZZ_TARGET to one of: \(targetNames.joined(separator: ", "))")
    }
    let root = URL(fileURLWithPath: environment["VOXFUZZ_ROOT"] ?? FileManager.default.currentDirectoryPath)
    let workspace = FileManager.default.temporaryDirectory.appendingPathComponent("voxfuzz-\(name)-\(getpid())")
    do {
        try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        workspacePath = workspace.path
        atexit { removeWorkspace() }
        let target = try makeTarget(name, workspace: workspace, root: root)
        if let out = environment["VOXFUZZ_WRITE_SEEDS"] {
            let folder = URL(fileURLWithPath: out)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for (file, data) in try target.seeds() { try data.write(to: folder.appendingPathComponent(file)) }
            removeWorkspace()
            _exit(0)
        }
        return target
    } catch {
        fail("cannot set up target \(name): \(describe(error))")
    }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Data(bytes: data, count: size)
    do {
        try target.run(input)
    } catch let error as any CategorizedError where error.category != .internal {
        // A clean, categorized error: what bad input must give.
    } catch {
        // Crash on purpose, so libFuzzer keeps the input: an error no voxpipe module made.
        fatalError("not a voxpipe error for bad input: \(type(of: error)): \(error)")
    }
    return 0
}

/// Runs async work to its end from libFuzzer's synchronous callback.
func blocking<T>(_ body: @escaping () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do { box.result = .success(try await body()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    guard let result = box.result else { fatalError("async work ended without a result") }
    return try result.get()
}

/// Where `blocking` leaves the async work's result.
final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}

/// The first byte of an input picks one of `count` variants; the rest is the content.
func variant(_ data: Data, of count: Int) -> (Int, Data) {
    guard let first = data.first else { return (0, Data()) }
    return (Int(first) % count, data.dropFirst())
}

/// A new empty folder in `parent`, replacing any.
func freshFolder(_ parent: URL, _ name: String) throws -> URL {
    let url = parent.appendingPathComponent(name)
    try? FileManager.default.removeItem(at: url)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A short stereo 48 kHz 16-bit WAV: the upload several targets need.
func toneWAV(seconds: Double = 0.25, channels: Int = 2) -> Data {
    let rate = 48000
    let frames = Int(Double(rate) * seconds)
    var samples = [Float](repeating: 0, count: frames * channels)
    for f in 0..<frames {
        let v = Float(0.3 * sin(2 * Double.pi * 440 * Double(f) / Double(rate)))
        for c in 0..<channels { samples[f * channels + c] = v }
    }
    return WAVData.pcm16(samples, format: AudioFormat(sampleRate: rate, channels: channels))
}
