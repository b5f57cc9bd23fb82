import Foundation
import Testing
import VoxTestSupport

/// A suite's goldens and references stay in the suite's folder unless `--allow-outside` says
/// otherwise, and are never a device, a FIFO or a file under /proc, /sys or /dev (issue 36, items 1-2).
@Suite(.startsProcess("the voxpipe binary")) struct CheckOutsideTests {
    /// The text tutor's suite in `dir/a/b` (two folders down) with one expectation.
    func suite(in dir: URL, expectation: String) throws -> URL {
        try textTutorSuite(in: dir.appendingPathComponent("a/b"), expectations: expectation)
    }

    @Test func updateRefusesAGoldenOutsideTheSuitesFolderUntilAllowOutsideAllowsIt() throws {
        let dir = temporaryDirectory()
        let suite = try suite(
            in: dir, expectation: #"{"item": "anna", "output": "replies.json", "golden": "../../escaped-{item}.json"}"#)
        let escaped = dir.appendingPathComponent("escaped-anna.json")

        let refused = try voxpipe(["check", suite.path, "--update"])
        #expect(refused.status == 65, "\(refused.stdout)\(refused.stderr)")
        #expect(
            refused.stderr
                == "voxpipe: error: \(suite.path): expect[0] (item \"anna\"): golden \(escaped.path) is outside the "
                + "suite's folder \(suite.deletingLastPathComponent().path); pass --allow-outside to allow it\n")
        #expect(!FileManager.default.fileExists(atPath: escaped.path))

        let allowed = try voxpipe(["check", suite.path, "--update", "--allow-outside"])
        #expect(allowed.status == 0, "\(allowed.stdout)\(allowed.stderr)")
        #expect(allowed.stderr.contains("golden \(escaped.path): new"))
        #expect(FileManager.default.fileExists(atPath: escaped.path))
    }

    @Test func aReferenceInsideTheFolderThroughALinkThatLeadsOutIsOutside() throws {
        let dir = temporaryDirectory()
        try "hallo\n".write(to: dir.appendingPathComponent("ref.txt"), atomically: true, encoding: .utf8)
        let suite = try suite(
            in: dir, expectation: #"{"item": "anna", "output": "replies.json", "reference": "refs/ref.txt", "wer": 1}"#)
        try FileManager.default.createSymbolicLink(
            atPath: suite.deletingLastPathComponent().appendingPathComponent("refs").path,
            withDestinationPath: "../..")
        let refused = try voxpipe(["check", suite.path])
        #expect(refused.status == 65, "\(refused.stdout)\(refused.stderr)")
        #expect(
            refused.stderr.hasPrefix(
                "voxpipe: error: \(suite.path): expect[0] (item \"anna\"): reference "
                    + "\(suite.deletingLastPathComponent().path)/refs/ref.txt is outside the suite's folder"),
            "\(refused.stderr)")
        #expect(try voxpipe(["check", suite.path, "--allow-outside"]).status != 65)
    }

    @Test(arguments: [[], ["--allow-outside"]])
    func aReferenceInProcIsRefusedEvenWithAllowOutsideAndTheEnvironmentIsNeverShown(_ flags: [String]) throws {
        let dir = temporaryDirectory()
        let suite = try suite(
            in: dir,
            expectation: #"{"item": "anna", "output": "replies.json", "reference": "/proc/self/environ", "wer": 0}"#)
        let canary = "sk-canary-\(UUID().uuidString)"
        var environment = ProcessInfo.processInfo.environment
        environment["OPENAI_API_KEY"] = canary
        let junit = dir.appendingPathComponent("check.xml")
        let result = try voxpipe(["check", suite.path, "--junit", junit.path] + flags, environment: environment)
        #expect(result.status == 65, "\(result.stdout)\(result.stderr)")
        #expect(
            result.stderr
                == "voxpipe: error: \(suite.path): expect[0] (item \"anna\"): reference /proc/self/environ is under "
                + "/proc; goldens and references are regular files, never devices, FIFOs or files under /proc, /sys "
                + "or /dev\n")
        let junitText = (try? String(contentsOf: junit, encoding: .utf8)) ?? ""
        for text in [result.stdout, result.stderr, junitText] {
            #expect(!text.lowercased().contains("canary"))
        }
    }

    @Test func aGoldenThatIsAFIFOIsRefusedAndNotWaitedOn() async throws {
        let dir = temporaryDirectory()
        let suite = try suite(in: dir, expectation: #"{"item": "anna", "output": "replies.json", "golden": true}"#)
        let goldens = suite.deletingLastPathComponent().appendingPathComponent("goldens/anna")
        try FileManager.default.createDirectory(at: goldens, withIntermediateDirectories: true)
        let fifo = goldens.appendingPathComponent("replies.json")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let result = try await watched(["check", suite.path, "--update"])
        #expect(result.status == 65, "\(result.stdout)\(result.stderr)")
        #expect(
            result.stderr
                == "voxpipe: error: \(suite.path): expect[0] (item \"anna\"): golden \(fifo.path) is a FIFO; goldens "
                + "and references are regular files, never devices, FIFOs or files under /proc, /sys or /dev\n")
    }
}
