import Foundation
import VoxCore
import VoxFormats
import VoxProcess

/// Decodes a file libsndfile cannot read (m4a/AAC, webm, …) with `ffmpeg` as a child process,
/// streaming Float32 WAV from its stdout.
final class FFmpegReader {
    let format: AudioFormat
    let duration: Double?
    private let process: Process
    private let stdout: FileHandle
    private let stderrURL: URL
    private var pending = Data()
    private let path: String

    /// Finds `ffmpeg` and `ffprobe` on PATH; nil when either is missing.
    static func tools(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> (ffmpeg: URL, ffprobe: URL)? {
        guard let ffmpeg = ExternalTool.find("ffmpeg", environment: environment),
            let ffprobe = ExternalTool.find("ffprobe", environment: environment)
        else { return nil }
        return (ffmpeg, ffprobe)
    }

    /// The format and duration of the first audio stream, from ffprobe.
    static func probe(url: URL, ffprobe: URL) throws -> (format: AudioFormat, duration: Double?) {
        let probe = try ExternalTool.capture(
            ffprobe,
            [
                "-v", "error", "-select_streams", "a:0", "-show_entries", "stream=sample_rate,channels:format=duration",
                "-of", "default=noprint_wrappers=1", url.path,
            ])
        guard probe.status == 0 else {
            let line = ExternalTool.lastLine(probe.stderr, path: url.path, fallback: "exit status \(probe.status)")
            throw DecodeError(.ffmpegFailed, "ffprobe: \(line)")
        }
        var fields: [String: String] = [:]
        for line in probe.stdout.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        guard let rate = fields["sample_rate"].flatMap({ Int($0) }),
            let channels = fields["channels"].flatMap({ Int($0) })
        else {
            throw DecodeError(.unreadable, "no audio stream found (ffprobe)")
        }
        return (AudioFormat(sampleRate: rate, channels: channels), fields["duration"].flatMap { Double($0) })
    }

    /// Starts ffmpeg, writing the first audio stream as Float32 WAV to a pipe; the format is
    /// what ffmpeg's WAV header says it writes. The length comes from the file's MP4 header where
    /// it has one (M4A: no second process), else from ffprobe, run while ffmpeg starts.
    init(url: URL, ffmpeg: URL, ffprobe: URL) throws {
        path = url.path
        stderrURL = FileManager.default.temporaryDirectory.appendingPathComponent(
            "voxpipe-ffmpeg-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        let pipe = Pipe()
        process = Process()
        process.executableURL = ffmpeg
        process.arguments = [
            "-nostdin", "-v", "error", "-i", url.path, "-map", "0:a:0", "-f", "wav", "-acodec", "pcm_f32le", "-",
        ]
        process.standardOutput = pipe
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        process.standardInput = FileHandle.nullDevice
        stdout = pipe.fileHandleForReading
        do {
            try process.run()
        } catch {
            try? FileManager.default.removeItem(at: stderrURL)
            throw DecodeError(.ffmpegFailed, "cannot start ffmpeg: \(describe(error))")
        }
        duration = MP4Header.seconds(url) ?? (try? Self.probe(url: url, ffprobe: ffprobe))?.duration
        do {
            format = try WAVStreamHeader.read(from: stdout)
        } catch {
            // No header: ffmpeg could not decode the file; its own last line says why.
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            let log = (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
            try? stdout.close()
            try? FileManager.default.removeItem(at: stderrURL)
            if process.terminationStatus != 0 && process.terminationReason == .exit {
                let line = ExternalTool.lastLine(
                    log, path: url.path, fallback: "exit status \(process.terminationStatus)")
                throw DecodeError(.ffmpegFailed, "ffmpeg: \(line)")
            }
            throw error
        }
    }

    deinit {
        cancel()
        try? stdout.close()
        try? FileManager.default.removeItem(at: stderrURL)
    }

    /// Reads up to `maxFrames` frames; an empty buffer at the end. Throws ffmpeg's own error when
    /// it exits non-zero, and `CancellationError` (ffmpeg terminated) once the item's task is
    /// cancelled: a turn that timed out or lost its client stops decoding, within the read under
    /// way when it runs as a `BlockingJob` (killing ffmpeg ends the read).
    func read(maxFrames: Int) throws -> [Float] {
        let job = BlockingJob.current
        if Task.isCancelled || job?.isCancelled == true {
            cancel()
            throw CancellationError()
        }
        let frameBytes = 4 * format.channels
        let want = maxFrames * frameBytes
        // ffmpeg is not waited for inside: the hook never signals a pid that may be another's.
        let pid = process.processIdentifier
        let readAll = { [self] in
            while pending.count < want {
                guard let data = try stdout.read(upToCount: want - pending.count), !data.isEmpty else { break }
                pending.append(data)
            }
        }
        if let job { try job.whileRunning(onCancel: { kill(pid, SIGKILL) }, readAll) } else { try readAll() }
        if job?.isCancelled == true { throw CancellationError() }
        let usable = pending.count - pending.count % frameBytes
        if usable == 0 {
            process.waitUntilExit()
            if process.terminationStatus != 0 {
                let log = (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
                let line = ExternalTool.lastLine(
                    log, path: path, fallback: "exit status \(process.terminationStatus)")
                throw DecodeError(.ffmpegFailed, "ffmpeg: \(line)")
            }
            return []
        }
        var samples = [Float](repeating: 0, count: usable / 4)
        samples.withUnsafeMutableBytes { dst in
            pending.withUnsafeBytes { src in dst.copyMemory(from: UnsafeRawBufferPointer(rebasing: src[0..<usable])) }
        }
        pending.removeSubrange(0..<usable)
        return samples
    }

    /// Kills ffmpeg: SIGKILL, as `ExternalTool` does, since a child started from a thread of Swift's
    /// pool inherits its blocked signals and SIGTERM would wait.
    func cancel() { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
}

/// The header ffmpeg writes before the samples when it streams WAV to a pipe (`WAVData.header`,
/// read up to the samples so that none of them is consumed): the format of what follows.
enum WAVStreamHeader {
    static func read(from handle: FileHandle) throws -> AudioFormat {
        let header = try WAVData.header { count in
            var data = Data()
            while data.count < count {
                guard let more = try handle.read(upToCount: count - data.count), !more.isEmpty else { return nil }
                data.append(more)
            }
            return [UInt8](data)
        }
        guard let header else { throw DecodeError(.ffmpegFailed, "ffmpeg wrote no WAV header") }
        guard header.bits == 32 else {
            throw DecodeError(.ffmpegFailed, "ffmpeg wrote \(header.bits)-bit samples, not 32-bit float")
        }
        return header.format
    }
}
