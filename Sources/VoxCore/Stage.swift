import Foundation
import Logging

/// A stage kind: a type that states what it takes and gives, how it is configured from a spec,
/// what it checks before data flows, and how it processes one item's stream.
///
/// The runner creates one instance per stage of a spec per run (so heavy engines load once),
/// calls `prepare()` once, then `run` once per item, several items at once.
public protocol Stage: Sendable {
    /// What the stage reads: a payload type, or a type that accepts several.
    associatedtype Input: StageInput
    /// What the stage writes on its output channel.
    associatedtype Output: Payload
    /// The stage's settings, read from the spec by `configure`.
    associatedtype Configuration: Sendable

    /// The spec's `kind` string (lowercase with dashes).
    static var kind: String { get }
    /// One line for `voxpipe stages`.
    static var summary: String { get }
    /// The spec options this kind accepts.
    static var options: [OptionSpec] { get }

    /// Reads the configuration from validated options; throws `VoxError(.invalidSpec)` for values
    /// that are valid JSON but do not make sense together.
    static func configure(_ options: StageOptions) throws -> Configuration

    /// The format of the stream this stage gives, from the one it takes; throws a `PlanError`
    /// when it cannot take that format. The default passes the format through.
    static func outputFormat(_ configuration: Configuration, input: StreamFormat) throws -> StreamFormat

    /// The names of the files this stage writes in an item's folder (`audio.wav`,
    /// `turn-NNNN.wav`), for `--dry-run`; empty for stages that write none.
    static func plannedOutputs(_ configuration: Configuration, id: String, input: PayloadType) -> [String]

    /// How much of its input stream the stage needs (a tail chunker only the last N seconds),
    /// so the decoder can seek instead of decoding what nothing will use.
    static func demand(_ configuration: Configuration) -> StreamDemand

    /// Files whose content decides what the stage gives, though no path option names them (a
    /// model resolved from a short name): hashed into every item's key, so a changed file redoes
    /// the items. The default is none.
    static func identityFiles(_ configuration: Configuration) -> [URL]

    /// What the stage contributes to an item's provenance — engine, quality, model, library
    /// versions — as a JSON object. The plan collects every stage's (`Plan.plannedStages`) and hands
    /// them to stages that keep records (`StageContext.provenance`), so a recorder never reads
    /// another stage's options. The default contributes nothing.
    static func provenance(_ configuration: Configuration) -> [String: JSONValue]?

    /// What the stage declares about itself, typed, for the stages it feeds and the records a run
    /// keeps: an agent its record types (`.recordTypes`), a resampler the format it gives
    /// (`.resampling`), a stage reading uploads the items each becomes (`.itemExpansion`). The plan
    /// hands each stage the declarations of the stages it reads from
    /// (`StageContext.upstream`) and every stage's (`Provenance.stages`), so no stage looks
    /// another up by kind string. The default declares nothing.
    static func declarations(_ configuration: Configuration) -> StageDeclarations

    /// What this stage needs declared by every stage it reads from (`write-records`: their
    /// `.recordTypes`); the planner checks each does, and names the `from` edge when one does not.
    /// The default is none.
    static var declarationsUsed: [StageDeclaration] { get }

    /// For a first stage: the file extensions it reads, which decide what folders given as INPUT
    /// are searched for. The default is audio (`InputListing.audioExtensions`).
    static var inputExtensions: Set<String> { get }

    /// The configuration that takes one request of up to `maxSeconds` as one turn, for a server
    /// answering requests with the plan (`Plan.servingOneTurn`): a chunker gives the whole clip
    /// as one chunk (the client already cut it). The default keeps the configuration.
    static func oneTurn(_ configuration: Configuration, maxSeconds: Double) -> Configuration

    /// The item facts this stage learns and sets (`ItemContext.facts`). The default is none.
    static var factsGiven: [ItemFact] { get }
    /// The item facts this stage reads; the planner checks a stage upstream gives each.
    static var factsUsed: [ItemFact] { get }

    init(id: String, configuration: Configuration, context: StageContext) throws

    /// Checks resources before any data flows: files present, engines loadable, endpoints
    /// reachable. Throws `VoxError(.unavailable)` with the reason.
    func prepare() async throws

    /// Processes one item: reads `input` until it ends, writes `output`, and flushes what it
    /// holds at the end of input. Throwing fails this item only.
    func run(_ input: Inbox<Input>, _ output: Outbox<Output>, _ item: ItemContext) async throws
}

extension Stage {
    public static func outputFormat(_ configuration: Configuration, input: StreamFormat) throws -> StreamFormat {
        input
    }
    public func prepare() async throws {}
    public static func plannedOutputs(_ configuration: Configuration, id: String, input: PayloadType) -> [String] { [] }
    public static func demand(_ configuration: Configuration) -> StreamDemand { .whole }
    public static func identityFiles(_ configuration: Configuration) -> [URL] { [] }
    public static func provenance(_ configuration: Configuration) -> [String: JSONValue]? { nil }
    public static func declarations(_ configuration: Configuration) -> StageDeclarations { StageDeclarations() }
    public static var declarationsUsed: [StageDeclaration] { [] }
    public static var inputExtensions: Set<String> { InputListing.audioExtensions }
    public static func oneTurn(_ configuration: Configuration, maxSeconds: Double) -> Configuration { configuration }
    public static var factsGiven: [ItemFact] { [] }
    public static var factsUsed: [ItemFact] { [] }
}

/// How much of a stream a stage needs.
public enum StreamDemand: Sendable, Equatable {
    /// All of it.
    case whole
    /// Only the last `seconds`.
    case tail(Double)
    /// What the stages it feeds need (a resampler).
    case passThrough
}

/// A type a stage can take as input: one payload type, or an enum over several (a WAV writer
/// takes blocks, chunks or speech).
public protocol StageInput: Sendable {
    /// The payload types accepted, in order of preference.
    static var accepted: [PayloadType] { get }
    /// Picks the accepted value out of a payload; nil when the payload carries none.
    init?(payload: any Payload)
}

extension StageInput where Self: Payload {
    public static var accepted: [PayloadType] { [payloadType] }
    public init?(payload: any Payload) {
        guard let value = payload.carried(Self.self) else { return nil }
        self = value
    }
}

extension InputFile: StageInput {}
extension AudioBlock: StageInput {}
extension AudioChunk: StageInput {}
extension Transcript: StageInput {}
extension Reply: StageInput {}
extension Speech: StageInput {}
extension Artifact: StageInput {}

/// What the planner knows about the audio on an edge: a fixed rate and channel count, or "as the
/// source" (nil) until a stage fixes it.
public struct StreamFormat: Sendable, Equatable, CustomStringConvertible {
    public var sampleRate: Int?
    public var channels: Int?

    public init(sampleRate: Int? = nil, channels: Int? = nil) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    public static let source = StreamFormat()

    public var description: String {
        let rate = sampleRate.map { $0 % 1000 == 0 ? "\($0 / 1000) kHz" : "\($0) Hz" } ?? "source rate"
        let ch: String
        switch channels {
        case nil: ch = "source channels"
        case 1: ch = "mono"
        case 2: ch = "stereo"
        case let n?: ch = "\(n) ch"
        }
        return "\(rate) \(ch)"
    }
}

/// Thrown by `Stage.outputFormat` when a stage cannot take the format it would be fed.
public struct PlanError: Error, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
}

/// What every stage instance gets at creation: dependencies come through here, not globals.
public struct StageContext: Sendable {
    public var logger: Logger
    /// Sample-rate conversion for stages that need it without being resamplers.
    public var rateConversion: (any RateConversion)?
    /// Set by the runner for a stage whose output only matters in its last N seconds.
    public var lookback: Double?
    /// What stages that keep records (write-evidence) record about how the run was made.
    public var provenance: Provenance
    /// The stages this one reads from (its `from` edges), in that order, each with what it
    /// declares: set by the runner from the plan, which checked `Stage.declarationsUsed` on them.
    public var upstream: [PlannedStage] = []
    /// File digests computed in this run, shared by every stage and the ledger.
    public var digests: DigestCache
    /// Whether HTTP providers record or replay their exchanges.
    public var recording: ExchangeRecording?
    /// How HTTP providers reach their servers: nil is libcurl; tests pass a scripted one.
    public var httpTransport: (any HTTPTransport)?
    /// What waits (retries, rate limits) go by.
    public var clock: any VoxClock = SystemClock()
    /// Heavy engines (models) shared by every stage instance of the run, loaded once.
    public var engines = EngineCache()
    /// Where stages run blocking work (C engine calls, child processes): off the cooperative
    /// pool, stopped when the item's task is cancelled.
    public var blocking = BlockingExecutor()
    /// Where CPU-bound engines read how many cores they may use (affinity, cgroup quota) and
    /// their cgroup's CPU pressure: this process's files; a test passes a machine's texts.
    public var cpu = CPUReader()
    /// The keys in use: providers register the keys they load, writers redact what they write.
    /// The command line passes its process-wide registry; a test's context has one of its own.
    public var secrets = Secrets()

    public init(
        logger: Logger, rateConversion: (any RateConversion)? = nil, lookback: Double? = nil,
        provenance: Provenance = Provenance(), digests: DigestCache = DigestCache()
    ) {
        self.logger = logger
        self.rateConversion = rateConversion
        self.lookback = lookback
        self.provenance = provenance
        self.digests = digests
    }
}

/// How a run was made, for records that must say so (evidence): the spec and its fingerprint,
/// the software's versions, and every stage of the plan with what it declared (`Stage.provenance`
/// and `Stage.declarations`, collected by the plan; the runner fills `stages` in).
public struct Provenance: Sendable {
    /// The spec as loaded (canonical form) and its fingerprint (part of every item key).
    public var spec: JSONValue?
    public var specFingerprint: String?
    /// Versions by name: voxpipe and its libraries.
    public var software: [String: String]
    /// Every stage of the plan, in plan order.
    public var stages: [PlannedStage]

    public init(
        spec: JSONValue? = nil, specFingerprint: String? = nil, software: [String: String] = [:],
        stages: [PlannedStage] = []
    ) {
        self.spec = spec
        self.specFingerprint = specFingerprint
        self.software = software
        self.stages = stages
    }

    /// The provenance records of the stages that contribute one, in plan order, each with its
    /// `id` and `kind`.
    public var records: [JSONValue] { stages.compactMap(\.record) }

    /// The provenance records of the stages that declare `key` (evidence: the stages in the
    /// `.resampling` role), in plan order.
    public func records<Value>(declaring key: StageDeclarationKey<Value>) -> [JSONValue] {
        stages.filter { $0.declarations.declares(key.erased) }.compactMap(\.record)
    }
}

/// What a stage gets for one item: the input file, where its outputs go, and a logger with the
/// item's metadata.
public struct ItemContext: Sendable {
    public var item: InputFile
    public var outputs: ItemOutputs
    public var logger: Logger
    /// Facts stages learn about the item (decode: its format and length; the item expansion: its
    /// report), for the runner and for stages that record them.
    public var facts: ItemFacts
    /// What a served request asks of the item's stages (`RequestValues`, typed keys declared
    /// in VoxRequest: the conversation the turn continues, voice, speed, language, a client's
    /// key); empty in a batch run. The runner makes them `RequestValues.current` for the item's
    /// stages.
    public var request: RequestValues

    public init(
        item: InputFile, outputs: ItemOutputs, logger: Logger, facts: ItemFacts = ItemFacts(),
        request: RequestValues = RequestValues()
    ) {
        self.item = item
        self.outputs = outputs
        self.logger = logger
        self.facts = facts
        self.request = request
    }
}

/// `voxpipe run --http-record DIR` or `--http-replay DIR`: HTTP providers store every exchange
/// (secrets stripped) or answer from what was stored.
public enum ExchangeRecording: Sendable, Equatable {
    case record(URL)
    case replay(URL)
}
