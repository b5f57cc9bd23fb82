import Foundation
import Logging
import Testing
import VoxTestSupport

@testable import VoxCore

/// Items whose output folders nest (`a.wav` → `a/`, `a/x.wav` → `a/x/`) finish side by side, and
/// an item whose folder would be another item's output fails before it runs, whichever of the two
/// runs first, so `--jobs 2` cannot end with an item done and its files gone (issue 36, item 4).
@Suite struct OutputCollisionTests {
    let spec = #"{"stages":[{"id":"src","kind":"tone"},{"id":"w","kind":"sum-writer"}]}"#

    func runner(output: URL, ledger: Bool = true) async throws -> Runner {
        let plan = try plan(spec)
        let options = RunOptions(
            outputDirectory: output, jobs: 1,
            ledger: ledger ? Ledger(outputDirectory: output, fingerprint: "fp", version: "1") : nil)
        return try await Runner.prepare(plan, options: options, context: StageContext(logger: Logger(label: "test")))
    }

    /// Items for files made under `dir/in`, output names as the listing gives them.
    func items(_ names: [String], in dir: URL) throws -> [InputFile] {
        let input = dir.appendingPathComponent("in")
        for name in names {
            let url = input.appendingPathComponent(name)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(name.utf8).write(to: url)
        }
        return try InputListing.list([input.path], outputDirectory: nil).items
    }

    // The two orders are the two interleavings `--jobs 2` could give: the nested item done first
    // (the outer item's commit then replaced its folder by a file: done, files gone), or second
    // (its folder could not be made: a failure that depended on timing).
    @Test(arguments: [false, true])
    func anItemWhoseFolderIsAnotherItemsOutputFailsWhicheverRunsFirst(nestedFirst: Bool) async throws {
        let dir = temporaryDirectory()
        let out = dir.appendingPathComponent("out")
        let listed = try items(["a.wav", "a/w.txt.wav"], in: dir)
        #expect(listed.map(\.outputName) == ["a", "a/w.txt"])
        let r = try await runner(output: out)
        let results = await r.run(nestedFirst ? listed.reversed() : listed)
        let outer = try #require(results.first { $0.item.outputName == "a" })
        let nested = try #require(results.first { $0.item.outputName == "a/w.txt" })
        #expect(outer.status == .done)
        #expect(nested.status == .failed)
        #expect(
            nested.failure?.description
                == "output (folder): output folder a/w.txt/ would be an output of item a.wav (stage 'w' writes w, "
                + "w.<ext> and w-NNNN.<ext> in a/); rename one of the two inputs")
        #expect(try String(contentsOf: out.appendingPathComponent("a/w.txt"), encoding: .utf8) == "150.0")
        for result in results where result.status == .done {
            for artifact in result.artifacts {
                #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent(artifact.path).path))
            }
        }
    }

    @Test func nestedItemFoldersThatCollideWithNoOutputBothFinish() async throws {
        let dir = temporaryDirectory()
        let out = dir.appendingPathComponent("out")
        let listed = try items(["a.wav", "a/b.wav", "a/wide.wav"], in: dir)
        let r = try await runner(output: out)
        let results = await r.run(listed.reversed())
        #expect(results.map(\.status) == [.done, .done, .done])
        for name in ["a/w.txt", "a/b/w.txt", "a/wide/w.txt"] {
            #expect(try String(contentsOf: out.appendingPathComponent(name), encoding: .utf8) == "150.0")
        }
    }

    @Test func aCommitNeverReplacesAFolderHoldingAnotherItemsManifest() async throws {
        let out = temporaryDirectory()
        let other = out.appendingPathComponent("a/w.txt")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: other.appendingPathComponent(Ledger.manifestName))
        let outputs = ItemOutputs(root: out, folderName: "a")
        let temp = try outputs.reserve(stageID: "w", ext: "txt")
        _ = try await outputs.write(Data("150.0".utf8), to: temp)
        #expect(throws: VoxError.self) { try outputs.commit() }
        #expect(FileManager.default.fileExists(atPath: other.appendingPathComponent(Ledger.manifestName).path))
    }

    @Test func aWrittenOutputThatVanishedBeforeTheCommitFailsTheCommit() async throws {
        let out = temporaryDirectory()
        let outputs = ItemOutputs(root: out, folderName: "a")
        let temp = try outputs.reserve(stageID: "w", ext: "txt")
        _ = try await outputs.write(Data("150.0".utf8), to: temp)
        // Another item sharing the folder took it for a killed run's leftover.
        Ledger.removeTemporaries(in: outputs.folder)
        let error = #expect(throws: VoxError.self) { try outputs.commit() }
        #expect(error?.message == "\(out.path)/a/w.txt vanished before it was moved into place")
    }
}
