import Foundation
import Testing
import VoxTestSupport

@testable import VoxCore

/// Ledger (per-item manifests that decide what a rerun skips) and AtomicFile (whole files or nothing).
@Suite struct LedgerTests {
    static let audioSHA256 = "6ed8919ce20490a5e3ad8630a4fab69475297abd07db73918dd5f36fcfaeb11b"  // "audio"
    static let wavSHA256 = "75f56ac1ef945e2a21f45f004d29a52e618474d44dd8d36e318b3dba7c3b6de6"  // "wav!"
    static let inputTime = Date(timeIntervalSince1970: 1_700_000_000)

    /// An input `a.wav` ("audio"), its output folder with one artifact `a/audio.wav` ("wav!"),
    /// and a ledger over the output folder.
    struct Fixture {
        let out: URL
        let item: InputFile
        let artifact: Artifact
        var artifactURL: URL { out.appendingPathComponent(artifact.path) }

        init() throws {
            let dir = temporaryDirectory()
            out = dir.appendingPathComponent("out")
            let input = dir.appendingPathComponent("a.wav")
            try Data("audio".utf8).write(to: input)
            try FileManager.default.setAttributes([.modificationDate: LedgerTests.inputTime], ofItemAtPath: input.path)
            item = InputFile(url: input, relativePath: "a.wav", outputName: "a")
            artifact = Artifact(path: "a/audio.wav", bytes: 4, sha256: LedgerTests.wavSHA256)
            try FileManager.default.createDirectory(
                at: out.appendingPathComponent("a"), withIntermediateDirectories: true)
            try Data("wav!".utf8).write(to: artifactURL)
        }

        func ledger(fingerprint: String = "fp1") -> Ledger {
            Ledger(outputDirectory: out, fingerprint: fingerprint, version: "9.9.9")
        }

        /// Records the item as done with a fresh ledger.
        func record() throws {
            let ledger = ledger()
            try ledger.record(
                item, input: try ledger.inputRecord(for: item, previous: nil), artifacts: [artifact],
                started: Date(timeIntervalSince1970: 1_750_000_000), seconds: 1.5, audioSeconds: 12)
        }

        func writeInput(_ text: String, modified: Date) throws {
            try Data(text.utf8).write(to: item.url)
            try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: item.url.path)
        }
    }

    @Test func aRecordedItemIsSkippedByALedgerOpenedLater() throws {
        let f = try Fixture()
        try f.record()
        let decision = f.ledger().decide(f.item)
        guard case .skip(let manifest) = decision else {
            Issue.record("expected skip, got \(decision)")
            return
        }
        #expect(manifest.manifestVersion == 1)
        // SHA-256 of "<input sha256>\n<fingerprint>".
        #expect(manifest.key == Digest.hex(Data("\(Self.audioSHA256)\nfp1".utf8)))
        #expect(manifest.voxpipeVersion == "9.9.9")
        #expect(manifest.spec == "fp1")
        #expect(
            manifest.input
                == ItemManifest.FileRecord(
                    path: "a.wav", bytes: 5, sha256: Self.audioSHA256, modified: 1_700_000_000_000_000_000))
        let artifactTime = try #require(Ledger.fileStat(f.artifactURL)?.modified)
        #expect(
            manifest.artifacts == [
                ItemManifest.FileRecord(path: "a/audio.wav", bytes: 4, sha256: Self.wavSHA256, modified: artifactTime)
            ])
        #expect(manifest.started == "2025-06-15T15:06:40Z")
        #expect(manifest.seconds == 1.5)
        #expect(manifest.audioSeconds == 12)
        // Written whole, with no temporary left beside it.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: f.out.appendingPathComponent("a").path).sorted() == [
                "audio.wav", "voxpipe.manifest.json",
            ])
        let text = try String(contentsOf: f.ledger().manifestURL(for: f.item), encoding: .utf8)
        #expect(text.hasPrefix("{\n  \"artifacts\" : [\n    {\n      \"bytes\" : 4,\n      \"modified\" : "))
        #expect(
            text.contains(
                "\n  \"input\" : {\n    \"bytes\" : 5,\n    \"modified\" : 1700000000000000000,\n    \"path\" : "
                    + "\"a.wav\",\n"
            ))
    }

    @Test func theKeyIsTheDigestOfTheInputDigestAndTheFingerprint() {
        let ledger = Ledger(outputDirectory: temporaryDirectory(), fingerprint: "fp1", version: "1")
        #expect(
            ledger.key(inputSHA256: "abc-sha") == "dd82e7f48b2899096b24f36ac400695f5328fef9acb2d78f70c6403a7fd26531")
    }

    @Test func eachChangeSinceTheRecordGivesItsReasonToRun() throws {
        let f = try Fixture()
        #expect(f.ledger().decide(f.item) == .run(reason: "not done before"))
        try f.record()
        #expect(f.ledger(fingerprint: "fp2").decide(f.item) == .run(reason: "spec or voxpipe version changed"))

        // Touched but the same bytes: hashed again, still done.
        try f.writeInput("audio", modified: Date(timeIntervalSince1970: 1_700_000_100))
        guard case .skip = f.ledger().decide(f.item) else {
            Issue.record("a touched input with the same bytes should be skipped")
            return
        }
        try f.writeInput("AUDIO", modified: Date(timeIntervalSince1970: 1_700_000_200))
        #expect(f.ledger().decide(f.item) == .run(reason: "input changed"))
        try FileManager.default.removeItem(at: f.item.url)
        #expect(f.ledger().decide(f.item) == .run(reason: "input unreadable"))
    }

    @Test func aMissingOrChangedArtifactMakesTheItemRunAgain() throws {
        let f = try Fixture()
        try f.record()
        try Data("wav!!".utf8).write(to: f.artifactURL)
        #expect(f.ledger().decide(f.item) == .run(reason: "output changed: a/audio.wav"))
        try FileManager.default.removeItem(at: f.artifactURL)
        #expect(f.ledger().decide(f.item) == .run(reason: "output missing: a/audio.wav"))
    }

    @Test func aManifestCutShortByAKillCountsAsNotDone() throws {
        let f = try Fixture()
        try f.record()
        let url = f.ledger().manifestURL(for: f.item)
        let whole = try Data(contentsOf: url)
        try whole.prefix(whole.count / 2).write(to: url)
        #expect(f.ledger().readManifest(for: f.item) == nil)
        #expect(f.ledger().decide(f.item) == .run(reason: "not done before"))
        // Recording again replaces it whole.
        try f.record()
        #expect(try Data(contentsOf: url).count == whole.count)
        guard case .skip = f.ledger().decide(f.item) else {
            Issue.record("expected skip after recording again")
            return
        }
    }

    @Test func theInputIsHashedOnlyWhenItsSizeOrTimeChanged() throws {
        let f = try Fixture()
        let ledger = f.ledger()
        let stamp: Int64 = 1_700_000_000_000_000_000
        let previous = ItemManifest.FileRecord(path: "a.wav", bytes: 5, sha256: "recorded", modified: stamp)
        #expect(try ledger.inputRecord(for: f.item, previous: previous).sha256 == "recorded")
        var older = previous
        older.modified -= 1000
        #expect(
            try ledger.inputRecord(for: f.item, previous: older)
                == ItemManifest.FileRecord(path: "a.wav", bytes: 5, sha256: Self.audioSHA256, modified: stamp))
        var shorter = previous
        shorter.bytes = 4
        #expect(try ledger.inputRecord(for: f.item, previous: shorter).sha256 == Self.audioSHA256)
        try FileManager.default.removeItem(at: f.item.url)
        #expect(throws: VoxError(.badInput, "cannot read \(f.item.url.path)")) {
            try ledger.inputRecord(for: f.item, previous: previous)
        }
    }

    @Test func temporariesAKilledRunLeftAreRemovedAndNothingElse() throws {
        let folder = temporaryDirectory()
        for name in [
            ".voxpipe-atomic-12-34-voxpipe.manifest.json", ".audio.wav.voxpipe-tmp-12-34", "audio.wav", ".hidden",
        ] {
            try Data("x".utf8).write(to: folder.appendingPathComponent(name))
        }
        #expect(Ledger.removeTemporaries(in: folder) == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == [".hidden", "audio.wav"])
        #expect(Ledger.removeTemporaries(in: folder.appendingPathComponent("missing")) == 0)
    }

    // MARK: AtomicFile

    @Test func atomicWriteCreatesTheFolderAndReplacesTheFileWhole() throws {
        let folder = temporaryDirectory().appendingPathComponent("new/deeper")
        let url = folder.appendingPathComponent("state.json")
        try AtomicFile.write(Data("first".utf8), to: url)
        try AtomicFile.write(Data("second".utf8), to: url)
        #expect(try String(contentsOf: url, encoding: .utf8) == "second")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["state.json"])
    }

    @Test func anAtomicWriteThatCannotCreateItsTemporaryLeavesTheOldFile() throws {
        let folder = temporaryDirectory()
        let url = folder.appendingPathComponent("state.json")
        try AtomicFile.write(Data("old".utf8), to: url)
        let thrown = try withoutWriteAccess(to: folder) {
            #expect(throws: VoxError.self) { try AtomicFile.write(Data("new".utf8), to: url) }
        }
        let error = try #require(thrown)
        #expect(error.code == .cannotCreate)
        // The file is named as the user knows it, not by its temporary name.
        #expect(error.message == "cannot create \(folder.path)/state.json: Permission denied")
        #expect(try String(contentsOf: url, encoding: .utf8) == "old")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["state.json"])
    }

    @Test func anAtomicWriteThatCannotRenameRemovesItsTemporary() throws {
        // The target is a folder: the temporary is written whole, then rename fails.
        let folder = temporaryDirectory()
        let target = folder.appendingPathComponent("state.json")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        try Data("kept".utf8).write(to: target.appendingPathComponent("inside"))
        #expect(throws: VoxError(.cannotCreate, "cannot write \(target.path): Is a directory")) {
            try AtomicFile.write(Data("new".utf8), to: target)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["state.json"])
        #expect(try String(contentsOf: target.appendingPathComponent("inside"), encoding: .utf8) == "kept")
    }

    @Test func anAtomicWriteWhoseFolderCannotBeMadeIsACannotCreateError() throws {
        let file = temporaryDirectory().appendingPathComponent("plain-file")
        try Data("x".utf8).write(to: file)
        let target = file.appendingPathComponent("sub/state.json")
        let error = #expect(throws: VoxError.self) { try AtomicFile.write(Data("new".utf8), to: target) }
        #expect(error?.code == .cannotCreate)
        #expect(error?.message.hasPrefix("cannot create folder \(file.path)/sub: ") == true, "\(error?.message ?? "")")
        #expect(try String(contentsOf: file, encoding: .utf8) == "x")
    }

    @Test func writeFileIntoAMissingFolderNamesTheFileAndTheReason() {
        let url = temporaryDirectory().appendingPathComponent("missing/bagit.txt")
        #expect(throws: VoxError(.cannotCreate, "cannot create \(url.path): No such file or directory")) {
            try AtomicFile.writeFile(Data("x".utf8), to: url)
        }
    }
}
