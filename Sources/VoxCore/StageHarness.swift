import Foundation
import Logging

/// Runs one stage alone on given inputs, the way swift-nio's `EmbeddedChannel` tests a handler:
/// feed typed values, finish, and look at what came out. For tests of stage modules.
public struct StageHarness<S: Stage> {
    public let stage: S
    public let outputDirectory: URL
    public let item: InputFile

    /// Configures the stage from spec options, as a spec would.
    public init(_ type: S.Type, id: String = "stage", options: [String: JSONValue] = [:],
                outputDirectory: URL? = nil, item: InputFile? = nil, baseDirectory: URL? = nil, rateConversion: (any RateConversion)? = nil) throws {
        let base = baseDirectory ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        try validateOptions(options, against: S.options, path: "stages[0]", owner: S.kind)
        let configuration = try S.configure(StageOptions(stageID: id, path: "stages[0]", baseDirectory: base, values: options, specs: S.options))
        let logger = Logger(label: "voxpipe.test")
        stage = try S(id: id, configuration: configuration, context: StageContext(logger: logger, specDirectory: base, rateConversion: rateConversion))
        self.outputDirectory = outputDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-harness-\(UUID().uuidString)")
        self.item = item ?? InputFile(url: URL(fileURLWithPath: "/dev/null"), relativePath: "item.wav", outputName: "item")
    }

    /// Feeds `inputs`, ends the input, and returns every output in order. When `commit` is set,
    /// reserved output files are moved into place as the runner would on success.
    public func run(_ inputs: [any Payload], commit: Bool = true) async throws -> (outputs: [S.Output], stats: ItemStats) {
        try await stage.prepare()
        let inbox = PayloadChannel()
        let outbox = PayloadChannel()
        let outputs = ItemOutputs(root: outputDirectory, folderName: item.outputName)
        let context = ItemContext(item: item, outputs: outputs, logger: Logger(label: "voxpipe.test"))
        let stage = self.stage
        let collected: [S.Output] = try await withThrowingTaskGroup(of: [S.Output]?.self) { group in
            group.addTask {
                for input in inputs { await inbox.send(input) }
                inbox.finish()
                return nil
            }
            group.addTask {
                do {
                    try await stage.run(Inbox(inbox), Outbox(channels: [outbox], sink: nil), context)
                    outbox.finish()
                } catch {
                    outbox.fail(error)
                    throw error
                }
                return nil
            }
            group.addTask {
                var got: [S.Output] = []
                for try await value in outbox { if let v = value as? S.Output { got.append(v) } }
                return got
            }
            var result: [S.Output] = []
            for try await value in group { if let v = value { result = v } }
            return result
        }
        if commit { try outputs.commit() } else { outputs.discard() }
        return (collected, context.stats)
    }
}
