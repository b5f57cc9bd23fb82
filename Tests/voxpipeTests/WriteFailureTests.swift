import Foundation
import Testing
import VoxCore
import VoxTestSupport

/// A write that fails (full disk, permissions, a file where a folder goes) fails its item at once
/// with the file, the stage and the system's reason, and the run ends: 73 when nothing more can
/// be written, 1 when only that item failed (issue 27, item 1). Each run is watched: one that
/// hangs is killed and the test fails (`watched`).
@Suite(.serialized, .startsProcess("the voxpipe binary")) struct WriteFailureTests {
    let resample = packageRoot.appendingPathComponent("Pipelines/resample-16k.json").path

    @Test(.enabled(if: Tmpfs.permitted, "mounting a tmpfs is not permitted here (needs root or CAP_SYS_ADMIN)"))
    func aFullDiskFailsTheItemExitsSeventyThreeAndARerunWithRoomMatchesAFreshRun() async throws {
        let dir = temporaryDirectory()
        let input = try tones(12, in: dir)
        let disk = try Tmpfs(at: dir.appendingPathComponent("disk"), size: "64k")
        defer { disk.unmount() }
        let out = disk.url.appendingPathComponent("out")

        let full = try await watched(["run", resample, input.path, "-o", out.path, "--jobs", "2"])
        #expect(full.status == 73, "\(full.stderr)")
        #expect(full.stderr.contains("No space left on device"), "\(full.stderr)")
        // One line per failed item, naming the input, the stage and the file it could not write.
        let failed = full.stderr.split(separator: "\n").filter { $0.hasPrefix("voxpipe: error: \(input.path)/t") }
        #expect(!failed.isEmpty)
        for line in failed { #expect(line.hasSuffix(": No space left on device"), "\(line)") }
        #expect(full.stderr.contains("nothing more can be written"), "\(full.stderr)")
        #expect(files(under: out).allSatisfy { !$0.contains(ItemOutputs.temporaryMarker) }, "\(files(under: out))")

        try disk.resize("8m")
        let rerun = try await watched(["run", resample, input.path, "-o", out.path])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        let fresh = dir.appendingPathComponent("fresh")
        #expect(try await watched(["run", resample, input.path, "-o", fresh.path]).status == 0)
        #expect(try outputHashes(out) == outputHashes(fresh))
        #expect(try outputHashes(fresh).count == 12)
    }

    @Test func anItemFolderThatCannotBeWrittenFailsThatItemWithPermissionDenied() async throws {
        let dir = temporaryDirectory()
        let input = try tones(2, in: dir)
        let out = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(
            at: out.appendingPathComponent("t1"), withIntermediateDirectories: true)
        // Root writes anywhere: voxpipe runs as nobody, for whom t1/ is read-only.
        for path in [dir.path, input.path, out.path] { chmod(path, 0o777) }
        chmod(out.appendingPathComponent("t1").path, 0o555)
        let result = try await watched(["run", resample, input.path, "-o", out.path, "--jobs", "1"], setpriv: asNobody)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "voxpipe: error: \(input.path)/t1.wav: audio (write-wav): cannot create \(out.path)/t1/audio.wav: "
                    + "Permission denied"), "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("t2/audio.wav").path))
        #expect(files(under: out).allSatisfy { !$0.contains(ItemOutputs.temporaryMarker) })
    }

    @Test func aFileWhereAnItemFolderGoesFailsThatItemAndTheRunGoesOn() async throws {
        let dir = temporaryDirectory()
        let input = try tones(2, in: dir)
        let out = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        try Data("not a folder".utf8).write(to: out.appendingPathComponent("t1"))
        let result = try await watched(["run", resample, input.path, "-o", out.path])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "voxpipe: error: \(input.path)/t1.wav: audio (write-wav): cannot create folder \(out.path)/t1: "
                    + "File exists"), "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("t2/audio.wav").path))
    }

    @Test func anInputWhoseOutputsWouldGoWhereAManifestIsFailsAloneAndTheRunEnds() async throws {
        // `a.wav` writes out/a/voxpipe.manifest.json; `a/voxpipe.manifest.json.wav` would write
        // into a folder of that name: it fails before it runs, whichever item would run first.
        let dir = temporaryDirectory()
        let input = try tones(1, in: dir)
        try FileManager.default.moveItem(
            at: input.appendingPathComponent("t1.wav"), to: input.appendingPathComponent("a.wav"))
        try FileManager.default.createDirectory(
            at: input.appendingPathComponent("a"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: input.appendingPathComponent("a.wav"),
            to: input.appendingPathComponent("a/voxpipe.manifest.json.wav"))
        let out = dir.appendingPathComponent("out")
        let result = try await watched(["run", resample, input.path, "-o", out.path, "--jobs", "1"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "voxpipe: error: \(input.path)/a/voxpipe.manifest.json.wav: output (folder): output folder "
                    + "a/voxpipe.manifest.json/ would be an output of item a.wav (voxpipe writes voxpipe.manifest.json "
                    + "in a/); rename one of the two inputs\n"), "\(result.stderr)")
    }

    /// Every writer kind, on a disk with room for nothing (or, for the writer that copies another's
    /// files, room for what it copies but not the copy): the run ends with 73 and the reason. The
    /// tone is ten seconds, more than one decoded block, so a decoder is still sending when a
    /// streaming writer dies (where the run hung).
    @Test(
        .enabled(if: Tmpfs.permitted, "mounting a tmpfs is not permitted here (needs root or CAP_SYS_ADMIN)"),
        arguments: WriterCase.all)
    func aFullDiskAtEveryWriterEndsTheRun(_ writer: WriterCase) async throws {
        let dir = temporaryDirectory()
        let input = try tones(1, seconds: 10, in: dir)
        try Data("Guten Tag.\nIch brauche einen Termin am Montag.\n".utf8)
            .write(to: input.appendingPathComponent("t1.txt"))
        let spec = try writeSpec(writer.spec, in: dir)
        let disk = try Tmpfs(at: dir.appendingPathComponent("disk"), size: "1m")
        defer { disk.unmount() }
        let out = disk.url.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        try disk.fill(leavingPages: writer.freePages)

        let result = try await watched([
            "run", spec.path, input.appendingPathComponent(writer.input).path, "-o", out.path,
        ])
        #expect(result.status == 73, "\(writer.kind): \(result.stderr)")
        #expect(result.stderr.contains("(\(writer.kind)): "), "\(result.stderr)")
        #expect(result.stderr.contains("No space left on device"), "\(result.stderr)")
    }
}

/// One writer kind and a spec whose only writer (or whose last writer) it is.
struct WriterCase: Sendable, CustomTestStringConvertible {
    var kind: String
    var spec: String
    /// The input, in the test's input folder.
    var input = "t1.wav"
    /// Pages left free on the disk.
    var freePages = 0

    var testDescription: String { kind }

    static let all: [WriterCase] = {
        let records = packageRoot.appendingPathComponent("Pipelines/field-service").path
        let rules = packageRoot.appendingPathComponent("Pipelines/tutor-rules.json").path
        let text = #"{"id":"read","kind":"read-text","language":"de"}"#
        let agent = #"{"id":"agents","kind":"agent","records":"\#(records)","provider":{"name":"rules"}}"#
        let decode = #"{"id":"decode","kind":"decode"}"#
        func stages(_ list: String...) -> String { #"{"stages":[\#(list.joined(separator: ","))]}"# }
        return [
            WriterCase(kind: "write-wav", spec: stages(decode, #"{"id":"audio","kind":"write-wav"}"#)),
            WriterCase(
                kind: "write-audio", spec: stages(decode, #"{"id":"audio","kind":"write-audio","format":"flac"}"#)),
            WriterCase(
                kind: "write-transcript", spec: stages(text, #"{"id":"subs","kind":"write-transcript"}"#),
                input: "t1.txt"),
            WriterCase(
                kind: "write-replies",
                spec: stages(
                    text, #"{"id":"tutor","kind":"reply","provider":{"name":"rules","rules":"\#(rules)"}}"#,
                    #"{"id":"replies","kind":"write-replies"}"#),
                input: "t1.txt"),
            WriterCase(
                kind: "write-agent-log", spec: stages(text, agent, #"{"id":"log","kind":"write-agent-log"}"#),
                input: "t1.txt"),
            WriterCase(
                kind: "write-records", spec: stages(text, agent, #"{"id":"records","kind":"write-records"}"#),
                input: "t1.txt"),
            WriterCase(
                kind: "write-evidence",
                spec: stages(
                    decode, #"{"id":"mono48k","kind":"resample","rate":48000,"channels":1}"#,
                    #"{"id":"tail","kind":"chunk","mode":"tail","seconds":300}"#,
                    #"{"id":"evidence","kind":"write-evidence","original":false}"#)),
            // The WAV (160,044 bytes: 40 pages) fits; its parts do not.
            WriterCase(
                kind: "write-message-chunks",
                spec: stages(
                    decode, #"{"id":"audio","kind":"write-wav"}"#,
                    #"{"id":"messages","kind":"write-message-chunks","bytes":4096}"#),
                freePages: 41),
        ]
    }()
}

/// A tmpfs mounted for a test (root only); `permitted` says whether this machine allows it.
struct Tmpfs {
    let url: URL

    init(at url: URL, size: String) throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let result = try run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", url.path])
        guard result.status == 0 else { throw TmpfsError(description: "mount: \(result.stderr)") }
        self.url = url
    }

    func resize(_ size: String) throws {
        let result = try run("/bin/mount", ["-o", "remount,size=\(size)", url.path])
        guard result.status == 0 else { throw TmpfsError(description: "remount: \(result.stderr)") }
    }

    /// Fills the disk with one file until `pages` pages (4 KiB) are free.
    func fill(leavingPages pages: Int) throws {
        var info = statvfs()
        guard statvfs(url.path, &info) == 0 else { throw TmpfsError(description: "statvfs failed") }
        let bytes = (Int(info.f_bavail) - pages) * Int(info.f_frsize)
        try Data(count: max(0, bytes)).write(to: url.appendingPathComponent("fill"))
    }

    func unmount() { _ = try? run("/bin/umount", [url.path]) }

    /// Whether a tmpfs can be mounted here (root, or CAP_SYS_ADMIN): tried once.
    static let permitted: Bool = {
        let probe = temporaryDirectory()
        guard let disk = try? Tmpfs(at: probe, size: "64k") else { return false }
        disk.unmount()
        return true
    }()
}

struct TmpfsError: Error, CustomStringConvertible {
    var description: String
}
