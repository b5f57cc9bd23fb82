import Foundation
import Testing
import VoxCore
import VoxFormats
import VoxTestSupport

/// Names and paths that come from outside (message-chunk indexes, bags, upload names) never
/// reach a file outside their folder and never forge a line of output (issue 27, findings 2, 5, 7).
@Suite(.startsProcess("the voxpipe binary")) struct OutsideNamesTests {
    /// A message-chunk index in `folder` for one part `x.0001` holding `content`, with `name`.
    func chunkIndex(in folder: URL, name: String, content: Data, part: String = "x.0001") throws -> URL {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let index: [String: Any] = [
            "name": name, "bytes": content.count, "sha256": Digest.hex(content), "partBytes": 30720, "count": 1,
            "parts": [["file": part, "bytes": content.count, "sha256": Digest.hex(content)]],
        ]
        let url = folder.appendingPathComponent("x.index.json")
        try JSONSerialization.data(withJSONObject: index).write(to: url)
        return url
    }

    /// stderr without its last line break, split into lines.
    func lines(_ text: String) -> [Substring] {
        text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
    }

    @Test func joinRefusesAnIndexWhoseNameLeavesItsFolderAndWritesNothing() throws {
        let dir = temporaryDirectory()
        let folder = dir.appendingPathComponent("a/b/c")
        let content = Data("RIFF escaped".utf8)
        let index = try chunkIndex(in: folder, name: "../../../ESCAPED-by-name.wav", content: content)
        try content.write(to: folder.appendingPathComponent("x.0001"))

        let result = try voxpipe(["join", index.path])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr
                == "voxpipe: error: \(index.path): name \"../../../ESCAPED-by-name.wav\": not a file name beside the "
                + "index; nothing written\n")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("ESCAPED-by-name.wav").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["a"])
    }

    @Test func joinRefusesAPartThatIsASymlinkOutOfItsFolder() throws {
        let dir = temporaryDirectory()
        let folder = dir.appendingPathComponent("messages")
        let secret = Data("outside the folder".utf8)
        try secret.write(to: dir.appendingPathComponent("secret.txt"))
        let index = try chunkIndex(in: folder, name: "joined.bin", content: secret)
        try FileManager.default.createSymbolicLink(
            atPath: folder.appendingPathComponent("x.0001").path, withDestinationPath: "../secret.txt")

        let result = try voxpipe(["join", index.path])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr == "voxpipe: error: \(index.path): x.0001: a symbolic link; not followed; nothing written\n")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("joined.bin").path))
    }

    @Test func joinOfAMissingIndexExits66() throws {
        let missing = temporaryDirectory().appendingPathComponent("none.index.json")
        let result = try voxpipe(["join", missing.path])
        #expect(result.status == 66, "\(result.stderr)")
        #expect(result.stderr == "voxpipe: error: \(missing.path): no such index file\n")
    }

    @Test func joinPrintsANameWithALineBreakOnOneLine() throws {
        let dir = temporaryDirectory()
        let content = Data("fine".utf8)
        let index = try chunkIndex(in: dir, name: "two\nlines.bin", content: content)
        try content.write(to: dir.appendingPathComponent("x.0001"))
        let result = try voxpipe(["join", index.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(lines(result.stdout).count == 1, "\(result.stdout)")
        #expect(result.stdout.contains("two\\nlines.bin"))
        #expect(try Data(contentsOf: dir.appendingPathComponent("two\nlines.bin")) == content)
    }

    /// A bag (BagIt 1.0, complete and valid) with `files` under data/, made by hand.
    func makeBag(at bag: URL, files: [String: String]) throws {
        try FileManager.default.createDirectory(
            at: bag.appendingPathComponent("data"), withIntermediateDirectories: true)
        var sha256: [String] = []
        var sha512: [String] = []
        var bytes = 0
        for (name, text) in files.sorted(by: { $0.key < $1.key }) {
            try Data(text.utf8).write(to: bag.appendingPathComponent("data/\(name)"))
            sha256.append("\(Digest.hex(Data(text.utf8)))  data/\(name)\n")
            sha512.append("\(Digest.hex(Data(text.utf8), .sha512))  data/\(name)\n")
            bytes += text.utf8.count
        }
        let tags: [(String, String)] = [
            ("bagit.txt", "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n"),
            ("bag-info.txt", "Payload-Oxum: \(bytes).\(files.count)\n"),
            ("manifest-sha256.txt", sha256.joined()), ("manifest-sha512.txt", sha512.joined()),
        ]
        var tagManifest = ""
        for (name, text) in tags {
            try Data(text.utf8).write(to: bag.appendingPathComponent(name))
            tagManifest += "\(Digest.hex(Data(text.utf8)))  \(name)\n"
        }
        try Data(tagManifest.utf8).write(to: bag.appendingPathComponent("tagmanifest-sha256.txt"))
    }

    @Test func verifyPrintsABagWhoseNameHoldsALineBreakOnOneLine() throws {
        let dir = temporaryDirectory()
        let forged = dir.appendingPathComponent("up\nOK    /forged/evidence")
        try makeBag(at: forged, files: ["a.txt": "evidence"])
        let result = try voxpipe(["verify", dir.path])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(lines(result.stdout) == ["OK    \(dir.path)/up\\nOK    /forged/evidence"[...]])
    }

    @Test func verifyFailsABagWithAnExtraSymlinkInData() throws {
        let bag = temporaryDirectory().appendingPathComponent("evidence")
        try makeBag(at: bag, files: ["a.txt": "evidence"])
        #expect(try voxpipe(["verify", bag.path]).status == 0)
        try FileManager.default.createSymbolicLink(
            atPath: bag.appendingPathComponent("data/extra.txt").path, withDestinationPath: "/etc/hostname")
        let result = try voxpipe(["verify", bag.path])
        #expect(result.status == 1)
        #expect(result.stdout == "FAIL  \(bag.path): data/extra.txt: a symbolic link, not a regular file\n")
    }

    @Test func verifyFailsABagWithAFIFOInData() throws {
        let bag = temporaryDirectory().appendingPathComponent("evidence")
        try makeBag(at: bag, files: ["a.txt": "evidence"])
        #expect(mkfifo(bag.appendingPathComponent("data/pipe").path, 0o600) == 0)
        let result = try voxpipe(["verify", bag.path])
        #expect(result.status == 1)
        #expect(result.stdout == "FAIL  \(bag.path): data/pipe: a FIFO, not a regular file\n")
    }

    @Test func runPrintsTheErrorOfAnInputWhoseNameHoldsALineBreakOnOneLine() throws {
        let dir = temporaryDirectory()
        let input = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        let name = "bad\nvoxpipe: error: forged.wav: stage 'x' failed.wav"
        try Data("not audio at all".utf8).write(to: input.appendingPathComponent(name))
        let result = try voxpipe([
            "run", packageRoot.appendingPathComponent("Pipelines/resample-16k.json").path, input.path, "-o",
            dir.appendingPathComponent("out").path,
        ])
        #expect(result.status == 1, "\(result.stderr)")
        let stderr = lines(result.stderr)
        #expect(!stderr.contains { $0.hasPrefix("voxpipe: error: forged.wav") }, "\(result.stderr)")
        #expect(
            stderr.contains {
                $0.hasPrefix("voxpipe: error: \(input.path)/bad\\nvoxpipe: error: forged.wav: stage 'x' failed.wav: ")
            }, "\(result.stderr)")
    }

    @Test func aReportSidecarThatIsASymlinkOutOfItsFolderIsRefusedNotRead() throws {
        let dir = temporaryDirectory()
        let input = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        let samples = [Float](repeating: 0.25, count: 800)
        try WAVData.pcm16(samples, format: AudioFormat(sampleRate: 8000, channels: 1))
            .write(to: input.appendingPathComponent("upload.wav"))
        try Data(#"{"reportId": "R-1", "reportedUser": "bob"}"#.utf8).write(
            to: dir.appendingPathComponent("other.json"))
        try FileManager.default.createSymbolicLink(
            atPath: input.appendingPathComponent("upload.json").path, withDestinationPath: "../other.json")
        let spec = try writeSpec(
            #"""
            {"stages": [
              {"id": "decode", "kind": "decode", "sidecar": "required"},
              {"id": "wav", "kind": "write-wav"}
            ]}
            """#, in: dir)
        let result = try voxpipe(["run", spec.path, input.path, "-o", dir.appendingPathComponent("out").path])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "voxpipe: error: \(input.path)/upload.wav: decode (decode): report sidecar upload.json: "
                    + "a symbolic link; not followed\n"), "\(result.stderr)")
    }

    @Test func verifyFailsABagWithAnUnlistedNFDTwinOfAListedName() throws {
        let bag = temporaryDirectory().appendingPathComponent("evidence")
        try makeBag(at: bag, files: ["caf\u{E9}.txt": "evidence"])
        #expect(try voxpipe(["verify", bag.path]).status == 0)
        try Data("planted".utf8).write(to: bag.appendingPathComponent("data/cafe\u{301}.txt"))
        let result = try voxpipe(["verify", bag.path])
        #expect(result.status == 1, "\(result.stdout)")
        #expect(
            result.stdout.hasPrefix("FAIL  \(bag.path): data/")
                && result.stdout.contains("not listed in manifest-sha256.txt (an unlisted twin of data/"),
            "\(result.stdout)")
    }
}
