import Foundation
import Logging
import Testing
import VoxTestSupport
import VoxTesting

@testable import VoxCore

@Suite struct RunnerTests {
    func runner(_ json: String, output: URL, jobs: Int = 2) async throws -> Runner {
        try await Runner.prepare(
            try plan(json), options: RunOptions(outputDirectory: output, jobs: jobs),
            context: StageContext(logger: Logger(label: "test")))
    }

    func items(_ names: [String]) -> [InputFile] {
        names.map {
            InputFile(
                url: URL(fileURLWithPath: "/nonexistent/\($0)"), relativePath: $0,
                outputName: ($0 as NSString).deletingPathExtension)
        }
    }

    /// What prepare throws, as the command line sees it.
    func prepareError(refuse: String, as code: String) async -> VoxError? {
        let spec =
            #"{"stages":[{"id":"src","kind":"tone","refuse":"\#(refuse)","refuseAs":"\#(code)"},{"id":"w","#
            + #""kind":"sum-writer","from":"src"}]}"#
        do {
            _ = try await runner(spec, output: temporaryDirectory())
            return nil
        } catch {
            return error as? VoxError
        }
    }

    @Test func aModulesErrorAtPrepareKeepsItsCategoryAndGetsTheStageAsContext() async throws {
        let missing = try #require(await prepareError(refuse: "the engine library is missing", as: "engine"))
        #expect(missing.code == .unavailable && missing.exitCode == 69)
        #expect(missing.context == ErrorContext(stageID: "src", stageKind: "tone"))
        #expect(missing.message == "the engine library is missing")
        #expect(describe(missing) == "stage 'src' (tone): the engine library is missing")

        let disk = try #require(await prepareError(refuse: "no room", as: "disk"))
        #expect(disk.code == .cannotCreate && exitCode(for: disk) == 73)
        // An error that would blame an item means, at prepare, that what the stage needs is not there.
        let data = try #require(await prepareError(refuse: "odd", as: "data"))
        #expect(data.code == .unavailable && data.exitCode == 69)
    }

    @Test func everyErrorHasAnExitStatusAndAOneLineMessage() {
        struct Foreign: Error {}
        #expect(exitCode(for: Foreign()) == 70)
        #expect(exitCode(for: ModuleError<ToneSource.Failure>(.badData, "x")) == 1)
        let multiLine = ModuleError<ToneSource.Failure>(
            .engineMissing, "libfoo said:\n  cannot open\n\n  try again\n", context: ErrorContext(item: "a.wav"))
        #expect(multiLine.description == "a.wav: libfoo said:; cannot open; try again")
        #expect(
            !describe(NSError(domain: NSCocoaErrorDomain, code: 4, userInfo: [NSLocalizedDescriptionKey: "one\ntwo"]))
                .contains("\n"))
    }

    @Test func anItemFactReachesTheStageThatRecordsItPerItem() async throws {
        let out = temporaryDirectory()
        let r = try await runner(
            #"{"stages":[{"id":"src","kind":"reporting-source"},{"id":"g","kind":"gain"},{"id":"r","#
                + #""kind":"report-writer"}]}"#,
            output: out)
        _ = await r.run(items(["a.wav", "b.wav"]))
        #expect(try String(contentsOf: out.appendingPathComponent("a/r.txt"), encoding: .utf8) == "R-a")
        #expect(try String(contentsOf: out.appendingPathComponent("b/r.txt"), encoding: .utf8) == "R-b")
    }

    @Test func oneOutputFeedsEveryStageThatNamesIt() async throws {
        let out = temporaryDirectory()
        let r = try await runner(
            #"{"stages":[{"id":"src","kind":"tone"},{"id":"g","kind":"gain","factor":3},{"id":"raw","#
                + #""kind":"sum-writer","from":"src"},{"id":"loud","kind":"sum-writer","from":"g"}]}"#,
            output: out)
        let results = await r.run(items(["a.wav"]))
        #expect(results.map(\.status) == [.done])
        #expect(try String(contentsOf: out.appendingPathComponent("a/raw.txt"), encoding: .utf8) == "150.0")
        #expect(try String(contentsOf: out.appendingPathComponent("a/loud.txt"), encoding: .utf8) == "450.0")
        #expect(Set(results[0].artifacts.map(\.path)) == ["a/raw.txt", "a/loud.txt"])
        #expect(results[0].artifacts.first { $0.path == "a/raw.txt" }?.sha256 == Digest.hex(Data("150.0".utf8)))
    }

    @Test func aFailingItemFailsAloneAndLeavesNoFiles() async throws {
        let out = temporaryDirectory()
        let r = try await runner(
            #"{"stages":[{"id":"src","kind":"tone","failOn":"bad"},{"id":"c","kind":"chunker"},{"id":"w","#
                + #""kind":"sum-writer"}]}"#,
            output: out)
        let results = await r.run(items(["good1.wav", "bad.wav", "good2.wav"]))
        #expect(results.map(\.status) == [.done, .failed, .done])
        #expect(results[1].failure?.description == "src (tone): bad block in bad.wav")
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("good2/w.txt").path))
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("bad").path))
        let leftovers = try FileManager.default.subpathsOfDirectory(atPath: out.path).filter {
            $0.contains(ItemOutputs.temporaryMarker)
        }
        #expect(leftovers.isEmpty)
    }

    @Test func aStagesErrorKeepsItsCodeWithStageAndItemInItsContextAndTheReportLineNamesItsCategory() async throws {
        let r = try await runner(
            #"{"stages":[{"id":"src","kind":"tone","failOn":"bad"},{"id":"w","kind":"sum-writer"}]}"#,
            output: temporaryDirectory())
        let failure = try #require(await r.run(items(["sub/bad.wav"])).first?.failure)
        let error = try #require(failure.error as? VoxError)
        #expect(error.code == .badInput && failure.category == .badInput)
        #expect(error.context == ErrorContext(stageID: "src", stageKind: "tone", item: "sub/bad.wav"))
        // The message and the report line are the error's text as thrown: the context is typed, not
        // repeated; the line names the category and code (a VoxError's code is its category).
        #expect(failure.reason == "bad block in sub/bad.wav")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let line = String(decoding: try encoder.encode(failure), as: UTF8.self)
        #expect(
            line == #"{"category":"badInput","code":"badInput","kind":"tone","reason":"bad block in sub/bad.wav","#
                + #""stage":"src"}"#)
        // Read back (a shard's report merged by `voxpipe report`), both survive.
        let read = try JSONDecoder().decode(StageFailure.self, from: Data(line.utf8))
        #expect(read.category == .badInput && read.code == "badInput" && read == failure)
    }

    @Test func aModulesErrorCodeIsNamedByItsModule() {
        enum ToneFailure: FailureCode {
            case clipped
            var category: VoxFailure { .badInput }
        }
        let failure = StageFailure(
            stageID: "src", kind: "tone", reason: "clipped", error: ModuleError(ToneFailure.clipped, "clipped"))
        #expect(failure.code == "tone.clipped" && failure.category == .badInput)
        #expect(StageFailure(stageID: "s", kind: "k", reason: "r").code == nil)
    }

    @Test func aFailedItemKeepsTheOutputsOfAnEarlierRun() async throws {
        let out = temporaryDirectory()
        let good = try await runner(
            #"{"stages":[{"id":"src","kind":"tone"},{"id":"w","kind":"sum-writer"}]}"#, output: out)
        _ = await good.run(items(["bad.wav"]))
        let bad = try await runner(
            #"{"stages":[{"id":"src","kind":"tone","failOn":"bad"},{"id":"w","kind":"sum-writer"}]}"#, output: out)
        let results = await bad.run(items(["bad.wav"]))
        #expect(results.map(\.status) == [.failed])
        #expect(try String(contentsOf: out.appendingPathComponent("bad/w.txt"), encoding: .utf8) == "150.0")
    }

    @Test func manyItemsWithFewJobsAllFinishInInputOrder() async throws {
        let out = temporaryDirectory()
        let r = try await runner(
            #"{"stages":[{"id":"src","kind":"tone","blocks":50},{"id":"c","kind":"chunker"},{"id":"w","#
                + #""kind":"sum-writer"}]}"#,
            output: out, jobs: 3)
        let names = (0..<40).map { "f\($0).wav" }
        let results = await r.run(items(names))
        #expect(results.map(\.item.relativePath) == names)
        #expect(results.allSatisfy { $0.status == .done })
    }

    // A writer that dies mid-stream must not leave the stages feeding it blocked in a send: the
    // item fails at once with the writer's reason and the run goes on. Before the fix the run
    // never ended: a hang that scripts/swift-test.sh's watchdog names, not a time these tests
    // assert (they take well under a second).
    @Test(arguments: [0, 3])
    func aWriterThatDiesLeavesNoStageWaitingAndTheRunEnds(after: Int) async throws {
        let out = temporaryDirectory()
        let r = try await runner(
            #"{"stages":[{"id":"src","kind":"tone","blocks":200},{"id":"g","kind":"gain"},"#
                + #"{"id":"w","kind":"dead-writer","after":\#(after)}]}"#,
            output: out, jobs: 2)
        let results = await r.run(items(["a.wav", "b.wav", "c.wav"]))
        #expect(results.map(\.status) == [.failed, .failed, .failed])
        #expect(results[0].failure?.description == "w (dead-writer): writing w.txt failed: No space left on device")
        #expect(try FileManager.default.subpathsOfDirectory(atPath: out.path).isEmpty)
    }

    @Test func aDeadWriterBesideALiveOneFailsTheItemWithoutWaiting() async throws {
        let out = temporaryDirectory()
        let r = try await runner(
            #"{"stages":[{"id":"src","kind":"tone","blocks":200},{"id":"ok","kind":"sum-writer","from":"src"},"#
                + #"{"id":"w","kind":"dead-writer","from":"src","after":1}]}"#,
            output: out)
        let results = await r.run(items(["a.wav"]))
        #expect(results.map(\.status) == [.failed])
        #expect(results[0].failure?.stageID == "w")
        #expect(try FileManager.default.subpathsOfDirectory(atPath: out.path).isEmpty)
    }

    @Test func anOutputThatTakesNothingMoreFailsTheItemAndStartsNoOther() async throws {
        let out = temporaryDirectory()
        let r = try await runner(
            #"{"stages":[{"id":"src","kind":"tone","blocks":20},{"id":"w","kind":"dead-writer","full":true}]}"#,
            output: out, jobs: 1)
        let results = await r.run(items(["a.wav", "b.wav", "c.wav"]))
        #expect(results.map(\.item.relativePath) == ["a.wav"])
        #expect(Runner.outputFull(in: results)?.stageID == "w")
        #expect(exitCode(for: VoxError(.outputFull, "full")) == 73)
    }

    @Test func anOutputsTemporaryNameIsShownAsTheNameItWillHave() {
        #expect(
            ItemOutputs.finalPath(of: URL(fileURLWithPath: "/o/a/.audio.wav.voxpipe-tmp-12-345")) == "/o/a/audio.wav")
        #expect(
            ItemOutputs.finalPath(of: URL(fileURLWithPath: "/o/a/.bag.voxpipe-tmp-1-2/data/x.wav"))
                == "/o/a/bag/data/x.wav")
        #expect(
            ItemOutputs.finalPath(of: URL(fileURLWithPath: "/o/a/.voxpipe-atomic-12-345-voxpipe.manifest.json"))
                == "/o/a/voxpipe.manifest.json")
        #expect(ItemOutputs.finalPath(of: URL(fileURLWithPath: "/o/a/plain.txt")) == "/o/a/plain.txt")
    }

    @Test func aFolderThatAFileStandsInTheWayOfIsNamedWithTheSystemsReason() throws {
        let dir = temporaryDirectory()
        try Data("x".utf8).write(to: dir.appendingPathComponent("a"))
        #expect(throws: VoxError(.cannotCreate, "cannot create folder \(dir.path)/a/b/c: Not a directory")) {
            try ItemOutputs.createFolder(dir.appendingPathComponent("a/b/c"))
        }
        try ItemOutputs.createFolder(dir.appendingPathComponent("x/y/z"))
        try ItemOutputs.createFolder(dir.appendingPathComponent("x/y/z"))
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("x/y/z").path))
    }

    @Test func anEmptyStreamStillReachesTheWriter() async throws {
        let out = temporaryDirectory()
        let r = try await runner(
            #"{"stages":[{"id":"src","kind":"tone","blocks":0},{"id":"w","kind":"sum-writer"}]}"#, output: out)
        let results = await r.run(items(["silent.wav"]))
        #expect(results.map(\.status) == [.done])
        #expect(try String(contentsOf: out.appendingPathComponent("silent/w.txt"), encoding: .utf8) == "0.0")
    }

    @Test func harnessRunsAStageAlone() async throws {
        let harness = try StageHarness(Gain.self, options: ["factor": 4])
        let block = AudioBlock(
            format: AudioFormat(sampleRate: 8000, channels: 1), samples: [0.25, 0.5], frameOffset: 0)
        let (outputs, _) = try await harness.run([block, block])
        #expect(outputs.map(\.samples) == [[1, 2], [1, 2]])
        #expect(harness.logs.records.isEmpty)
    }

    @Test func theHarnessFailsAStageThatLeavesInputUnreadAndKeepsWhatItLogged() async throws {
        let harness = try StageHarness(Gain.self, options: ["stopAfter": 1])
        let block = AudioBlock(format: AudioFormat(sampleRate: 8000, channels: 1), samples: [0.25], frameOffset: 0)
        await #expect(throws: HarnessError("gain returned with 2 of 4 inputs unread")) {
            _ = try await harness.run([block, block, block, block])
        }
        #expect(
            harness.logs.records == [
                CapturedLogs.Record(
                    level: .warning, message: "stopping early", metadata: ["stage.id": "gain", "blocks": "1"])
            ])
    }

    @Test func theHarnessRefusesAnInputTheStageDoesNotTake() async throws {
        let harness = try StageHarness(Gain.self)
        let file = InputFile(url: URL(fileURLWithPath: "/dev/null"), relativePath: "a.wav", outputName: "a")
        await #expect(throws: HarnessError("input 0 is InputFile, which gain does not take (it takes AudioBlock)")) {
            _ = try await harness.run([file])
        }
    }
}

@Suite struct InputListingTests {
    @Test func foldersAreSearchedAndCollidingStemsKeepTheirExtension() throws {
        let root = temporaryDirectory()
        for name in ["a.wav", "a.flac", "b.mp3", "sub/c.wav", "notes.txt", ".hidden.wav"] {
            let url = root.appendingPathComponent(name)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("x".utf8).write(to: url)
        }
        let items = try InputListing.collect([root.path])
        #expect(items.map(\.relativePath) == ["a.flac", "a.wav", "b.mp3", "sub/c.wav"])
        #expect(items.map(\.outputName) == ["a.flac", "a.wav", "b", "sub/c"])
    }

    @Test func aFileListedTwiceIsOneItemAndAMissingPathIsNoInput() throws {
        let root = temporaryDirectory()
        try Data("x".utf8).write(to: root.appendingPathComponent("a.wav"))
        #expect(try InputListing.collect([root.path, root.appendingPathComponent("a.wav").path]).count == 1)
        #expect(throws: VoxError(.noInput, "/nonexistent/x.wav: no such file or folder")) {
            try InputListing.collect(["/nonexistent/x.wav"])
        }
    }

    @Test func twoFilesOfTheSameNameFromDifferentFoldersAreAUsageError() throws {
        let root = temporaryDirectory()
        for name in ["x/a.wav", "y/a.wav"] {
            let url = root.appendingPathComponent(name)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("x".utf8).write(to: url)
        }
        #expect(throws: VoxError.self) {
            try InputListing.collect([
                root.appendingPathComponent("x/a.wav").path, root.appendingPathComponent("y/a.wav").path,
            ])
        }
    }
}

@Suite struct FanInTests {
    @Test func aStageReadingSeveralStagesGetsAllTheirOutputsAndEndsAfterTheLast() async throws {
        let out = temporaryDirectory()
        let plan = try plan(
            #"{"stages":[{"id":"src","kind":"tone","blocks":4},{"id":"g","kind":"gain","factor":3},{"id":"c","#
                + #""kind":"chunker","from":"src"},{"id":"w","kind":"sum-writer","from":["g","c"]}]}"#
        )
        #expect(plan.nodes[3].parents == [1, 2])
        #expect(plan.describe().contains("from 'g' + 'c'"))
        let runner = try await Runner.prepare(
            plan, options: RunOptions(outputDirectory: out, jobs: 1), context: StageContext(logger: .init(label: "t")))
        let results = await runner.run([
            InputFile(url: URL(fileURLWithPath: "/x/a.wav"), relativePath: "a.wav", outputName: "a")
        ])
        #expect(results.map(\.status) == [.done])
        // 4 blocks of 100 × 0.5: 200 through the gain (×3 = 600) plus 200 as chunks.
        #expect(try String(contentsOf: out.appendingPathComponent("a/w.txt"), encoding: .utf8) == "800.0")
    }

    @Test func aCycleThroughSeveralParentsIsFound() throws {
        #expect(throws: VoxError.self) {
            try plan(
                #"{"stages":[{"id":"src","kind":"tone"},{"id":"a","kind":"gain","from":["src","b"]},{"id":"b","#
                    + #""kind":"gain","from":"a"}]}"#
            )
        }
    }
}
