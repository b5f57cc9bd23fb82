import Foundation
import Testing
import VoxCore
import VoxTestSupport

/// What an adversarial sweep of `run` and `validate` found (issue 27, items 4, 6 and 7), from the
/// command line.
@Suite(.startsProcess("the voxpipe binary")) struct HardeningTests {
    // That planning it takes time linear in the stages is PlannerTests' to check.
    @Test func aTwentyThousandStageSpecValidates() async throws {
        let dir = temporaryDirectory()
        var stages = [#"{"id":"decode","kind":"decode"}"#]
        stages += (1..<19_999).map {
            #"{"id":"r\#($0)","kind":"resample","rate":\#($0 % 2 == 0 ? 8000 : 16000),"channels":1}"#
        }
        stages.append(#"{"id":"audio","kind":"write-wav"}"#)
        let spec = try writeSpec(#"{"name":"long","stages":["# + stages.joined(separator: ",") + "]}", in: dir)
        let result = try voxpipe(["validate", spec.path])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.first == "plan 'long': 20000 stages")
        #expect(lines.last?.hasSuffix("from 'r19998'") == true)
    }

    let samples = packageRoot.appendingPathComponent("Samples")
    let decodeToWAV =
        #"{"stages":[{"id":"decode","kind":"decode"},{"id":"audio","kind":"write-audio","encoding":"float32"}]}"#

    /// The first half of a sample, as a file cut short in transfer.
    func half(_ name: String, in folder: URL) throws -> URL {
        let data = try Data(contentsOf: samples.appendingPathComponent(name))
        let url = folder.appendingPathComponent("half-" + name)
        try data.prefix(data.count / 2).write(to: url)
        return url
    }

    /// An 8-bit mono WAV whose header promises 2^31 frames and that holds 8,000.
    func hugeHeader(in folder: URL) throws -> URL {
        func le32(_ v: UInt32) -> Data { withUnsafeBytes(of: v.littleEndian) { Data($0) } }
        func le16(_ v: UInt16) -> Data { withUnsafeBytes(of: v.littleEndian) { Data($0) } }
        let promised: UInt32 = 0x8000_0000
        var wav = Data("RIFF".utf8)
        wav += le32(36 + promised)
        wav += Data("WAVEfmt ".utf8)
        for field in [le32(16), le16(1), le16(1), le32(8000), le32(8000), le16(1), le16(8)] { wav += field }
        wav += Data("data".utf8)
        wav += le32(promised)
        let ramp: [UInt8] = (0..<8000).map { i in UInt8(88 + (i % 20) * 4) }
        wav += Data(ramp)
        let url = folder.appendingPathComponent("huge-header.wav")
        try wav.write(to: url)
        return url
    }

    func jsonLines(_ url: URL) throws -> [[String: Any]] {
        try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
        }
    }

    @Test func aTruncatedFileIsDoneWithAWarningThatGivesTheFramesPromisedAndFound() async throws {
        let dir = temporaryDirectory()
        let input = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        let wav = try half("speech-en-22k-mono.wav", in: input)
        let flac = try half("speech-de-44k-stereo.flac", in: input)
        let mp3 = try half("speech-en.mp3", in: input)
        let huge = try hugeHeader(in: input)
        let spec = try writeSpec(decodeToWAV, in: dir)
        let out = dir.appendingPathComponent("out")
        let report = dir.appendingPathComponent("report.jsonl")
        let result = try await watched(["run", spec.path, input.path, "-o", out.path, "--report", report.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "voxpipe: warning: \(wav.path): decode (decode): truncated: the header promises 124912 frames, the "
                    + "file holds 62445 (50.0 %)\n"), "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "voxpipe: warning: \(huge.path): decode (decode): truncated: the header promises 2147483648 frames, "
                    + "the file holds 8000 (0.0 %)\n"), "\(result.stderr)")
        let promised: [String: Int] = [wav.path: 124_912, flac.path: 181_140, mp3.path: 124_912, huge.path: 1 << 31]
        let lines = try jsonLines(report)
        #expect(lines.count == 4)
        for line in lines {
            let input = line["input"] as? String ?? ""
            let warning = (line["warnings"] as? [[String: Any]])?.first
            #expect(line["status"] as? String == "done")
            #expect(warning?["stage"] as? String == "decode", "\(input)")
            #expect(warning?["framesPromised"] as? Int == promised[input], "\(input)")
            let found = warning?["framesFound"] as? Int ?? .max
            #expect(found < (promised[input] ?? 0) && found > 0, "\(input)")
            // The manifest keeps the warning: a later look at the output folder still sees it.
            let manifest = out.appendingPathComponent(line["output"] as? String ?? "").appendingPathComponent(
                "voxpipe.manifest.json")
            let recorded = try JSONSerialization.jsonObject(with: Data(contentsOf: manifest)) as? [String: Any]
            #expect((recorded?["warnings"] as? [[String: Any]])?.first?["framesFound"] as? Int == found)
        }
        // A whole file warns of nothing.
        let whole = try await watched([
            "run", spec.path, samples.appendingPathComponent("speech-en.mp3").path, "-o", out.path,
        ])
        #expect(whole.status == 0 && !whole.stderr.contains("warning"), "\(whole.stderr)")
    }

    @Test func strictFailsATruncatedItemFromTheFlagOrTheSpec() async throws {
        let dir = temporaryDirectory()
        let wav = try half("speech-en-22k-mono.wav", in: dir)
        let spec = try writeSpec(decodeToWAV, in: dir)
        let flag = try await watched([
            "run", spec.path, wav.path, "-o", dir.appendingPathComponent("a").path, "--strict",
        ])
        #expect(flag.status == 1)
        #expect(
            flag.stderr.contains(
                "voxpipe: error: \(wav.path): decode (decode): truncated: the header promises 124912 frames, the file "
                    + "holds 62445 (50.0 %) (strict)\n"), "\(flag.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("a/half-speech-en-22k-mono").path))
        let strictSpec = try writeSpec(
            #"{"strict":true,"stages":[{"id":"decode","kind":"decode"},{"id":"audio","kind":"write-wav"}]}"#, in: dir,
            name: "strict.json")
        let fromSpec = try await watched(["run", strictSpec.path, wav.path, "-o", dir.appendingPathComponent("b").path])
        #expect(fromSpec.status == 1, "\(fromSpec.stderr)")
        #expect(fromSpec.stderr.contains("(strict)"), "\(fromSpec.stderr)")
        let notStrict = try writeSpec(
            #"{"strict":"yes","stages":[{"id":"decode","kind":"decode"},{"id":"audio","kind":"write-wav"}]}"#, in: dir,
            name: "bad.json")
        let bad = try voxpipe(["validate", notStrict.path])
        #expect(bad.status == 65)
        #expect(bad.stderr == "voxpipe: error: \(notStrict.path): strict: expected a boolean, got a string\n")
    }

    @Test func linkedFilesAndFoldersAreReadAndWhatCannotBeIsListed() async throws {
        let dir = temporaryDirectory()
        let input = try tones(1, in: dir)
        let other = try tones(1, in: dir.appendingPathComponent("elsewhere"))
        let fm = FileManager.default
        try fm.createSymbolicLink(
            atPath: input.appendingPathComponent("linked.wav").path, withDestinationPath: "t1.wav")
        try fm.createSymbolicLink(at: input.appendingPathComponent("linked-folder"), withDestinationURL: other)
        try fm.createSymbolicLink(atPath: input.appendingPathComponent("up").path, withDestinationPath: ".")
        try fm.createSymbolicLink(atPath: input.appendingPathComponent("dangling.wav").path, withDestinationPath: "x")
        let locked = input.appendingPathComponent("locked")
        try fm.createDirectory(at: locked, withIntermediateDirectories: true)
        try fm.copyItem(at: input.appendingPathComponent("t1.wav"), to: locked.appendingPathComponent("t9.wav"))
        mkfifo(input.appendingPathComponent("pipe.wav").path, 0o644)
        for path in [dir.path, input.path, other.path, dir.appendingPathComponent("elsewhere").path] {
            chmod(path, 0o777)
        }
        chmod(locked.path, 0o000)
        defer { chmod(locked.path, 0o755) }
        let out = dir.appendingPathComponent("out")
        try fm.createDirectory(at: out, withIntermediateDirectories: true)
        chmod(out.path, 0o777)
        let report = dir.appendingPathComponent("report.jsonl")
        let spec = try writeSpec(decodeToWAV, in: dir)
        chmod(spec.path, 0o644)
        let result = try await watched(
            ["run", spec.path, input.path, "-o", out.path, "--report", report.path], setpriv: asNobody)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            Set(files(under: out).filter { $0.hasSuffix(".wav") }) == [
                "t1/audio.wav", "linked/audio.wav", "linked-folder/t1/audio.wav",
            ])
        for line in [
            "voxpipe: warning: not read: \(input.path)/locked: Permission denied",
            "voxpipe: warning: not read: \(input.path)/up: symbolic link loop (leads back to \(input.path))",
            "voxpipe: warning: not read: \(input.path)/dangling.wav: No such file or directory",
            "voxpipe: warning: not read: \(input.path)/pipe.wav: not a regular file (FIFO)",
        ] {
            #expect(result.stderr.contains(line + "\n"), "\(result.stderr)")
        }
        let unread = try jsonLines(report).filter { ($0["reason"] as? String)?.hasPrefix("not read: ") == true }
        #expect(
            Set(unread.compactMap { $0["input"] as? String })
                == Set(["locked", "up", "dangling.wav", "pipe.wav"].map { "\(input.path)/\($0)" }))
    }

    @Test func aFIFOAProcFileAndALinkLoopGivenAsInputAreNamedForWhatTheyAre() async throws {
        let dir = temporaryDirectory()
        let spec = try writeSpec(decodeToWAV, in: dir)
        let fifo = dir.appendingPathComponent("pipe.wav")
        mkfifo(fifo.path, 0o644)
        let out = dir.appendingPathComponent("out")
        let result = try await watched(["run", spec.path, fifo.path, "/proc/self/status", "-o", out.path])
        #expect(result.status == 1)
        #expect(
            result.stderr.contains("voxpipe: error: \(fifo.path): decode (decode): not a regular file (FIFO)\n"),
            "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "voxpipe: error: /proc/self/status: decode (decode): not an audio file: it holds text\n"),
            "\(result.stderr)")
        let loop = dir.appendingPathComponent("loop.wav")
        try FileManager.default.createSymbolicLink(atPath: loop.path, withDestinationPath: "loop.wav")
        let looped = try await watched(["run", spec.path, loop.path, "-o", out.path])
        #expect(looped.status == 66)
        #expect(looped.stderr == "voxpipe: error: \(loop.path): Too many levels of symbolic links\n")
    }

    @Test func aSpecThatWritesNothingIsRefusedUnlessNoOutputsIsGiven() async throws {
        let dir = temporaryDirectory()
        let input = try tones(1, in: dir)
        let spec = try writeSpec(
            #"{"stages":[{"id":"decode","kind":"decode"},{"id":"mono","kind":"resample","rate":16000}]}"#, in: dir)
        let message =
            "voxpipe: error: \(spec.path): stages: no stage writes outputs (none gives Artifact, as the write-* kinds "
            + "do); add a writer, or pass --no-outputs to run it for its reports only\n"
        let out = dir.appendingPathComponent("out")
        let run = try await watched(["run", spec.path, input.path, "-o", out.path])
        #expect(run.status == 65)
        #expect(run.stderr == message)
        let validate = try voxpipe(["validate", spec.path])
        #expect(validate.status == 65 && validate.stderr == message)
        #expect(try voxpipe(["validate", spec.path, "--no-outputs"]).status == 0)
        let allowed = try await watched(["run", spec.path, input.path, "-o", out.path, "--no-outputs"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
    }

    @Test func aRedoRemovesTheOldOutputsTheNewManifestDoesNotList() async throws {
        let dir = temporaryDirectory()
        let input = try tones(1, seconds: 4, in: dir)
        func spec(seconds: Int) throws -> URL {
            try writeSpec(
                #"{"stages":[{"id":"decode","kind":"decode"},{"id":"turn","kind":"chunk","seconds":\#(seconds)},"#
                    + #"{"id":"audio","kind":"write-wav"}]}"#, in: dir)
        }
        let out = dir.appendingPathComponent("out")
        #expect(try await watched(["run", try spec(seconds: 1).path, input.path, "-o", out.path]).status == 0)
        #expect(files(under: out.appendingPathComponent("t1")).filter { $0.hasSuffix(".wav") }.count == 4)
        try Data("mine".utf8).write(to: out.appendingPathComponent("t1/notes.txt"))
        let redo = try await watched(["run", try spec(seconds: 2).path, input.path, "-o", out.path])
        #expect(redo.status == 0, "\(redo.stderr)")
        #expect(
            files(under: out.appendingPathComponent("t1")) == [
                "audio-0001.wav", "audio-0002.wav", "notes.txt", "voxpipe.manifest.json",
            ])
    }
}
