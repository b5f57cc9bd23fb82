import Foundation
import VoxCore

/// Runs one stage alone on given inputs, the way swift-nio's `EmbeddedChannel` tests a handler:
/// feed typed values, finish, and look at what came out, what the stage logged, and what it
/// reported about the item. It fails when an input is not one the stage takes, and when the stage
/// returns with input left unread (in a pipeline that would stall the stage before it). The
/// context carries the test's HTTP transport, clock, provenance and secrets, when given. For tests
/// of stage modules.
public struct StageHarness<S: Stage> {
    public let stage: S
    public let outputDirectory: URL
    public let item: InputFile
    /// Everything the stage logged, at every level, in order.
    public let logs: CapturedLogs
    /// The item expansion the stage declares, if any: what it learns of an input file before the
    /// stage is fed it, as the runner has it learnt.
    let expansion: (any ItemExpansion)?

    /// Configures the stage from spec options, as a spec would. `upstream` is what a plan would
    /// tell the stage about the stages it reads from (an agent's record types); `provenance` about
    /// the run (its spec, software, and every stage: a resampler); `secrets` the keys in use,
    /// which writers redact.
    public init(
        _ type: S.Type, id: String = "stage", options: [String: JSONValue] = [:],
        outputDirectory: URL? = nil, item: InputFile? = nil, baseDirectory: URL? = nil,
        rateConversion: (any RateConversion)? = nil,
        httpTransport: (any HTTPTransport)? = nil, clock: (any VoxClock)? = nil, engines: EngineCache? = nil,
        upstream: [PlannedStage] = [], provenance: Provenance? = nil, secrets: Secrets? = nil
    ) throws {
        let base = baseDirectory ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let configuration = try S.configure(
            StageOptions.validated(
                options, against: S.options, stageID: id, path: "stages[0]", owner: S.kind, baseDirectory: base))
        logs = CapturedLogs()
        expansion = S.declarations(configuration)[.itemExpansion]
        var context = StageContext(logger: logs.logger(), rateConversion: rateConversion)
        context.httpTransport = httpTransport
        if let clock { context.clock = clock }
        if let engines { context.engines = engines }
        context.upstream = upstream
        if let provenance { context.provenance = provenance }
        if let secrets { context.secrets = secrets }
        stage = try S(id: id, configuration: configuration, context: context)
        self.outputDirectory =
            outputDirectory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-harness-\(UUID().uuidString)")
        self.item =
            item ?? InputFile(url: URL(fileURLWithPath: "/dev/null"), relativePath: "item.wav", outputName: "item")
    }

    /// The item's outputs, empty, where this harness writes them: for a test that reserves files
    /// in it first (what upstream writers wrote, which `write-message-chunks` reads) and passes it
    /// to `run`.
    public func itemOutputs() -> ItemOutputs { ItemOutputs(root: outputDirectory, folderName: item.outputName) }

    /// Feeds `inputs` (the stage's own input type), ends the input, and returns every output.
    /// `facts` are what upstream stages learnt (a sidecar's fields).
    public func run(
        _ inputs: [S.Input], commit: Bool = true, facts: ItemFacts = ItemFacts(), outputs: ItemOutputs? = nil
    ) async throws -> (outputs: [S.Output], facts: ItemFacts)
    where S.Input: Payload {
        try await run(inputs.map { $0 as any Payload }, commit: commit, facts: facts, outputs: outputs)
    }

    /// Feeds `inputs`, ends the input, and returns every output in order. When `commit` is set,
    /// reserved output files are moved into place as the runner would on success. `outputs` is
    /// the item's outputs so far (`itemOutputs()`, with files reserved in it); nil starts empty.
    public func run(
        _ inputs: [any Payload], commit: Bool = true, facts: ItemFacts = ItemFacts(), outputs: ItemOutputs? = nil
    ) async throws -> (outputs: [S.Output], facts: ItemFacts) {
        for (i, input) in inputs.enumerated() where S.Input(payload: input) == nil && !input.isLeadingPart {
            throw HarnessError(
                "input \(i) is \(type(of: input).payloadType), which \(S.kind) does not take (it takes "
                    + "\(S.Input.accepted.map(\.rawValue).joined(separator: " | ")))"
            )
        }
        try await stage.prepare()
        let inbox = PayloadChannel()
        let outbox = PayloadChannel()
        let read = ReadCounter()
        let outputs = outputs ?? itemOutputs()
        let context = ItemContext(item: item, outputs: outputs, logger: logs.logger(), facts: facts)
        for case let file as InputFile in inputs {
            try expansion?.learnFacts(of: file, into: facts, logger: context.logger)
        }
        let stage = self.stage
        let collected: [S.Output] = try await withThrowingTaskGroup(of: [S.Output]?.self) { group in
            group.addTask {
                for input in inputs { await inbox.send(input) }
                inbox.finish()
                return nil
            }
            group.addTask {
                do {
                    try await stage.run(Inbox(inbox, counting: read), Outbox(channels: [outbox], sink: nil), context)
                    // Release the feeder whatever the stage left; what it left is checked below.
                    inbox.finish()
                    outbox.finish()
                } catch {
                    inbox.finish()
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
        guard read.value == inputs.count else {
            outputs.discard()
            throw HarnessError("\(S.kind) returned with \(inputs.count - read.value) of \(inputs.count) inputs unread")
        }
        if commit { try outputs.commit() } else { outputs.discard() }
        return (collected, context.facts)
    }
}

/// A misuse of the harness, or a stage that broke its contract.
public struct HarnessError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
