import Foundation
import Testing
import VoxTestSupport

/// Evidence anchored at the reported moment: windows, shortfall, folded taps, seeking.
@Suite(.serialized) struct ReportWindowTests {
    let spec = packageRoot.appendingPathComponent("Pipelines/moderation-evidence.json").path

    /// A 60-minute 8 kHz mono upload whose minute m is a (200 + 20·m) Hz tone, and its sidecar.
    func upload(in dir: URL, reports: String) throws -> URL {
        let input = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        let minutes = (0..<60).flatMap { m in (m == 0 ? [] : [":"]) + ["synth", "60", "sine", "\(200 + 20 * m)"] }
        try runTool("sox", ["-n", "-r", "8000", "-c", "1", "-b", "16", input.appendingPathComponent("upload.wav").path] + minutes)
        try Data(#"{"room": "lobby", "recordingStartedAt": "2026-11-20T10:00:00Z", "reports": [\#(reports)]}"#.utf8).write(to: input.appendingPathComponent("upload.json"))
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
        try JSONSerialization.jsonObject(with: Data(contentsOf: bag.appendingPathComponent("data/report.json"))) as? [String: Any] ?? [:]
    }

    @Test func reportsAtFiveTwentyAndFiftyNineMinutesGetTheFiveMinutesBeforeEach() async throws {
        let dir = temporaryDirectory()
        let input = try upload(in: dir, reports: #"""
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
            // Each of the five minutes, sampled in its middle 50 s, is the minute it should be.
            let got = (0..<5).map { k in minute(samples[(k * 60 + 5) * 48000..<(k * 60 + 55) * 48000], rate: 48000) }
            #expect(got == Array(endMinute - 5..<endMinute), "\(id): minutes \(got)")
            let window = try #require(try report(bag)["window"] as? [String: Any])
            #expect(window["end"] as? Double == Double(endMinute * 60) && window["reportIds"] as? [String] == [id] && window["shortfallSeconds"] as? Double == 0)
            let info = try String(contentsOf: bag.appendingPathComponent("bag-info.txt"), encoding: .utf8)
            #expect(info.contains("External-Identifier: \(id)\n"))
        }
        // A report 2 minutes in has only 120 s before it: the bag says so.
        let early = out.appendingPathComponent("upload/channel0/R-2/evidence")
        let (_, samples) = try await readAll(early.appendingPathComponent("data/evidence.wav"))
        #expect(samples.count == 120 * 48000)
        let window = try #require(try report(early)["window"] as? [String: Any])
        #expect(window["seconds"] as? Double == 120 && window["requestedSeconds"] as? Double == 300 && window["shortfallSeconds"] as? Double == 180)

        let verify = try voxpipe(["verify", "--rebuild", spec, out.path])
        #expect(verify.status == 0 && verify.stdout.split(separator: "\n").count == 4, "\(verify.stdout)")
        #expect(try python(["-c", "import bagit,sys\nfor p in sys.argv[1:]: bagit.Bag(p).validate()", early.path]) == 0)
    }

    @Test func twoTapsThreeSecondsApartFoldIntoOneBagWithBothIds() async throws {
        let dir = temporaryDirectory()
        let input = try upload(in: dir, reports: #"""
            {"reportId": "T-1", "reportedUser": "bob", "offsetSeconds": 1800},
            {"reportId": "T-2", "reportedUser": "bob", "offsetSeconds": 1803},
            {"reportId": "T-3", "reportedUser": "bob", "offsetSeconds": 1830}
            """#)
        let out = dir.appendingPathComponent("out")
        #expect(try voxpipe(["run", spec, input.path, "-o", out.path]).status == 0)
        let folders = try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("upload/channel0").path).sorted()
        #expect(folders == ["T-1", "T-3"])
        let folded = out.appendingPathComponent("upload/channel0/T-1/evidence")
        let window = try #require(try report(folded)["window"] as? [String: Any])
        #expect(window["reportIds"] as? [String] == ["T-1", "T-2"] && window["end"] as? Double == 1803 && window["start"] as? Double == 1503)
        #expect(try String(contentsOf: folded.appendingPathComponent("bag-info.txt"), encoding: .utf8).contains("External-Identifier: T-1, T-2\n"))
    }
}
