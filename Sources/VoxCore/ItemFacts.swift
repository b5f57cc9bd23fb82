import Foundation
import Synchronization

/// An item fact's typed key: `facts[.sourceFormat]` is an `AudioFormat?`. Keys for facts several
/// stage modules share are declared in VoxCore, or in the domain module they belong to
/// (`.moderationReport` in VoxModeration, `.session` in VoxFieldService), which those stage
/// modules import; no stage module imports another.
public typealias ItemFactKey<Value: Sendable> = TypedKey<ItemFacts, Value>

/// A fact about an item that one stage learns while it runs and other stages record, named with
/// its type erased. Stages declare which they give (`Stage.factsGiven`) and which they use
/// (`Stage.factsUsed`); the planner checks that every fact a stage uses is given by a stage
/// upstream of it, so the coupling is in the declarations and checked when the spec loads, not
/// hidden in the code.
public typealias ItemFact = AnyTypedKey<ItemFacts>

extension ItemFactKey where Value == AudioFormat {
    /// The source file's own rate and channel count.
    public static var sourceFormat: Self { Self("sourceFormat") }
}

extension ItemFactKey where Value == Double {
    /// The audio's length in seconds (also what the runner reports and the ledger keeps).
    public static var audioSeconds: Self { Self("audioSeconds") }
    /// Where decode cut the audio because the item's `lengthLimit` ended it, in seconds: given
    /// with `audioSeconds`, when the audio was cut.
    public static var cutAt: Self { Self("cutAt") }
    /// How long the item's audio may be, in seconds (a voice session's `maxDurationMinutes`):
    /// what lies past it is not decoded. Learnt before any stage runs (`ItemExpansion.learnFacts`).
    public static var lengthLimit: Self { Self("lengthLimit") }
}

/// The facts the runner keeps for one item (`ItemContext.facts`), by typed key: set by the stage
/// that gives each before it sends anything downstream, read by stages that use them, and by the
/// runner (the audio length for reports and the ledger).
public final class ItemFacts: Sendable {
    private struct State {
        var values = TypedValues<ItemFacts>()
        var warnings: [ItemWarning] = []
    }
    private let state = Mutex(State())

    public init() {}

    /// The fact `key` names, when a stage has given it.
    public subscript<Value>(_ key: ItemFactKey<Value>) -> Value? {
        get { state.withLock { $0.values[key] } }
        set { state.withLock { $0.values[key] = newValue } }
    }

    /// What stages noticed about the item without failing it, in the order noticed.
    public var warnings: [ItemWarning] { state.withLock { $0.warnings } }

    /// Records a warning: the runner prints it, and it goes into the report and the manifest;
    /// with `--strict` (or the spec's `"strict": true`) it fails the item.
    public func warn(_ warning: ItemWarning) { state.withLock { $0.warnings.append(warning) } }
}

/// Something a stage noticed about an item that did not fail it, as a truncated file: the stage,
/// what it noticed and, for a truncated file, the frames its header promised and the frames it
/// held. In a report line and a manifest: `{"stage", "kind", "message", "framesPromised",
/// "framesFound"}`.
public struct ItemWarning: Codable, Sendable, Equatable, CustomStringConvertible {
    public var stage: String
    public var kind: String
    public var message: String
    public var framesPromised: Int64?
    public var framesFound: Int64?

    public init(stage: String, kind: String, message: String, framesPromised: Int64? = nil, framesFound: Int64? = nil) {
        self.stage = stage
        self.kind = kind
        self.message = message
        self.framesPromised = framesPromised
        self.framesFound = framesFound
    }

    /// `<stage id> (<kind>): <message>`, as a failure reads.
    public var description: String { "\(stage) (\(kind)): \(message)" }
}
