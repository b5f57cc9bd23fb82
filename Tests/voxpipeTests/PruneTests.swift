import Foundation
import Testing
import VoxTestSupport

/// `voxpipe prune` removes an item's own outputs, never another item's that nests in its folder
/// (`a.txt` → `a/`, `a/b.txt` → `a/b/`) (issue 36, item 5).
@Suite(.startsProcess("the voxpipe binary")) struct PruneTests {
    let spec = packageRoot.appendingPathComponent("Pipelines/lesson-tutor-text.json").path

    /// Lessons `a.txt` and `a/b.txt` run into `dir/out`; the items named in `old` then marked as
    /// finished in 2020.
    func nestedItems(in dir: URL, old: [String]) throws -> (input: URL, out: URL) {
        let input = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(
            at: input.appendingPathComponent("a"), withIntermediateDirectories: true)
        try "Hallo.\n".write(to: input.appendingPathComponent("a.txt"), atomically: true, encoding: .utf8)
        try "Wie geht es dir?\n".write(to: input.appendingPathComponent("a/b.txt"), atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("out")
        let run = try voxpipe(["run", spec, input.path, "-o", out.path])
        #expect(run.status == 0, "\(run.stderr)")
        for name in old {
            let manifest = out.appendingPathComponent("\(name)/voxpipe.manifest.json")
            var object = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: manifest)) as? [String: Any])
            object["finished"] = "2020-01-01T00:00:00Z"
            try JSONSerialization.data(withJSONObject: object).write(to: manifest)
        }
        return (input, out)
    }

    func manifest(_ out: URL, _ name: String) throws -> [String: Any]? {
        let url = out.appendingPathComponent("\(name)/voxpipe.manifest.json")
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        return try JSONSerialization.jsonObject(with: data) as? [String: Any]
    }

    @Test func pruningAnItemKeepsTheMarkerOfAPrunedItemNestedInItsFolder() throws {
        let (input, out) = try nestedItems(in: temporaryDirectory(), old: ["a", "a/b"])
        let prune = try voxpipe(["prune", out.path, "--older-than", "30d"])
        #expect(prune.status == 0, "\(prune.stderr)")
        #expect(prune.stdout.contains("pruned a (") && prune.stdout.contains("pruned a/b ("), "\(prune.stdout)")
        #expect(prune.stderr.contains("in 2 items; 0 on legal hold, 0 newer than 30d"), "\(prune.stderr)")
        #expect(try manifest(out, "a")?["pruned"] != nil)
        #expect(try manifest(out, "a/b")?["pruned"] != nil)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("a/b").path) == [
                "voxpipe.manifest.json"
            ])

        let rerun = try voxpipe(["run", spec, input.path, "-o", out.path])
        #expect(rerun.status == 0 && rerun.stderr.contains("2 items: 0 done, 2 skipped, 0 failed"), "\(rerun.stderr)")
    }

    @Test func pruningAnItemKeepsANewerItemNestedInItsFolderWhole() throws {
        let (input, out) = try nestedItems(in: temporaryDirectory(), old: ["a"])
        let replies = try Data(contentsOf: out.appendingPathComponent("a/b/replies.json"))
        let prune = try voxpipe(["prune", out.path, "--older-than", "30d"])
        #expect(prune.status == 0, "\(prune.stderr)")
        #expect(prune.stderr.contains("in 1 item; 0 on legal hold, 1 newer than 30d"), "\(prune.stderr)")
        #expect(try manifest(out, "a")?["pruned"] != nil)
        #expect(try manifest(out, "a/b")?["pruned"] == nil)
        #expect(try Data(contentsOf: out.appendingPathComponent("a/b/replies.json")) == replies)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("a").path).sorted() == [
                "b", "voxpipe.manifest.json",
            ])

        let rerun = try voxpipe(["run", spec, input.path, "-o", out.path])
        #expect(rerun.status == 0 && rerun.stderr.contains("2 items: 0 done, 2 skipped, 0 failed"), "\(rerun.stderr)")
    }

    @Test func aPruneKilledAfterItsRenameGivesTheNestedItemsBackBeforeFinishing() throws {
        let (input, out) = try nestedItems(in: temporaryDirectory(), old: [])
        let replies = try Data(contentsOf: out.appendingPathComponent("a/b/replies.json"))
        // A prune of a/ killed between moving the folder aside and moving a/b back.
        let aside = out.appendingPathComponent("a.voxpipe-pruning")
        try FileManager.default.moveItem(at: out.appendingPathComponent("a"), to: aside)
        try FileManager.default.createDirectory(at: out.appendingPathComponent("a"), withIntermediateDirectories: true)

        let prune = try voxpipe(["prune", out.path, "--older-than", "30d"])
        #expect(prune.status == 0, "\(prune.stderr)")
        #expect(!FileManager.default.fileExists(atPath: aside.path))
        #expect(try Data(contentsOf: out.appendingPathComponent("a/b/replies.json")) == replies)
        let rerun = try voxpipe(["run", spec, input.path, "-o", out.path])
        #expect(rerun.status == 0 && rerun.stderr.contains("2 items: 1 done, 1 skipped, 0 failed"), "\(rerun.stderr)")
    }
}
