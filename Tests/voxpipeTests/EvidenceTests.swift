import Foundation
import Testing
import VoxTestSupport

/// Moderation evidence: bags, verification, windows, seats, message chunks.
@Suite(.serialized, .startsProcess("the voxpipe binary")) struct EvidenceTests {
    let spec = packageRoot.appendingPathComponent("Pipelines/moderation-evidence.json").path

    /// An 8-channel room: channel c carries a (200 + 100·c) Hz tone; seats 0, 3 and 5 are named.
    func room(in dir: URL, seconds: Int = 20) throws -> URL {
        let input = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        let tones = (0..<8).flatMap { ["sine", "\(200 + 100 * $0)"] }
        try runTool(
            "sox",
            [
                "-n", "-r", "44100", "-c", "8", "-b", "16", input.appendingPathComponent("room.wav").path, "synth",
                "\(seconds)",
            ] + tones + ["gain", "-6"])
        let sidecar =
            #"{"reportId": "R-42", "reportedUser": "bob", "reporter": "alice", "room": "lobby", "reportedAt": "#
            + #""2026-11-20T18:04:05Z", "seats": {"0": "alice", "3": "bob", "5": "carol"}}"#
        try Data(sidecar.utf8).write(to: input.appendingPathComponent("room.json"))
        return input
    }

    /// The dominant frequency of mono samples, from zero crossings.
    func frequency(_ samples: ArraySlice<Float>, rate: Double) -> Double {
        var crossings = 0
        for (a, b) in zip(samples, samples.dropFirst()) where (a < 0) != (b < 0) { crossings += 1 }
        return Double(crossings) / 2 / (Double(samples.count) / rate)
    }

    func json(_ url: URL) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] ?? [:]
    }

    @Test func eachSeatGetsABagThatVoxpipeAndBagItPyAcceptWithTheRightSeatsAudio() async throws {
        let dir = temporaryDirectory()
        let input = try room(in: dir)
        let out = dir.appendingPathComponent("out")
        let result = try voxpipe(["run", spec, input.path, "-o", out.path])
        #expect(result.status == 0, "\(result.stderr)")
        let seats = try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("room").path)
            .sorted()
        #expect(
            seats == [
                "channel1", "channel2", "channel4", "channel6", "channel7", "seat0-alice", "seat3-bob", "seat5-carol",
            ])
        let bag = out.appendingPathComponent("room/seat3-bob/evidence")
        #expect(
            files(under: bag) == [
                "bag-info.txt", "bagit.txt", "data/evidence.wav", "data/original.wav", "data/report.json",
                "manifest-sha256.txt", "manifest-sha512.txt", "tagmanifest-sha256.txt",
            ])
        let (format, samples) = try await readAll(bag.appendingPathComponent("data/evidence.wav"))
        #expect(format.sampleRate == 48000 && format.channels == 1)
        #expect(abs(frequency(samples[48000..<96000], rate: 48000) - 500) < 5, "seat 3 is channel 3: 500 Hz")
        let report = try json(bag.appendingPathComponent("data/report.json"))
        #expect((report["report"] as? [String: Any])?["reportId"] as? String == "R-42")
        #expect((report["track"] as? [String: Any])?["user"] as? String == "bob")
        // Provenance comes from what the resample stage declares, defaults filled in.
        let resampler = try #require((report["resampler"] as? [[String: Any]])?.first)
        #expect(
            resampler["id"] as? String == "mono48k" && resampler["engine"] as? String == "soxr"
                && resampler["quality"] as? String == "high")
        #expect(
            resampler["rate"] as? Double == 48000 && resampler["channels"] as? Double == 1
                && (resampler["library"] as? String)?.hasPrefix("libsoxr-") == true)
        #expect((report["provenance"] as? [[String: Any]])?.map { $0["id"] as? String } == ["mono48k"])
        let info = try String(contentsOf: bag.appendingPathComponent("bag-info.txt"), encoding: .utf8)
        #expect(
            info.contains("External-Identifier: R-42\n") && info.contains("Bagging-Date: 2026-11-20\n")
                && info.contains("Source-Organization: Trust & Safety\n"))

        let verify = try voxpipe(["verify", out.path])
        #expect(verify.status == 0)
        #expect(verify.stdout.split(separator: "\n").count == 8)
        #expect(
            try python([
                "-c", "import bagit,sys\nfor p in sys.argv[1:]: bagit.Bag(p).validate()", bag.path,
                out.appendingPathComponent("room/channel7/evidence").path,
            ]) == 0)
        let rebuild = try voxpipe(["verify", "--rebuild", spec, bag.path])
        #expect(rebuild.status == 0, "\(rebuild.stdout)")
        #expect(rebuild.stdout.contains("(rebuilt: evidence.wav identical)"))
    }

    @Test func flippingAnyByteOfAnyPayloadOrTagFileFailsVerifyNamingTheFile() throws {
        let dir = temporaryDirectory()
        let input = try room(in: dir, seconds: 3)
        let out = dir.appendingPathComponent("out")
        #expect(try voxpipe(["run", spec, input.path, "-o", out.path]).status == 0)
        let bag = out.appendingPathComponent("room/seat0-alice/evidence")
        // The first, middle and last byte of every file (the same bytes every run): the last is a
        // line end in the text files, and LF flipped is VT, which a reader that takes any Unicode
        // line break as a line end does not see.
        for file in files(under: bag) {
            let count = try Data(contentsOf: bag.appendingPathComponent(file)).count
            for i in Set([0, count / 2, count - 1]).sorted() {
                let copy = dir.appendingPathComponent("copy-\(UUID().uuidString)")
                try FileManager.default.copyItem(at: bag, to: copy)
                let url = copy.appendingPathComponent(file)
                var bytes = try Data(contentsOf: url)
                bytes[i] ^= 0x01
                try bytes.write(to: url)
                let result = try voxpipe(["verify", copy.path])
                #expect(result.status == 1, "\(file) byte \(i)")
                #expect(result.stdout.hasPrefix("FAIL  \(copy.path): "), "\(file)")
                #expect(result.stdout.contains(file), "flipping \(file) byte \(i): \(result.stdout)")
            }
        }
        // Something extra, and something missing.
        let extra = dir.appendingPathComponent("extra")
        try FileManager.default.copyItem(at: bag, to: extra)
        try Data("x".utf8).write(to: extra.appendingPathComponent("data/smuggled.txt"))
        #expect(
            try voxpipe(["verify", extra.path]).stdout.contains("data/smuggled.txt: not listed in manifest-sha256.txt"))
        try FileManager.default.removeItem(at: extra.appendingPathComponent("data/smuggled.txt"))
        try FileManager.default.removeItem(at: extra.appendingPathComponent("data/report.json"))
        #expect(
            try voxpipe(["verify", extra.path]).stdout.contains(
                "data/report.json: listed in manifest-sha256.txt but missing"))
    }

    @Test func theSameUploadAndSpecGiveByteIdenticalBags() throws {
        let dir = temporaryDirectory()
        let input = try room(in: dir, seconds: 4)
        for name in ["a", "b"] {
            #expect(try voxpipe(["run", spec, input.path, "-o", dir.appendingPathComponent(name).path]).status == 0)
        }
        let bagFiles = files(under: dir.appendingPathComponent("a")).filter { $0.contains("/evidence/") }
        #expect(bagFiles.count == 8 * 8)
        for file in bagFiles {
            #expect(
                try Data(contentsOf: dir.appendingPathComponent("a/\(file)"))
                    == Data(contentsOf: dir.appendingPathComponent("b/\(file)")), "\(file)")
        }
    }

    @Test func aTwentyMinuteUploadYieldsExactlyItsLast300Seconds() async throws {
        let dir = temporaryDirectory()
        let input = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        // A linear sweep from 50 Hz to 6050 Hz over 20 minutes: the frequency tells the time.
        try runTool(
            "sox",
            [
                "-n", "-r", "16000", "-c", "1", "-b", "16", input.appendingPathComponent("long.wav").path, "synth",
                "1200", "sine", "50:6050", "gain", "-3",
            ])
        let out = dir.appendingPathComponent("out")
        let result = try voxpipe(["run", spec, input.path, "-o", out.path])
        #expect(result.status == 0, "\(result.stderr)")
        let bag = out.appendingPathComponent("long/channel0/evidence")
        let (_, samples) = try await readAll(bag.appendingPathComponent("data/evidence.wav"))
        #expect(samples.count == 300 * 48000)
        let window = try json(bag.appendingPathComponent("data/report.json"))["window"] as? [String: Double]
        #expect(window?["start"] == 900 && window?["end"] == 1200)
        // At 900 s the sweep is at 50 + 6000·0.75 = 4550 Hz; at the end, 6050 Hz.
        #expect(abs(frequency(samples[0..<4800], rate: 48000) - 4550) < 30)
        #expect(abs(frequency(samples[(samples.count - 4800)...], rate: 48000) - 6045) < 30)
    }

    @Test func aFortySecondUploadYieldsAllOfIt() async throws {
        let dir = temporaryDirectory()
        let input = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        try runTool(
            "sox",
            [
                "-n", "-r", "22050", "-c", "2", input.appendingPathComponent("short.flac").path, "synth", "40", "sine",
                "440",
            ])
        let out = dir.appendingPathComponent("out")
        #expect(try voxpipe(["run", spec, input.path, "-o", out.path]).status == 0)
        for channel in ["channel0", "channel1"] {
            let (_, samples) = try await readAll(
                out.appendingPathComponent("short/\(channel)/evidence/data/evidence.wav"))
            #expect(samples.count == 40 * 48000)
        }
        #expect(
            FileManager.default.fileExists(
                atPath: out.appendingPathComponent("short/channel0/evidence/data/original.flac").path))
    }

    @Test func onlyTheReportedSeatAndARequiredSidecarFailsTheItemWhenMissing() throws {
        let dir = temporaryDirectory()
        let input = try room(in: dir, seconds: 2)
        try FileManager.default.copyItem(
            at: input.appendingPathComponent("room.wav"), to: input.appendingPathComponent("nosidecar.wav"))
        let reported = try writeSpec(
            try String(contentsOfFile: spec, encoding: .utf8)
                .replacingOccurrences(
                    of: #""channels": "split" }"#,
                    with: #""channels": "split", "seats": "reported", "sidecar": "required" }"#), in: dir)
        let out = dir.appendingPathComponent("out")
        let result = try voxpipe(["run", reported.path, input.path, "-o", out.path])
        #expect(result.status == 1)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("room").path) == [
                "seat3-bob"
            ])
        #expect(
            result.stderr.contains(
                "voxpipe: error: \(input.path)/nosidecar.wav: decode (decode): report sidecar nosidecar.json is missing"
            ))
    }

    @Test func messageChunksFitTheLimitAndJoinBackOrNameTheBadPart() throws {
        let dir = temporaryDirectory()
        let input = try room(in: dir, seconds: 2)
        let chunked = try writeSpec(
            #"""
            {"stages": [
              {"id": "decode", "kind": "decode", "channels": "split", "seats": "reported"},
              {"id": "mono48k", "kind": "resample", "rate": 48000, "channels": 1},
              {"id": "tail", "kind": "chunk", "mode": "tail", "seconds": 300},
              {"id": "evidence", "kind": "write-evidence", "original": false},
              {"id": "messages", "kind": "write-message-chunks", "include": "evidence.wav", "bytes": 30720}
            ]}
            """#, in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try voxpipe(["run", chunked.path, input.path, "-o", out.path])
        #expect(run.status == 0, "\(run.stderr)")
        let folder = out.appendingPathComponent("room/seat3-bob/messages")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        let parts = names.filter { !$0.hasSuffix(".json") }
        #expect(names.contains("evidence_data_evidence.wav.index.json"))
        #expect(parts.count == Int((Double(2 * 48000 * 2 + 44) / 30720).rounded(.up)))
        for part in parts { #expect(try Data(contentsOf: folder.appendingPathComponent(part)).count <= 30720) }
        let index = folder.appendingPathComponent("evidence_data_evidence.wav.index.json")
        let joined = dir.appendingPathComponent("joined.wav")
        #expect(try voxpipe(["join", index.path, "-o", joined.path]).status == 0)
        #expect(try sha256(joined) == sha256(out.appendingPathComponent("room/seat3-bob/evidence/data/evidence.wav")))

        var altered = try Data(contentsOf: folder.appendingPathComponent(parts[2]))
        altered[5] ^= 0xFF
        try altered.write(to: folder.appendingPathComponent(parts[2]))
        try FileManager.default.removeItem(at: folder.appendingPathComponent(parts[4]))
        let bad = try voxpipe(["join", index.path, "-o", dir.appendingPathComponent("bad.wav").path])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("\(parts[2]): altered"))
        #expect(bad.stderr.contains("\(parts[4]): missing"))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("bad.wav").path))
    }

    @Test(
        .needs(.alsaFrontRight),
        .needs(.whisperModels))
    func theTranscribedVariantPutsATranscriptOfTheSameWindowInTheBag() throws {
        let dir = temporaryDirectory()
        let input = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: InstalledFixture.alsaFrontRight.url, to: input.appendingPathComponent("voice.wav"))
        let out = dir.appendingPathComponent("out")
        let result = try voxpipe([
            "run", packageRoot.appendingPathComponent("Pipelines/moderation-evidence-transcribed.json").path,
            input.path, "-o", out.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let bag = out.appendingPathComponent("voice/channel0/evidence")
        let transcript = try json(bag.appendingPathComponent("data/transcript.json"))
        #expect((transcript["text"] as? String)?.contains("right") == true)
        #expect(try voxpipe(["verify", bag.path]).status == 0)
    }

    /// Sidecars from Tests/Fixtures/fuzz-regressions/sidecar/ (`make fuzz`): a reportId beyond
    /// 64 bits (the fuzzer's, with a key `s,eats`) trapped when written to bag-info.txt; one
    /// with a line break wrote a line of its own there (a second Payload-Oxum). Each gives a
    /// bag that verifies, its id on one line.
    @Test(arguments: [
        ("report-id-beyond-64-bits.json", "4.2e+71", "channel0"),
        ("report-id-line-break.json", "r-7; Payload-Oxum: 0.0", "seat0-alice"),
    ])
    func aFuzzedReportIDGivesABagThatVerifies(_ fixture: String, _ identifier: String, _ seat: String) throws {
        let dir = temporaryDirectory()
        let input = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        try runTool(
            "sox",
            [
                "-n", "-r", "8000", "-c", "1", "-b", "16", input.appendingPathComponent("upload.wav").path, "synth",
                "1", "sine", "440",
            ])
        try FileManager.default.copyItem(
            at: fuzzRegression("sidecar", fixture), to: input.appendingPathComponent("upload.json"))
        let out = dir.appendingPathComponent("out")
        let result = try voxpipe(["run", spec, input.path, "-o", out.path])
        #expect(result.status == 0, "\(result.stderr)")
        let bag = out.appendingPathComponent("upload/\(seat)/evidence")
        let info = try String(contentsOf: bag.appendingPathComponent("bag-info.txt"), encoding: .utf8)
        #expect(info.contains("External-Identifier: \(identifier)\n"), "\(info)")
        #expect(try voxpipe(["verify", bag.path]).status == 0)
    }
}

/// Runs python3 with arguments; returns its exit status.
func python(_ arguments: [String]) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3"] + arguments
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
}
