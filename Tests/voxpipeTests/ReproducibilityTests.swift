import Foundation
import Testing
import VoxTestSupport

/// Same input, spec and model → the same transcripts, whatever the machine's cores, `--jobs`, the
/// thread count or the load beside the run; and a signal stops a decode at once.
@Suite(
    .serialized,
    .needs(.whisperModels),
    .needs(.librivox),
    .startsProcess("the voxpipe binary")
) struct ReproducibilityTests {
    /// A LibriVox line and two samples (English, German) in one folder: three items, so two jobs
    /// and two threads each have work to interleave (every transcript of the four runs is
    /// compared; more items would add minutes of decoding, not another way to differ).
    func inputs() throws -> URL {
        let input = temporaryDirectory().appendingPathComponent("in")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        let librivox = InstalledFixture.librivox.url
        let lines = try FileManager.default.contentsOfDirectory(atPath: librivox.path).filter { $0.hasSuffix(".wav") }
        for name in lines.sorted().prefix(1) {
            try FileManager.default.copyItem(
                at: librivox.appendingPathComponent(name), to: input.appendingPathComponent(name))
        }
        for name in ["speech-en-22k-mono.wav", "speech-de-44k-stereo.flac"] {
            try FileManager.default.copyItem(
                at: packageRoot.appendingPathComponent("Samples/\(name)"), to: input.appendingPathComponent(name))
        }
        return input
    }

    /// Every transcript file (txt, json, srt, …) of a run with its SHA-256.
    func transcripts(_ out: URL) throws -> [String: String] {
        try outputHashes(out).filter { $0.key.contains("/transcript.") }
    }

    /// CPU hogs beside a run, as another tenant's jobs would be; stopped when the run is done.
    func withHogs<T>(_ count: Int, _ body: () throws -> T) throws -> T {
        let hogs = try (0..<count).map { _ -> Process in
            let hog = Process()
            hog.executableURL = URL(fileURLWithPath: "/usr/bin/yes")
            hog.standardOutput = FileHandle.nullDevice
            try hog.run()
            return hog
        }
        defer {
            for hog in hogs {
                // SIGKILL: a child may inherit an ignored SIGTERM from the test process.
                kill(hog.processIdentifier, SIGKILL)
                hog.waitUntilExit()
            }
        }
        return try body()
    }

    @Test func transcriptsDoNotDependOnThreadsJobsCoresOrLoad() throws {
        let input = try inputs()
        let dir = input.deletingLastPathComponent()
        let shipped = packageRoot.appendingPathComponent("Pipelines/transcribe.json")
        // The shipped pipeline, and the same with two threads per decode.
        let twoThreads = try writeSpec(
            try String(contentsOf: shipped, encoding: .utf8).replacingOccurrences(
                of: #""language": "auto" }"#, with: #""language": "auto", "threads": 2 }"#), in: dir,
            name: "two-threads.json")
        #expect(try String(contentsOf: twoThreads, encoding: .utf8).contains(#""threads": 2"#))

        func transcribe(_ name: String, _ arguments: [String], spec: URL = shipped) throws -> [String: String] {
            let out = dir.appendingPathComponent(name)
            let result = try voxpipe(["run", spec.path, input.path, "-o", out.path] + arguments)
            #expect(result.status == 0, "\(name): \(result.stderr)")
            return try transcripts(out)
        }
        let reference = try transcribe("jobs1-threads2", ["--jobs", "1"], spec: twoThreads)
        #expect(reference.count == 3 * 5, "\(reference.keys.sorted())")
        #expect(try transcribe("jobs2", ["--jobs", "2"]) == reference)
        // One core: taskset pins the run (and what it starts) to CPU 0.
        let oneCore = dir.appendingPathComponent("one-core")
        let pinned = try run(
            "/usr/bin/taskset", ["-c", "0", voxpipeBinary.path, "run", shipped.path, input.path, "-o", oneCore.path])
        #expect(pinned.status == 0, "\(pinned.stderr)")
        #expect(try transcripts(oneCore) == reference)
        #expect(try withHogs(2) { try transcribe("busy", []) } == reference)
    }

    @Test func sigtermDuringAWhisperDecodeStopsItAndExits143() throws {
        let input = temporaryDirectory().appendingPathComponent("in")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: packageRoot.appendingPathComponent("Samples/speech-en-22k-mono.wav"),
            to: input.appendingPathComponent("a-short.wav"))
        // Over a minute of read speech: the LibriVox lines three times over.
        let lines = try FileManager.default.contentsOfDirectory(atPath: InstalledFixture.librivox.url.path)
            .filter { $0.hasSuffix(".wav") }.sorted().map {
                InstalledFixture.librivox.url.appendingPathComponent($0).path
            }
        let long = input.appendingPathComponent("b-long.wav")
        #expect(try run("/usr/bin/sox", lines + lines + lines + [long.path]).status == 0)

        let out = input.deletingLastPathComponent().appendingPathComponent("out")
        let report = input.deletingLastPathComponent().appendingPathComponent("r.jsonl")
        let spec = packageRoot.appendingPathComponent("Pipelines/transcribe.json")
        let running = try start(["run", spec.path, input.path, "-o", out.path, "--jobs", "1", "--report", report.path])
        // The short item is done; the long one is decoding once the run has spent three more
        // seconds of CPU (whisper is nearly all of it).
        #expect(running.waitForStderr(containing: "] done a-short.wav"), "\(running.stderrSoFar)")
        let pid = running.process.processIdentifier
        let before = cpuSeconds(pid)
        _ = waitUntil { cpuSeconds(pid) > before + 3 || !running.process.isRunning }
        #expect(running.process.isRunning, "the long item finished before it could be interrupted")
        // The CPU the run spends from the signal to its exit (its last reading before it ends), not
        // the wall time, which a busy machine stretches: a decode aborted at once leaves the report
        // and the exit, a fraction of a second; a decode run to the end of its window takes seconds.
        let signalled = cpuSeconds(pid)
        var last = signalled
        kill(pid, SIGTERM)
        _ = waitUntil {
            last = max(last, cpuSeconds(pid))
            return !running.process.isRunning
        }
        let result = running.wait()
        #expect(result.status == 143, "\(result.stderr)")
        #expect(last - signalled < 1.5, "the run spent \(last - signalled) s of CPU after SIGTERM")
        #expect(result.stderr.contains("b-long.wav: "), "\(result.stderr)")
        #expect(result.stderr.contains("interrupted by SIGTERM"), "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: report.path))
        #expect(
            !FileManager.default.fileExists(atPath: out.appendingPathComponent("b-long").path)
                || files(under: out.appendingPathComponent("b-long")).isEmpty)
    }

    /// User + system CPU seconds a process has used so far (/proc/PID/stat).
    func cpuSeconds(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the name: state is field 3, utime 14 and stime 15 (1-based in proc(5)).
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
