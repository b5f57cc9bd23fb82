import Foundation
import Testing
import VoxTestSupport

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Exactly-once batches: ledger, lock, kill-safety, signals, reports.
@Suite(.serialized, .startsProcess("the voxpipe binary")) struct BatchTests {
    /// A spec with a streamed writer and a numbered one, so an item commits several files.
    static let spec = #"""
        {"name": "batch", "stages": [
          {"id": "decode", "kind": "decode", "blockFrames": 2048},
          {"id": "mono", "kind": "resample", "rate": 16000, "channels": 1},
          {"id": "audio", "kind": "write-wav"},
          {"id": "parts", "kind": "chunk", "mode": "window", "seconds": 1, "from": "mono"},
          {"id": "part", "kind": "write-wav"}
        ]}
        """#

    /// A folder of inputs copied from Samples/ (names kept), and the spec.
    func fixture() throws -> (dir: URL, input: URL, spec: URL) {
        let dir = temporaryDirectory()
        let input = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(
            at: input.appendingPathComponent("sub"), withIntermediateDirectories: true)
        for name in [
            "speech-en-22k-mono.wav", "speech-de-44k-stereo.flac", "sweep-8k.aiff", "tone-48k-stereo-24bit.wav",
            "speech-en.ogg",
        ] {
            try FileManager.default.copyItem(
                at: packageRoot.appendingPathComponent("Samples/\(name)"), to: input.appendingPathComponent(name))
        }
        try FileManager.default.copyItem(
            at: packageRoot.appendingPathComponent("Samples/speech-en.mp3"),
            to: input.appendingPathComponent("sub/speech-en.mp3"))
        return (dir, input, try writeSpec(Self.spec, in: dir))
    }

    /// A 3-minute stereo file: with libsamplerate's best converter a run takes seconds.
    func addLongInput(to input: URL) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "sox", "-n", "-r", "48000", "-c", "2", input.appendingPathComponent("long.wav").path, "synth", "180",
            "pinknoise", "gain", "-20",
        ]
        try process.run()
        process.waitUntilExit()
    }

    func report(_ url: URL) throws -> [[String: Any]] {
        try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
        }
    }

    func statuses(_ url: URL) throws -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: try report(url).map { ($0["path"] as? String ?? "", $0["status"] as? String ?? "") })
    }

    @Test func anOutputFolderInsideTheInputIsNeverTakenAsInput() throws {
        let (dir, input, spec) = try fixture()
        let out = input.appendingPathComponent("out")
        let rep = dir.appendingPathComponent("r.jsonl")
        let first = try voxpipe(["run", spec.path, input.path, "-o", out.path, "--report", rep.path])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try report(rep).count == 6)
        // Twice more, as a cron job would: the outputs written under in/out are not new items.
        for _ in 0..<2 {
            let again = try voxpipe(["run", spec.path, input.path, "-o", out.path, "--report", rep.path])
            #expect(again.status == 0)
            #expect(
                again.stderr.contains("voxpipe: not searching \(out.path): voxpipe outputs, not input"),
                "\(again.stderr)")
            #expect(Set(try statuses(rep).values) == ["skipped"])
            #expect(try report(rep).count == 6)
        }
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("out").path))
        // Another run's output folder under the input (it holds a lock file) is passed over too.
        let other = dir.appendingPathComponent("elsewhere")
        #expect(try voxpipe(["run", spec.path, input.path, "-o", other.path, "--report", rep.path]).status == 0)
        #expect(try report(rep).count == 6)
    }

    @Test func aRerunSkipsEverythingAndAChangedOptionRedoesEverything() throws {
        let (dir, input, spec) = try fixture()
        let out = dir.appendingPathComponent("out"), rep = dir.appendingPathComponent("r.jsonl")
        #expect(try voxpipe(["run", spec.path, input.path, "-o", out.path, "--report", rep.path]).status == 0)
        #expect(Set(try statuses(rep).values) == ["done"])
        let first = try outputHashes(out)

        #expect(try voxpipe(["run", spec.path, input.path, "-o", out.path, "--report", rep.path]).status == 0)
        #expect(Set(try statuses(rep).values) == ["skipped"])
        #expect(try outputHashes(out) == first)

        // One changed input, one deleted output, one altered output: exactly those redo.
        try FileManager.default.copyItem(
            at: packageRoot.appendingPathComponent("Samples/sweep-8k.aiff"), to: dir.appendingPathComponent("tmp.aiff"))
        try FileManager.default.removeItem(at: input.appendingPathComponent("tone-48k-stereo-24bit.wav"))
        try FileManager.default.copyItem(
            at: packageRoot.appendingPathComponent("Samples/speech-en-22k-mono.wav"),
            to: input.appendingPathComponent("tone-48k-stereo-24bit.wav"))
        try FileManager.default.removeItem(at: out.appendingPathComponent("sweep-8k/part-0001.wav"))
        try Data("tampered".utf8).write(to: out.appendingPathComponent("speech-en/audio.wav"))
        #expect(try voxpipe(["run", spec.path, input.path, "-o", out.path, "--report", rep.path]).status == 0)
        let s = try statuses(rep)
        #expect(s["tone-48k-stereo-24bit.wav"] == "done")
        #expect(s["sweep-8k.aiff"] == "done")
        #expect(s["speech-en.ogg"] == "done")
        #expect(s["speech-en-22k-mono.wav"] == "skipped")
        #expect(
            try report(rep).first { $0["path"] as? String == "sweep-8k.aiff" }?["reason"] as? String
                == "output missing: sweep-8k/part-0001.wav")

        let changed = try writeSpec(
            Self.spec.replacingOccurrences(of: #""seconds": 1"#, with: #""seconds": 2"#), in: dir, name: "changed.json")
        #expect(try voxpipe(["run", changed.path, input.path, "-o", out.path, "--report", rep.path]).status == 0)
        #expect(Set(try statuses(rep).values) == ["done"])
        #expect(
            try voxpipe(["run", changed.path, input.path, "-o", out.path, "--report", rep.path, "--force"]).status == 0)
        #expect(Set(try statuses(rep).values) == ["done"])
    }

    @Test func dryRunListsDecisionsAndOutputsAndWritesNothing() throws {
        let (dir, input, spec) = try fixture()
        let out = dir.appendingPathComponent("out")
        let dry = try voxpipe(["run", spec.path, input.path, "-o", out.path, "--dry-run"])
        #expect(dry.status == 0)
        #expect(!FileManager.default.fileExists(atPath: out.path))
        #expect(
            dry.stdout.contains(
                "run   sub/speech-en.mp3 → sub/speech-en/ (not done before): audio.wav, part-NNNN.wav\n"))
        #expect(try voxpipe(["run", spec.path, input.path, "-o", out.path]).status == 0)
        try FileManager.default.removeItem(at: out.appendingPathComponent("sweep-8k/audio.wav"))
        let again = try voxpipe(["run", spec.path, input.path, "-o", out.path, "--dry-run"])
        #expect(again.stdout.contains("skip  speech-en.ogg → speech-en/ (done before, outputs intact)"))
        #expect(again.stdout.contains("run   sweep-8k.aiff → sweep-8k/ (output missing: sweep-8k/audio.wav)"))
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("sweep-8k/audio.wav").path))
    }

    @Test func aSecondRunOnALockedFolderExits75AndTouchesNothing() throws {
        let (dir, input, spec) = try fixture()
        let out = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let fd = open(out.appendingPathComponent(".voxpipe.lock").path, O_RDWR | O_CREAT, 0o644)
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        let result = try voxpipe(["run", spec.path, input.path, "-o", out.path])
        close(fd)
        #expect(result.status == 75)
        #expect(result.stderr.hasPrefix("voxpipe: error: another voxpipe run is using \(out.path)"))
        #expect(files(under: out) == [".voxpipe.lock"])
    }

    @Test func twoRunsStartedTogetherOneWorksTheOtherExits75() throws {
        let (dir, input, _) = try fixture()
        try addLongInput(to: input)
        // Slow enough to overlap: libsamplerate's best converter over every file.
        let slow = try writeSpec(
            Self.spec.replacingOccurrences(
                of: #""channels": 1}"#, with: #""channels": 1, "engine": "libsamplerate", "quality": "best"}"#),
            in: dir, name: "slow.json")
        let out = dir.appendingPathComponent("out")
        let results = try [0, 1].map { _ in try start(["run", slow.path, input.path, "-o", out.path, "--jobs", "1"]) }
            .map { $0.wait() }
        #expect(results.map(\.status).sorted() == [0, 75])
        #expect(files(under: out).filter { $0.hasSuffix("voxpipe.manifest.json") }.count == 7)
    }

    @Test func differentShardsRunSideBySideAndTogetherCoverTheBatch() throws {
        let (dir, input, spec) = try fixture()
        let out = dir.appendingPathComponent("out")
        let reports = (0..<3).map { dir.appendingPathComponent("shard\($0).jsonl") }
        let runs = try (0..<3).map { k in
            try start(["run", spec.path, input.path, "-o", out.path, "--shard", "\(k)/3", "--report", reports[k].path])
        }
        #expect(runs.map { $0.wait().status } == [0, 0, 0])
        let done = try reports.flatMap { try statuses($0).keys }
        #expect(
            done.sorted() == [
                "speech-de-44k-stereo.flac", "speech-en-22k-mono.wav", "speech-en.ogg", "sub/speech-en.mp3",
                "sweep-8k.aiff", "tone-48k-stereo-24bit.wav",
            ])
        // The environment of an indexed job selects the same shard as the flag.
        let env = ProcessInfo.processInfo.environment.merging(["JOB_COMPLETION_INDEX": "1", "VOXPIPE_SHARD_COUNT": "3"])
        { $1 }
        let viaEnv = try voxpipe(
            ["run", spec.path, input.path, "-o", out.path, "--report", dir.appendingPathComponent("env.jsonl").path],
            environment: env)
        #expect(viaEnv.status == 0)
        #expect(Set(try statuses(dir.appendingPathComponent("env.jsonl")).keys) == Set(try statuses(reports[1]).keys))
    }

    @Test func killedAtRandomMomentsARerunGivesByteIdenticalOutputsAndNoTemporaryFiles() throws {
        let (dir, input, spec) = try fixture()
        // More items, so a run lasts long enough to be killed at many different moments.
        for copy in 1...2 {
            try FileManager.default.copyItem(
                at: input.appendingPathComponent("sub"), to: input.appendingPathComponent("copy\(copy)"))
        }
        for name in ["speech-en-22k-mono.wav", "speech-de-44k-stereo.flac", "tone-48k-stereo-24bit.wav"] {
            try FileManager.default.copyItem(
                at: input.appendingPathComponent(name), to: input.appendingPathComponent("copy1/\(name)"))
        }
        let reference = dir.appendingPathComponent("reference")
        #expect(try voxpipe(["run", spec.path, input.path, "-o", reference.path, "--jobs", "2"]).status == 0)
        let expected = try outputHashes(reference)
        let items = manifestCount(reference)
        #expect(items > 10)
        var killedMidway = 0
        // Each trial kills the run once it has finished a given number of items (0, 1, 2, …), read
        // from what it has written, so every trial stops a run midway whatever the machine's speed.
        for trial in 0..<20 {
            let out = dir.appendingPathComponent("trial\(trial)")
            let run = try start(["run", spec.path, input.path, "-o", out.path, "--jobs", "2"])
            let target = trial % items
            _ = waitUntil { manifestCount(out) >= target || !run.process.isRunning }
            kill(run.process.processIdentifier, SIGKILL)
            if run.wait().status != 0 { killedMidway += 1 }
            let rerun = try voxpipe(["run", spec.path, input.path, "-o", out.path])
            #expect(rerun.status == 0, "trial \(trial): \(rerun.stderr)")
            let got = try outputHashes(out)
            let differing = Set(got.keys).union(expected.keys).filter { got[$0] != expected[$0] }.sorted()
            #expect(differing.isEmpty, "trial \(trial): \(differing.prefix(5)) \(rerun.stderr)")
            let leftovers = files(under: out).filter { $0.contains(".voxpipe-tmp-") || $0.contains(".voxpipe-atomic-") }
            #expect(leftovers.isEmpty, "trial \(trial): \(leftovers)")
        }
        #expect(killedMidway >= 10, "too few trials were killed before finishing")
    }

    @Test func sigtermAbandonsCleanlyWritesTheReportAndExits143() throws {
        let (dir, input, _) = try fixture()
        try addLongInput(to: input)
        let slow = try writeSpec(
            Self.spec.replacingOccurrences(
                of: #""channels": 1}"#, with: #""channels": 1, "engine": "libsamplerate", "quality": "best"}"#),
            in: dir, name: "slow.json")
        let out = dir.appendingPathComponent("out"), rep = dir.appendingPathComponent("r.jsonl"),
            prom = dir.appendingPathComponent("m.prom")
        let run = try start([
            "run", slow.path, input.path, "-o", out.path, "--jobs", "1", "--report", rep.path, "--metrics", prom.path,
        ])
        // Once an item is done the run is under way (its handler is installed before anything
        // slow) and the long input is still to come or running.
        #expect(run.waitForStderr(containing: "] done "), "\(run.stderrSoFar)")
        kill(run.process.processIdentifier, SIGTERM)
        let result = run.wait()
        #expect(result.status == 143)
        #expect(result.stderr.contains("interrupted by SIGTERM"))
        #expect(FileManager.default.fileExists(atPath: rep.path))
        #expect(
            try String(contentsOf: prom, encoding: .utf8).contains("voxpipe_last_run_success{job_name=\"batch\"} 0"))
        #expect(files(under: out).filter { $0.contains(".voxpipe-tmp-") }.isEmpty)
        // Every item folder that exists is complete: it has its manifest.
        let folders = Set(
            files(under: out).filter { $0.contains("/") }.map { ($0 as NSString).deletingLastPathComponent })
        for folder in folders {
            #expect(
                FileManager.default.fileExists(
                    atPath: out.appendingPathComponent("\(folder)/voxpipe.manifest.json").path), "\(folder)")
        }
    }

    @Test func metricsParseAsPrometheusTextAndJUnitAsXML() throws {
        let (dir, input, spec) = try fixture()
        try Data("not audio".utf8).write(to: input.appendingPathComponent("broken <&>.wav"))
        let out = dir.appendingPathComponent("out"), prom = dir.appendingPathComponent("m.prom"),
            xml = dir.appendingPathComponent("j.xml")
        #expect(
            try voxpipe(["run", spec.path, input.path, "-o", out.path, "--metrics", prom.path, "--junit", xml.path])
                .status == 1)

        // Prometheus text format: HELP/TYPE comments, then `name{labels} value` samples.
        let text = try String(contentsOf: prom, encoding: .utf8)
        let sample = try Regex(
            #"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? -?[0-9.eE+-]+$"#)
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") { continue }
            #expect(line.wholeMatch(of: sample) != nil, "not a sample line: \(line)")
        }
        #expect(text.contains("voxpipe_items{job_name=\"batch\",status=\"failed\"} 1"))
        #expect(text.contains("voxpipe_items{job_name=\"batch\",status=\"done\"} 6"))
        #expect(!text.contains("voxpipe_last_success_timestamp_seconds{"))

        let document = try XMLDocument(contentsOf: xml)
        let suite = try document.nodes(forXPath: "/testsuites/testsuite").first as? XMLElement
        #expect(suite?.attribute(forName: "tests")?.stringValue == "7")
        #expect(suite?.attribute(forName: "failures")?.stringValue == "1")
        let failures = try document.nodes(forXPath: "//testcase[failure]")
        #expect(failures.count == 1)
        #expect((failures.first as? XMLElement)?.attribute(forName: "name")?.stringValue == "broken <&>.wav")

        // A clean rerun records a last success.
        try FileManager.default.removeItem(at: input.appendingPathComponent("broken <&>.wav"))
        #expect(try voxpipe(["run", spec.path, input.path, "-o", out.path, "--metrics", prom.path]).status == 0)
        #expect(
            try String(contentsOf: prom, encoding: .utf8).contains(
                "voxpipe_last_success_timestamp_seconds{job_name=\"batch\"} "))
    }
}
