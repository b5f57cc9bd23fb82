import Foundation
import VoxCore
import VoxDecode
import VoxProcess
import VoxTesting

/// Helpers every test target shares: scratch folders, external tools, and turning files into
/// samples and samples into blocks with voxpipe's own stages.

/// A new empty folder under the system's temporary directory.
public func temporaryDirectory() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-test-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Runs a command-line tool (sox, ffmpeg, espeak-ng) found on PATH; throws when it fails.
public func runTool(_ tool: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [tool] + arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw VoxError(.internal, "\(tool) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
    }
}

/// Decodes a file with the decode stage alone; returns the blocks and what it reported.
public func decodeBlocks(
    _ url: URL, options: [String: JSONValue] = [:]
) async throws -> (blocks: [AudioBlock], facts: ItemFacts) {
    let harness = try StageHarness(
        DecodeStage.self, options: options,
        item: InputFile(url: url, relativePath: url.lastPathComponent, outputName: "x"))
    let (blocks, facts) = try await harness.run([harness.item], commit: false)
    return (blocks, facts)
}

/// A whole file as interleaved samples, decoded by voxpipe.
public func readAll(_ url: URL) async throws -> (format: AudioFormat, samples: [Float]) {
    let blocks = try await decodeBlocks(url).blocks
    return (blocks[0].format, blocks.flatMap(\.samples))
}

/// Interleaved samples cut into blocks of `blockFrames`, with their frame offsets.
public func blocks(_ samples: [Float], format: AudioFormat, blockFrames: Int = 4096) -> [AudioBlock] {
    var out: [AudioBlock] = []
    let frames = samples.count / format.channels
    var f = 0
    while f < frames {
        let n = min(blockFrames, frames - f)
        out.append(
            AudioBlock(
                format: format, samples: Array(samples[f * format.channels..<(f + n) * format.channels]),
                frameOffset: Int64(f)))
        f += n
    }
    return out
}

/// Speech made with espeak-ng (22.05 kHz mono WAV).
public func espeak(_ text: String, voice: String = "en-us", into dir: URL) throws -> URL {
    let url = dir.appendingPathComponent("speech-\(UUID().uuidString).wav")
    try runTool("espeak-ng", ["-v", voice, "-s", "140", "-w", url.path, text])
    return url
}

/// A sine of `seconds` at `amplitude`, interleaved over `channels`.
public func sine(rate: Int, channels: Int, seconds: Double, frequency: Double = 440, amplitude: Float = 0.5) -> [Float]
{
    let frames = Int(Double(rate) * seconds)
    var out = [Float](repeating: 0, count: frames * channels)
    for f in 0..<frames {
        let v = amplitude * Float(sin(2 * Double.pi * frequency * Double(f) / Double(rate)))
        for c in 0..<channels { out[f * channels + c] = v }
    }
    return out
}

public func rms(_ samples: some Collection<Float>) -> Float {
    guard !samples.isEmpty else { return 0 }
    return (samples.reduce(0) { $0 + $1 * $1 } / Float(samples.count)).squareRoot()
}

/// Words for scoring: case folded, punctuation dropped, letters of any script (ä, ö, ü, ß) and
/// digits kept as written.
public func scoringWords(_ text: String) -> [String] {
    text.lowercased().split { !($0.isLetter || $0.isNumber || $0 == "'") }.map(String.init)
}

/// Word error rate of `hypothesis` against `reference`: (substitutions + deletions +
/// insertions) / reference words, by Levenshtein alignment over `scoringWords`.
public func wordErrorRate(reference: String, hypothesis: String) -> Double {
    let r = scoringWords(reference), h = scoringWords(hypothesis)
    guard !r.isEmpty else { return h.isEmpty ? 0 : 1 }
    var previous = Array(0...h.count)
    for i in 1...r.count {
        var current = [i] + [Int](repeating: 0, count: h.count)
        for j in stride(from: 1, through: h.count, by: 1) {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (r[i - 1] == h[j - 1] ? 0 : 1))
        }
        previous = current
    }
    return Double(previous[h.count]) / Double(r.count)
}

/// Recordings and models that other Debian packages (or `make setup`) install, which some tests
/// use as real-world material. A test that needs one says so with `.needs(_:)` (TestTier.swift):
/// it is enabled only when the fixture is there, with a reason naming the package, so a machine
/// without it skips loudly instead of failing oddly; a model also keeps it out of the fast tier.
public enum InstalledFixture: String, Sendable {
    /// LibriVox read speech with reference transcripts (Debian's pocketsphinx-testdata).
    case librivox = "/usr/share/pocketsphinx/test/data/librivox"
    /// A man saying "front left" (Debian's alsa-utils).
    case alsaFrontLeft = "/usr/share/sounds/alsa/Front_Left.wav"
    /// A man saying "front right" (Debian's alsa-utils).
    case alsaFrontRight = "/usr/share/sounds/alsa/Front_Right.wav"
    /// The Whisper models `make setup` converts from PyPI packages (and the Silero VAD beside them).
    case whisperModels = "/usr/local/share/voxpipe/models"
    /// The Silero VAD model `make setup` installs from a PyPI package.
    case sileroModel = "/usr/local/share/voxpipe/models/silero"
    /// The Piper voice `make setup` installs from a PyPI package.
    case piperVoices = "/usr/local/share/voxpipe/voices/en_US-joe-medium"
    /// pocketsphinx's US English acoustic and language models (Debian's pocketsphinx-en-us).
    case pocketsphinxModel = "/usr/share/pocketsphinx/model/en-us"
    /// The speaker diarization models `make setup` converts from a PyPI package.
    case diarizationModels = "/usr/local/share/voxpipe/diarization"

    public var url: URL { URL(fileURLWithPath: rawValue) }
    public var isPresent: Bool { FileManager.default.fileExists(atPath: rawValue) }

    /// Whether it is a model a test loads (seconds of work and hundreds of MB), not a recording.
    public var isModel: Bool {
        switch self {
        case .librivox, .alsaFrontLeft, .alsaFrontRight: false
        case .whisperModels, .sileroModel, .piperVoices, .pocketsphinxModel, .diarizationModels: true
        }
    }

    /// What it is, in a few words.
    public var title: String {
        switch self {
        case .librivox: "the LibriVox recordings"
        case .alsaFrontLeft, .alsaFrontRight: "an alsa-utils recording"
        case .whisperModels: "a Whisper model"
        case .sileroModel: "the Silero VAD model"
        case .piperVoices: "a Piper voice"
        case .pocketsphinxModel: "the pocketsphinx model"
        case .diarizationModels: "the speaker diarization models"
        }
    }

    /// Why a test is skipped without it.
    public var skipReason: String {
        switch self {
        case .librivox: "needs \(rawValue) from Debian's pocketsphinx-testdata (make setup installs it)"
        case .alsaFrontLeft, .alsaFrontRight: "needs \(rawValue) from Debian's alsa-utils (make setup installs it)"
        case .whisperModels: "needs the Whisper models in \(rawValue) (make setup converts them)"
        case .sileroModel: "needs the Silero VAD model in \(rawValue) (make setup installs it)"
        case .piperVoices: "needs the Piper voice in \(rawValue) (make setup installs it)"
        case .pocketsphinxModel: "needs \(rawValue) from Debian's pocketsphinx-en-us (make setup installs it)"
        case .diarizationModels: "needs the speaker diarization models in \(rawValue) (make setup converts them)"
        }
    }
}

#if canImport(Glibc)
import Glibc

/// The thread's file-system user (Linux): set to another user to drop root's file powers.
@_silgen_name("setfsuid") private func setfsuid(_ uid: UInt32) -> Int32
#endif

/// Runs `body` with `folder` not writable (mode 0555): as root, whose file powers ignore the
/// mode, `body` runs on this thread as the unprivileged user nobody. `body` must not suspend.
public func withoutWriteAccess<T>(to folder: URL, _ body: () throws -> T) throws -> T {
    try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
    defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path) }
    #if canImport(Glibc)
    if geteuid() == 0 {
        _ = setfsuid(65534)
        defer { _ = setfsuid(0) }
        return try body()
    }
    #endif
    return try body()
}

/// An input the fuzzer (`make fuzz`) found or that fuzzing work turned up: a file under
/// Tests/Fixtures/fuzz-regressions/<target>/, fed to the public API by a regression test.
public func fuzzRegression(_ target: String, _ name: String) -> URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/fuzz-regressions/\(target)/\(name)")
}

/// What ffprobe reads from an audio file: its first audio stream's codec and rate, and the
/// container's duration in seconds.
public func probedDuration(_ url: URL) throws -> (codec: String, rate: Int, seconds: Double) {
    guard let ffprobe = ExternalTool.find("ffprobe") else { throw HarnessError("ffprobe is not on PATH") }
    let result = try ExternalTool.capture(
        ffprobe,
        [
            "-v", "error", "-select_streams", "a:0", "-show_entries", "stream=codec_name,sample_rate",
            "-show_entries", "format=duration", "-of", "default=noprint_wrappers=1", url.path,
        ])
    var fields: [String: String] = [:]
    for line in result.stdout.split(separator: "\n") {
        let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
        if parts.count == 2 { fields[parts[0]] = parts[1] }
    }
    guard result.status == 0, let codec = fields["codec_name"], let rate = fields["sample_rate"].flatMap(Int.init),
        let seconds = fields["duration"].flatMap(Double.init)
    else { throw HarnessError("ffprobe cannot read \(url.lastPathComponent): \(result.stderr)") }
    return (codec, rate, seconds)
}

/// The engines (Whisper models) of this test process: loaded once, shared by every test that
/// passes them to a `StageHarness` or a runner's context.
public let testEngines = EngineCache()

/// A small seeded generator, so property tests are repeatable.
public struct SplitMix: RandomNumberGenerator {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
