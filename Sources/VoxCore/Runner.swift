import AsyncAlgorithms
import Foundation
import Logging
import Synchronization

// Data flow of one item (one input file) through a plan; each box is a task, each arrow a
// bounded channel, and a stage's output fans out to every stage that names it in `from`:
//
//   InputFile ──▶ [decode] ──AudioBlock──▶ [resample] ──AudioBlock──┬─▶ [write-wav] ──Artifact──▶ sink
//                                                                   └─▶ [chunk] ──AudioChunk──▶ …
//
// `--jobs N` items run at once, each with its own channels; stage instances (and the engines
// they hold) are shared by all items of a run.

/// How one item ended.
public struct ItemResult: Sendable {
    public enum Status: String, Sendable, Codable { case done, skipped, failed }
    public var item: InputFile
    public var status: Status
    public var failure: StageFailure?
    /// Why a skipped item was skipped, or why a done item was run.
    public var reason: String?
    public var artifacts: [Artifact]
    /// Wall-clock seconds spent on the item.
    public var seconds: Double
    /// Length of the input audio in seconds, when a decoder reported it.
    public var audioSeconds: Double?
    /// What stages noticed without failing the item (a truncated file).
    public var warnings: [ItemWarning]
    /// Each speaker's talk time and turns, when a speaker chunker labelled the item's chunks.
    public var speakers: [SpeakerTalk]?

    public init(
        item: InputFile, status: Status, failure: StageFailure? = nil, reason: String? = nil,
        artifacts: [Artifact] = [], seconds: Double = 0, audioSeconds: Double? = nil, warnings: [ItemWarning] = [],
        speakers: [SpeakerTalk]? = nil
    ) {
        self.item = item
        self.status = status
        self.failure = failure
        self.reason = reason
        self.artifacts = artifacts
        self.seconds = seconds
        self.audioSeconds = audioSeconds
        self.warnings = warnings
        self.speakers = speakers
    }
}

/// What a run reports as it goes.
public enum RunEvent: Sendable {
    case started(total: Int)
    case itemStarted(InputFile)
    /// An input file became this many items (`ItemExpansion`: seats, report windows), each
    /// finishing on its own.
    case itemSplit(InputFile, parts: Int)
    case itemFinished(ItemResult)
    case warning(String)
}

/// Receives run events (the command line's progress line, reports).
public protocol RunObserver: Sendable {
    func handle(_ event: RunEvent)
}

/// Settings of one run.
public struct RunOptions: Sendable {
    public var outputDirectory: URL
    /// Items processed at once.
    public var jobs: Int
    /// Where finished items are recorded and looked up; nil runs every item and records none.
    public var ledger: Ledger?
    /// Redo items the ledger says are done.
    public var force: Bool
    /// Fail an item a stage warned about (a truncated file) instead of finishing it.
    public var strict: Bool

    /// Whether an item runs or is skipped, and why: what `run` does and `--dry-run` prints.
    public func decision(for item: InputFile) -> Ledger.Decision {
        if force { return .run(reason: "--force") }
        return ledger?.decide(item) ?? .run(reason: "no ledger")
    }

    public init(outputDirectory: URL, jobs: Int, ledger: Ledger? = nil, force: Bool = false, strict: Bool = false) {
        self.outputDirectory = outputDirectory
        self.jobs = max(1, jobs)
        self.ledger = ledger
        self.force = force
        self.strict = strict
    }
}

/// Streams every item through a plan, `jobs` items at once. One bad item fails alone.
public struct Runner: Sendable {
    public let plan: Plan
    let stages: [any StageRunner]
    public let options: RunOptions
    let logger: Logger
    /// Where the ledger decides, hashes an input (a large upload takes a while, or its prefetch is
    /// waited for) and records, and where outputs are committed: off the cooperative pool.
    var blocking = BlockingExecutor()

    /// Creates every stage instance of the plan and runs each `prepare()`; throws the first
    /// failure (a missing model is `VoxError(.unavailable)`, exit 69). With `prepareStages` off
    /// (a run whose every item will be skipped) no stage prepares, so no model loads.
    public static func prepare(
        _ plan: Plan, options: RunOptions, context: StageContext, prepareStages: Bool = true
    ) async throws -> Runner {
        var stages: [any StageRunner] = []
        let lookbacks = plan.lookbacks
        let planned = plan.plannedStages
        for node in plan.nodes {
            do {
                var nodeContext = context
                nodeContext.lookback = lookbacks[node.index]
                nodeContext.provenance.stages = planned
                nodeContext.upstream = node.parents.map { planned[$0] }
                let stage = try node.stage.instantiate(id: node.id, context: nodeContext)
                if prepareStages { try await stage.prepare() }
                stages.append(stage)
            } catch {
                // Any module's error keeps its category (a model that will not load is
                // unavailable, an output that cannot be made is cannotCreate); one that would
                // blame an item, or an error of no category, means what the stage needs is not
                // there: exit 69. The stage goes into the context.
                guard let error = error as? any CategorizedError else {
                    throw VoxError(.unavailable, describe(error)).within(stage: node.id, kind: node.kind.kind)
                }
                let category: VoxFailure =
                    switch error.category {
                    case .badInput, .upstream, .internal: .unavailable
                    default: error.category
                    }
                throw VoxError(category, error.message).within(stage: node.id, kind: node.kind.kind)
            }
        }
        return Runner(
            plan: plan, stages: stages, options: options, logger: context.logger, blocking: context.blocking)
    }

    /// Runs every item and returns their results in input order. Once an item fails because the
    /// output takes nothing more (`VoxFailure.outputFull`), no other item starts: the results
    /// then hold only the items that ran (`outputFull(in:)` finds why). An item whose output
    /// folder would be another item's output (`Plan.outputCollisions`, over `listing`: the whole
    /// input listing when `items` are one shard of it) fails before it runs, whatever ran first.
    public func run(
        _ items: [InputFile], listing: [InputFile]? = nil, observer: (any RunObserver)? = nil
    ) async -> [ItemResult] {
        observer?.handle(.started(total: items.count))
        let collisions = plan.outputCollisions(among: listing ?? items)
        var perItem = [[ItemResult]?](repeating: nil, count: items.count)
        await withTaskGroup(of: (Int, [ItemResult]).self) { group in
            var next = 0
            var full = false
            func startNext() {
                guard next < items.count, !Task.isCancelled, !full else { return }
                let index = next
                next += 1
                observer?.handle(.itemStarted(items[index]))
                let collision = collisions[items[index].outputName]
                group.addTask {
                    (index, await processSplitting(items[index], collision: collision, observer: observer))
                }
            }
            for _ in 0..<min(options.jobs, items.count) { startNext() }
            while let (index, itemResults) = await group.next() {
                perItem[index] = itemResults
                full = full || Self.outputFull(in: itemResults) != nil
                startNext()
            }
        }
        // An item that failed early may leave its input still being hashed in the background.
        await options.ledger?.digests.prefetchesEnded()
        return perItem.compactMap { $0 }.flatMap { $0 }
    }

    /// Runs a file: each item it becomes in turn when a stage declares the item-expansion role
    /// and makes it several (or a part), else the file itself. A file that cannot be expanded
    /// fails at that stage; one whose output folder collides with another item's output fails
    /// with `collision` as its reason, before anything is read.
    func processSplitting(
        _ item: InputFile, collision: String? = nil, observer: (any RunObserver)?
    ) async -> [ItemResult] {
        if let collision {
            let result = ItemResult(
                item: item, status: .failed,
                failure: Self.failure(VoxError(.usage, collision), stage: "output", kind: "folder", item: item))
            observer?.handle(.itemFinished(result))
            return [result]
        }
        let parts: [InputFile]
        do {
            // A sidecar is read and a header probed (ffprobe, for some): off the cooperative pool.
            let plan = plan
            parts = try await blocking.run { try plan.expand(item) }
        } catch {
            // Only the stage declaring the expansion expands, so only it can have thrown.
            let node = plan.expansionNode ?? plan.nodes[0]
            let result = ItemResult(item: item, status: .failed, failure: Self.failure(error, node: node, item: item))
            observer?.handle(.itemFinished(result))
            return [result]
        }
        if parts.count != 1 || parts.first?.part != nil {
            observer?.handle(.itemSplit(item, parts: parts.count))
        }
        var results: [ItemResult] = []
        for part in parts {
            guard !Task.isCancelled else { break }
            let result = await process(part)
            for warning in result.warnings {
                let names = (part.part?.names ?? []).map { "#" + $0 }.joined()
                observer?.handle(.warning("\(part.url.path)\(names): \(warning)"))
            }
            observer?.handle(.itemFinished(result))
            results.append(result)
        }
        return results
    }

    /// The first failure that left the output unable to take more (a full disk), if any.
    public static func outputFull(in results: [ItemResult]) -> StageFailure? {
        results.lazy.compactMap(\.failure).first { $0.category == .outputFull }
    }

    /// Why a skipped item was skipped.
    public static func skipReason(_ manifest: ItemManifest) -> String {
        manifest.pruned.map { "done before, outputs pruned \($0)" } ?? "done before, outputs intact"
    }

    /// Runs one item through every stage, each in its own task, commits its outputs only when
    /// all succeeded, then records it in the ledger. Skips it when the ledger says it is done.
    public func process(_ item: InputFile) async -> ItemResult {
        let started = ContinuousClock.now
        let startDate = Date()
        let outputs = ItemOutputs(root: options.outputDirectory, folderName: item.outputName)
        // The ledger's look at the item's folder and manifest reads files: off the cooperative pool.
        let options = options
        let decision: Ledger.Decision
        let previous: ItemManifest?
        do {
            (decision, previous) = try await blocking.run { () -> (Ledger.Decision, ItemManifest?) in
                // A killed run may have left temporary files here; none of them is ours.
                Ledger.removeTemporaries(in: outputs.folder)
                let decision = options.decision(for: item)
                guard case .run = decision, let ledger = options.ledger else { return (decision, nil) }
                let previous = ledger.readManifest(for: item)
                // The ledger will need the input's hash unless the manifest still vouches for it.
                if let stat = Ledger.fileStat(item.url),
                    previous.map({ $0.input.bytes != stat.bytes || $0.input.modified != stat.modified }) ?? true
                {
                    ledger.digests.prefetch(item.url)
                }
                return (decision, previous)
            }
        } catch {
            // Cancelled before the item began (the job throws nothing else).
            var failure = Self.failure(error, stage: "input", kind: "ledger", item: item)
            failure.reason = "interrupted"
            return ItemResult(item: item, status: .failed, failure: failure)
        }
        let reason: String
        switch decision {
        case .skip(let manifest):
            let artifacts = manifest.artifacts.map { Artifact(path: $0.path, bytes: $0.bytes, sha256: $0.sha256) }
            return ItemResult(
                item: item, status: .skipped, reason: Self.skipReason(manifest), artifacts: artifacts,
                audioSeconds: manifest.audioSeconds, speakers: manifest.speakers)
        case .run(let why):
            reason = why
        }
        var itemLogger = logger
        itemLogger[metadataKey: "item.path"] = .string(item.displayName)
        let context = ItemContext(item: item, outputs: outputs, logger: itemLogger)
        let collector = ArtifactCollector()
        let elapsed: @Sendable () -> Double = {
            let d = ContinuousClock.now - started
            return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        }
        do {
            let root = plan.nodes.first { $0.parents.isEmpty } ?? plan.nodes[0]
            try await drive(item, into: root.index, context: context, sink: collector)
            try Task.checkCancellation()
            let warnings = context.facts.warnings
            if options.strict, let first = warnings.first {
                throw StageFailure(
                    stageID: first.stage, kind: first.kind, reason: "\(first.message) (strict)", category: .badInput)
            }
            // Hashing, renaming into place and writing the manifest (each flushed to disk) block:
            // off the cooperative pool, as one job.
            let artifacts = collector.artifacts
            let audioSeconds = context.facts[.audioSeconds]
            let speakers = context.facts[.speakerTalk]?.report
            try await blocking.run {
                // Hash the input before the outputs go into place: a file that changed under us is
                // then recorded as what was read, at worst.
                let input = try options.ledger.map { try $0.inputRecord(for: item, previous: previous?.input) }
                try outputs.commit()
                if let ledger = options.ledger, let input {
                    try ledger.record(
                        item, input: input, artifacts: artifacts, started: startDate, seconds: elapsed(),
                        audioSeconds: audioSeconds, warnings: warnings, speakers: speakers)
                    // Only now that the new manifest stands: what the old one listed and the new one
                    // does not (turn-0004… of a longer earlier run) goes.
                    if let previous { ledger.removeOutputs(of: previous, notIn: artifacts, item: item) }
                }
            }
            return ItemResult(
                item: item, status: .done, reason: reason, artifacts: collector.artifacts, seconds: elapsed(),
                audioSeconds: context.facts[.audioSeconds], warnings: warnings, speakers: speakers)
        } catch {
            outputs.discard()
            var failure = Self.failure(error, stage: "output", kind: "commit", item: item)
            if Task.isCancelled { failure.reason = "interrupted" }
            return ItemResult(
                item: item, status: .failed, failure: failure, seconds: elapsed(),
                audioSeconds: context.facts[.audioSeconds])
        }
    }

    /// Runs one value through part of the plan, for a server answering one request with the stages
    /// a batch run uses (and the engines they loaded once): `value` goes to the input of the stage
    /// with id `stageID`, and that stage and every stage it feeds, directly or not, run as in
    /// `process`. Every value any of them gives goes to `sink`. Nothing is committed or recorded:
    /// the caller owns `context.outputs`. Throws the first stage's failure (a `StageFailure`).
    public func respond(
        to value: any Payload, at stageID: String, context: ItemContext, sink: any OutputSink
    ) async throws {
        guard let start = plan.stage(stageID) else {
            throw VoxError(.internal, "the plan has no stage '\(stageID)' to answer at")
        }
        guard start.kind.inputs.contains(where: { type(of: value).payloadType.carries($0) }) else {
            throw VoxError(
                .internal,
                "stage '\(stageID)' takes \(start.kind.inputDescription), not \(type(of: value).payloadType)")
        }
        try await context.request.applied {
            try await drive(value, into: start.index, context: context, sink: sink)
        }
    }

    /// Feeds `value` to stage `start` and runs it and its descendants, each in its own task, until
    /// all have ended. The first failure ends the item: the failed stage's inbox and outputs fail
    /// and every other stage is cancelled, so no stage is left waiting on one that has died.
    func drive(_ value: any Payload, into start: Int, context: ItemContext, sink: any OutputSink) async throws {
        // A file fed to the stage declaring the item-expansion role: what holds for the item is
        // learnt first, and failing to learn it fails the item at that stage.
        if let file = value as? InputFile, let node = plan.expansionNode, node.index == start {
            do {
                try node.declarations[.itemExpansion]?.learnFacts(of: file, into: context.facts, logger: context.logger)
            } catch {
                throw Self.failure(error, node: node, item: context.item)
            }
        }
        let active = plan.descendants(of: start)
        try await withThrowingTaskGroup(of: Void.self) { group in
            let inboxes = plan.nodes.map { _ in PayloadChannel() }
            // An inbox fed by several stages ends when the last of them that runs ends.
            let producers = ProducerCount(
                plan.nodes.map { $0.index == start ? 1 : max(1, $0.parents.filter(active.contains).count) })
            for node in plan.nodes where active.contains(node.index) {
                let stage = stages[node.index]
                let inbox = inboxes[node.index]
                let downstream = node.children.map { inboxes[$0] }
                group.addTask {
                    do {
                        try await stage.run(input: inbox, output: downstream, sink: sink, item: context)
                        for child in node.children where producers.finished(child) { inboxes[child].finish() }
                        // A stage that stopped reading early must not leave its producer waiting.
                        for try await _ in inbox {}
                    } catch {
                        let failure = Self.failure(error, node: node, item: context.item)
                        // A stage that has ended reads nothing more: a producer waiting to send
                        // to it is released (and its later sends return at once).
                        inbox.fail(failure)
                        for channel in downstream { channel.fail(failure) }
                        throw failure
                    }
                }
            }
            group.addTask {
                await inboxes[start].send(value)
                inboxes[start].finish()
            }
            // Not `waitForAll()`: it waits for every task before it throws, and a stage upstream
            // of a dead writer may be blocked in a send. Throwing out of the group on the first
            // failure cancels the others (a channel send or receive returns on cancellation).
            for try await _ in group {}
        }
    }

    static func failure(_ error: any Error, node: Plan.Node, item: InputFile) -> StageFailure {
        failure(error, stage: node.id, kind: node.kind.kind, item: item)
    }

    /// The one place a stage's error (or the commit's, as stage `output`) becomes an item's
    /// failure: its reason is the error's text as thrown, and the module's error is kept with the
    /// stage and item filled in its context. A `StageFailure` from a stage downstream passes as is.
    static func failure(_ error: any Error, stage id: String, kind: String, item: InputFile) -> StageFailure {
        if let failure = error as? StageFailure { return failure }
        if error is CancellationError { return StageFailure(stageID: id, kind: kind, reason: "cancelled") }
        return StageFailure(
            stageID: id, kind: kind, reason: describe(error),
            error: (error as? any CategorizedError)?.within(stage: id, kind: kind, item: item.displayName))
    }
}

/// How many stages still feed each inbox.
final class ProducerCount: Sendable {
    private let remaining: Mutex<[Int]>

    init(_ counts: [Int]) { remaining = Mutex(counts) }

    /// One producer of `index` ended; true when it was the last.
    func finished(_ index: Int) -> Bool {
        remaining.withLock { remaining in
            remaining[index] -= 1
            return remaining[index] == 0
        }
    }
}

/// Collects what terminal stages give; artifacts go into the item's result.
final class ArtifactCollector: OutputSink, Sendable {
    private let collected = Mutex<[Artifact]>([])

    func collect(_ payload: any Payload) {
        if let artifact = payload as? Artifact { collected.withLock { $0.append(artifact) } }
    }

    var artifacts: [Artifact] { collected.withLock { $0 } }
}
