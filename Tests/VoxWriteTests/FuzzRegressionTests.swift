import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxWrite

/// Message-chunk indexes and BagIt tag manifests from Tests/Fixtures/fuzz-regressions/
/// (`make fuzz`, targets chunks and bagit): bad ones are reported, and nothing outside the
/// index's folder or the bag is read (`../../dev/zero` would never end).
@Suite struct WriteFuzzRegressionTests {
    func joinError(_ fixture: String) throws -> WriteError? {
        let dir = temporaryDirectory()
        let index = dir.appendingPathComponent("x.index.json")
        try FileManager.default.copyItem(at: fuzzRegression("chunks", fixture), to: index)
        try Data().write(to: dir.appendingPathComponent("x.0001"))
        do {
            _ = try WriteMessageChunksStage.join(index: index)
            return nil
        } catch let error as WriteError {
            return error
        }
    }

    @Test func anIndexNamingAPartOutsideItsFolderIsRefused() throws {
        let error = try joinError("part-outside-the-folder.index.json")
        #expect(error?.category == .badInput)
        #expect(error?.message.contains("not a file name beside the index") == true, "\(String(describing: error))")
    }

    @Test func anIndexListingOnePartTwiceIsRefused() throws {
        let error = try joinError("part-listed-twice.index.json")
        #expect(error?.message.contains("x.0001: listed twice") == true, "\(String(describing: error))")
    }

    @Test func aTagManifestNamingAFileOutsideTheBagIsAProblem() throws {
        let bag = temporaryDirectory()
        try FileManager.default.createDirectory(
            at: bag.appendingPathComponent("data"), withIntermediateDirectories: true)
        try Data("evidence".utf8).write(to: bag.appendingPathComponent("data/a.txt"))
        try BagIt.finish(bag: bag, info: [("Bagging-Date", "2024-05-01")])
        #expect(BagIt.verify(bag: bag).isEmpty)
        try FileManager.default.removeItem(at: bag.appendingPathComponent("tagmanifest-sha256.txt"))
        try FileManager.default.copyItem(
            at: fuzzRegression("bagit", "tagmanifest-outside-the-bag.txt"),
            to: bag.appendingPathComponent("tagmanifest-sha256.txt"))
        let problems = BagIt.verify(bag: bag)
        #expect(
            problems.contains("../../../../../../../../dev/zero: listed in tagmanifest-sha256.txt but outside the bag"),
            "\(problems)")
    }

    @Test func aLineBreakInABagInfoValueStaysOnItsLine() throws {
        let bag = temporaryDirectory()
        try FileManager.default.createDirectory(
            at: bag.appendingPathComponent("data"), withIntermediateDirectories: true)
        try Data("evidence".utf8).write(to: bag.appendingPathComponent("data/a.txt"))
        try BagIt.finish(bag: bag, info: [("External-Identifier", "r-7\nPayload-Oxum: 0.0")])
        let info = try String(contentsOf: bag.appendingPathComponent("bag-info.txt"), encoding: .utf8)
        #expect(info == "External-Identifier: r-7; Payload-Oxum: 0.0\nPayload-Oxum: 8.1\n")
        #expect(BagIt.verify(bag: bag).isEmpty)
    }
}
