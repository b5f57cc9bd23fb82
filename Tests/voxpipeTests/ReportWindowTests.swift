import Foundation
import Testing
import VoxTestSupport

/// Evidence anchored at the reported moment: windows, shortfall, folded taps, seeking.
@Suite(.serialized, .startsProcess("the voxpipe binary")) struct ReportWindowTests {
    let spec = packageRoot.appendingPathComponent("Pipelines/moderation-evidence.json").path

    /// The hour of tones, made once for the suite (sox spends seconds of CPU on it; each test
    /// gets its own copy).
    static let hour = Result { () throws -> URL in
        let wav = temporaryDirectory().appendingPathComponent("hour.wav")
        let minutes = (0..<60).flatMap { m in (m == 0 ? [] : [":"]) + ["synth", "60", "sine", "\(200 + 20 * m)"] }
        try runTool("sox", ["-n", "-r", "8000", "-c", "1", "-b", "16", wav.path] + minutes)
        return wav
    }

    /// A 60-minute 8 kHz mono upload whose minute m is a (200 + 20·m) Hz tone, and its sidecar.
    func upload(in dir: URL, reports: String) throws -> URL {
        let input = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: try Self.hour.get(), to: input.appendingPathComponent("upload.wav"))
        try Data(#"{"room": "lobby", "recordingStartedAt": "2026-11-20T10:00:00Z", "reports": [\#(reports)]}"#.utf8)
            .write(to: input.appendingPathComponent("upload.json"))
        return input
    }

    /// The minute a stretch of the tone comes from, read back from its frequency.
    func minute(_ samples: ArraySlice<Float>, rate: Double) -> Int {
        var crossings = 0
        for (a, b) in zip(samples, samples.dropFirst()) where (a < 0) != (b < 0) { crossings += 1 }
        let hz = Double(crossings) / 2 / (Double(samples.count) / rate)
        return Int(((hz - 200) / 20).rounded())
    }

    func report(_ bag: URL) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: bag.appendingPathComponent("data/report.json")))
            as? [String: Any] ?? [:]
    }

    @Test func reportsAtFiveTwentyAndFiftyNineMinutesGetTheFiveMinutesBeforeEach() async throws {
        let dir = temporaryDirectory()
        let input = try upload(
            in: dir,
            reports: #"""
                {"reportId": "R-5", "reportedUser": "bob", "reportedAt": "2026-11-20T10:05:00Z"},
                {"reportId": "R-20", "reportedUser": "bob", "offsetSeconds": 1200},
                {"reportId": "R-59", "reportedUser": "bob", "reportedAt": "2026-11-20T10:59:00Z"},
                {"reportId": "R-2", "reportedUser": "eve", "offsetSeconds": 120}
                """#)
        let out = dir.appendingPathComponent("out")
        let result = try voxpipe(["run", spec, input.path, "-o", out.path])
        #expect(result.status == 0, "\(result.stderr)")
        for (id, endMinute) in [("R-5", 5), ("R-20", 20), ("R-59", 59)] {
            let bag = out.appendingPathComponent("upload/channel0/\(id)/evidence")
            let (format, samples) = try await readAll(bag.appendingPathComponent("data/evidence.wav"))
            #expect(format.sampleRate == 48000 && samples.count == 300 * 48000, "\(id): \(samples.count) samples")
            // Each of the five minutes, sampled in its middle 2 s (tones 20 Hz apart: a crossing more
            // or less moves the estimate 0.25 Hz), is the minute it should be.
            let got = (0..<5).map { k in minute(samples[(k * 60 + 29) * 48000..<(k * 60 + 31) * 48000], rate: 48000) }
            #expect(got == Array(endMinute - 5..<endMinute), "\(id): minutes \(got)")
            let window = try #require(try report(bag)["window"] as? [String: Any])
            #expect(
                window["end"] as? Double == Double(endMinute * 60) && window["reportIds"] as? [String] == [id]
                    && window["shortfallSeconds"] as? Double == 0)
            let info = try String(contentsOf: bag.appendingPathComponent("bag-info.txt"), encoding: .utf8)
            #expect(info.contains("External-Identifier: \(id)\n"))
        }
        // A report 2 minutes in has only 120 s before it: the bag says so.
        let early = out.appendingPathComponent("upload/channel0/R-2/evidence")
        let (_, samples) = try await readAll(early.appendingPathComponent("data/evidence.wav"))
        #expect(samples.count == 120 * 48000)
        let window = try #require(try report(early)["window"] as? [String: Any])
        #expect(
            window["seconds"] as? Double == 120 && window["requestedSeconds"] as? Double == 300
                && window["shortfallSeconds"] as? Double == 180)

        let verify = try voxpipe(["verify", "--rebuild", spec, out.path])
        #expect(verify.status == 0 && verify.stdout.split(separator: "\n").count == 4, "\(verify.stdout)")
        #expect(
            try python(["-c", "import bagit,sys\nfor p in sys.argv[1:]: bagit.Bag(p).validate()", early.path]) == 0)
    }

    @Test func twoTapsThreeSecondsApartFoldIntoOneBagWithBothIds() async throws {
        let dir = temporaryDirectory()
        let input = try upload(
            in: dir,
            reports: #"""
                {"reportId": "T-1", "reportedUser": "bob", "offsetSeconds": 1800},
                {"reportId": "T-2", "reportedUser": "bob", "offsetSeconds": 1803},
                {"reportId": "T-3", "reportedUser": "bob", "offsetSeconds": 1830}
                """#)
        let out = dir.appendingPathComponent("out")
        #expect(try voxpipe(["run", spec, input.path, "-o", out.path]).status == 0)
        let folders = try FileManager.default.contentsOfDirectory(
            atPath: out.appendingPathComponent("upload/channel0").path
        ).sorted()
        #expect(folders == ["T-1", "T-3"])
        let folded = out.appendingPathComponent("upload/channel0/T-1/evidence")
        let window = try #require(try report(folded)["window"] as? [String: Any])
        #expect(
            window["reportIds"] as? [String] == ["T-1", "T-2"] && window["end"] as? Double == 1803
                && window["start"] as? Double == 1503)
        #expect(
            try String(contentsOf: folded.appendingPathComponent("bag-info.txt"), encoding: .utf8).contains(
                "External-Identifier: T-1, T-2\n"))
    }

    @Test func pruneRemovesOldItemsWholeKeepsHeldAndNewOnesAndARunAfterRedoesNothing() throws {
        let dir = temporaryDirectory()
        let input = try upload(
            in: dir,
            reports: #"""
                {"reportId": "OLD", "reportedUser": "bob", "offsetSeconds": 600},
                {"reportId": "HELD", "reportedUser": "bob", "offsetSeconds": 1800, "legalHold": true},
                {"reportId": "NEW", "reportedUser": "bob", "offsetSeconds": 3000}
                """#)
        let out = dir.appendingPathComponent("out")
        #expect(try voxpipe(["run", spec, input.path, "-o", out.path]).status == 0)
        let items = out.appendingPathComponent("upload/channel0")
        // OLD and HELD finished long ago.
        for id in ["OLD", "HELD"] {
            let manifest = items.appendingPathComponent("\(id)/voxpipe.manifest.json")
            var object = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: manifest)) as? [String: Any])
            object["finished"] = "2020-01-01T00:00:00Z"
            try JSONSerialization.data(withJSONObject: object).write(to: manifest)
        }
        let dry = try voxpipe(["prune", out.path, "--older-than", "30d", "--dry-run"])
        #expect(
            dry.status == 0 && dry.stdout.contains("would prune upload/channel0/OLD (finished 2020-01-01T00:00:00Z, "))
        #expect(FileManager.default.fileExists(atPath: items.appendingPathComponent("OLD/evidence/bagit.txt").path))

        let prune = try voxpipe(["prune", out.path, "--older-than", "30d"])
        #expect(prune.status == 0)
        #expect(
            prune.stdout.contains("pruned upload/channel0/OLD")
                && prune.stdout.contains("held    upload/channel0/HELD (legal hold)"))
        #expect(prune.stderr.contains("in 1 item; 1 on legal hold, 1 newer than 30d"))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: items.appendingPathComponent("OLD").path) == [
                "voxpipe.manifest.json"
            ])
        #expect(
            try voxpipe(["verify", items.appendingPathComponent("HELD").path, items.appendingPathComponent("NEW").path])
                .status == 0)

        // The same inputs again: nothing is redone, the pruned item included.
        let rerun = try voxpipe(["run", spec, input.path, "-o", out.path])
        #expect(rerun.status == 0 && rerun.stderr.contains("3 items: 0 done, 3 skipped, 0 failed"), "\(rerun.stderr)")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: items.appendingPathComponent("OLD").path) == [
                "voxpipe.manifest.json"
            ])

        // Never beside a run on the same folder.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        // The holder keeps the lock until its standard input closes: as long as the test needs.
        holder.arguments = ["-x", out.appendingPathComponent(".voxpipe.lock").path, "cat"]
        let release = Pipe()
        holder.standardInput = release
        holder.standardOutput = FileHandle.nullDevice
        try holder.run()
        defer {
            try? release.fileHandleForWriting.close()
            holder.waitUntilExit()
        }
        // Wait until flock holds it (a second flock -n then fails), not for a fixed time.
        while try run("/usr/bin/flock", ["-n", out.appendingPathComponent(".voxpipe.lock").path, "true"]).status == 0 {}
        let locked = try voxpipe(["prune", out.path, "--older-than", "0s"])
        #expect(
            locked.status == 75 && locked.stderr.hasPrefix("voxpipe: error: another voxpipe run is using \(out.path)"))
    }
}
