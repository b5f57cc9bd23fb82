import Foundation
import Logging
import VoxCore
import VoxDecode
import VoxResample

/// Every stage kind voxpipe knows, as a registry.
public func voxpipeRegistry() -> StageRegistry { StageRegistry(voxpipeStageKinds) }

/// One batch: a checked plan run over input files and folders into an output folder, with its
/// ledger, lock and stages. What `voxpipe run`, `check`, `run --check` and check's hearing of
/// spoken outputs all run, each with its own observer; the results come back typed.
///
///     let batch = try BatchRun(plan: plan, inputs: ["lessons/"], outputDirectory: out, version: v)
///     let prepared = try await batch.prepare()     // the lock, and the stages' models
///     let result = await prepared.run(observer: nil)
///
/// Made in three steps so a caller can act between them: `--dry-run` stops after the first, and
/// `voxpipe run` installs its signal handling around the last (a cancelled task starts no more
/// items and abandons the running ones cleanly).
public struct BatchRun: Sendable {
    public struct Options: Sendable {
        /// Items processed at once; nil: the cores this process may use (`CPUBudget`).
        public var jobs: Int?
        /// This shard of the inputs only; nil: all of them.
        public var shard: Shard?
        /// Redo items the ledger says are done.
        public var force = false
        /// Fail an item a stage warned about; the spec's `strict` does too.
        public var strict = false
        /// HTTP providers' exchanges recorded into, or answered from, a folder.
        public var recording: ExchangeRecording?

        public init(
            jobs: Int? = nil, shard: Shard? = nil, force: Bool = false, strict: Bool = false,
            recording: ExchangeRecording? = nil
        ) {
            self.jobs = jobs
            self.shard = shard
            self.force = force
            self.strict = strict
            self.recording = recording
        }
    }

    public let plan: Plan
    public let outputDirectory: URL
    /// Every input found (output names are decided over all of them, so every shard agrees).
    public let listing: InputListing.Listing
    /// The items of this shard (all of them without one).
    public let items: [InputFile]
    public let shard: Shard?
    public let runOptions: RunOptions
    public let context: StageContext
    private let fileDigests: FileDigestStore

    /// Lists the inputs (66: none found) and opens the ledger; writes nothing yet.
    public init(
        plan: Plan, inputs: [String], outputDirectory: URL, options: Options = Options(), version: String,
        logger: Logger = Logger(label: "voxpipe"), secrets: Secrets = Secrets()
    ) throws {
        guard !inputs.isEmpty else {
            throw VoxError(.noInput, "no INPUT given: name audio files or folders after the spec")
        }
        let outputDirectory = outputDirectory.standardizedFileURL
        let listing = try InputListing.list(inputs, outputDirectory: outputDirectory, extensions: plan.inputExtensions)
        guard !listing.items.isEmpty else {
            let what =
                plan.inputExtensions == InputListing.audioExtensions
                ? "audio files"
                : "input files (\(plan.inputExtensions.sorted().map { "." + $0 }.joined(separator: ", ")))"
            throw VoxError(.noInput, "no \(what) found in \(inputs.joined(separator: ", "))")
        }
        let digests = DigestCache()
        let fileDigests = FileDigestStore(url: FileDigestStore.userCache())
        let ledger = Ledger(
            outputDirectory: outputDirectory,
            fingerprint: Ledger.fingerprint(plan: plan, version: version, digests: fileDigests),
            version: version, digests: digests)
        var context = Self.context(
            plan: plan, fingerprint: ledger.fingerprint, version: version, logger: logger, digests: digests)
        context.secrets = secrets
        context.recording = options.recording
        self.plan = plan
        self.outputDirectory = outputDirectory
        self.listing = listing
        shard = options.shard
        items = options.shard.map { s in listing.items.filter { s.contains($0) } } ?? listing.items
        runOptions = RunOptions(
            outputDirectory: outputDirectory, jobs: options.jobs ?? CPUReader().budget().cores, ledger: ledger,
            force: options.force, strict: options.strict || plan.strict)
        self.context = context
        self.fileDigests = fileDigests
    }

    /// What every stage gets: the logger, libsoxr for rate conversion on the side, the spec and
    /// its fingerprint and the library versions for provenance.
    public static func context(
        plan: Plan, fingerprint: String, version: String, logger: Logger, digests: DigestCache = DigestCache()
    ) -> StageContext {
        let versions = ["voxpipe": version].merging(DecodeStage.libraryVersions) { a, _ in a }.merging(
            ResampleStage.libraryVersions
        ) { a, _ in a }
        return StageContext(
            logger: logger, rateConversion: SoxrRateConversion(),
            provenance: Provenance(
                spec: plan.spec, specFingerprint: fingerprint, software: versions, stages: plan.plannedStages),
            digests: digests)
    }

    /// Whether any item would run (an input that cannot be expanded fails, so it counts; one that
    /// expands to no items needs no stage).
    public var anyToRun: Bool {
        items.contains { file in
            guard let parts = try? plan.expand(file) else { return true }
            return parts.contains {
                if case .run = runOptions.decision(for: $0) { return true }
                return false
            }
        }
    }

    /// Creates the output folder (73 when it cannot be), takes its lock (75 when another run holds
    /// it) and prepares the stages: their models load only when some item will run.
    public func prepare() async throws -> PreparedBatch {
        do {
            try FileManager.default.createDirectory(at: outputDirectory, withIntermediateDirectories: true)
        } catch {
            throw VoxError(.cannotCreate, "cannot create output folder \(outputDirectory.path): \(describe(error))")
        }
        let lock = try OutputLock(outputDirectory: outputDirectory, shard: shard)
        let started = ContinuousClock.now
        let needsWork = anyToRun
        if !needsWork { context.logger.debug("every item is done already: no stage prepared, no model loaded") }
        let runner = try await Runner.prepare(plan, options: runOptions, context: context, prepareStages: needsWork)
        return PreparedBatch(batch: self, runner: runner, lock: lock, started: started)
    }

    /// Saves the per-user cache of input digests (what the ledger hashed).
    public func saveDigests() { fileDigests.save() }
}

/// A batch with its lock held and its stages prepared.
public struct PreparedBatch: Sendable {
    public let batch: BatchRun
    let runner: Runner
    let lock: OutputLock
    /// When preparing began: a run's seconds count its model loads.
    let started: ContinuousClock.Instant

    /// Runs every item of the batch; cancelling the calling task starts no more items and
    /// abandons the running ones (their temporary files removed).
    public func run(observer: (any RunObserver)? = nil) async -> BatchResult {
        let results = await runner.run(batch.items, listing: batch.listing.items, observer: observer)
        let elapsed = ContinuousClock.now - started
        batch.saveDigests()
        return withExtendedLifetime(lock) {
            BatchResult(
                results: results,
                seconds: Double(elapsed.components.seconds)
                    + Double(elapsed.components.attoseconds) / 1e18,
                unread: batch.listing.unread, planned: batch.items.count)
        }
    }
}

/// What a batch did: each item's result in input order, and how long it took.
public struct BatchResult: Sendable {
    public var results: [ItemResult]
    /// Wall-clock seconds of the run, from preparing its stages on.
    public var seconds: Double
    /// Entries under INPUT folders that were not read.
    public var unread: [InputListing.Unread]
    /// Items the batch had to run (with those the ledger skips): more than `results` hold when
    /// the run was cancelled or the output filled up.
    public var planned: Int

    public var failed: Bool { results.contains { $0.status == .failed } }

    /// Why no more items started, when the output takes nothing more.
    public var outputFull: StageFailure? { Runner.outputFull(in: results) }
}
