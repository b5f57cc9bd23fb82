import Foundation

/// A fact about an item that one stage learns while it runs and other stages record. Stages
/// declare which they give (`Stage.factsGiven`) and which they use (`Stage.factsUsed`); the
/// planner checks that every fact a stage uses is given by a stage upstream of it, so the
/// coupling is in the declarations and checked when the spec loads, not hidden in the code.
public enum ItemFact: String, Sendable, CaseIterable {
    /// The source file's own rate and channel count.
    case sourceFormat
    /// The audio's length in seconds (also what the runner reports and the ledger keeps), and
    /// where decode cut it when the sidecar's `maxDurationMinutes` is shorter (`cutAt`).
    case audioSeconds
    /// The upload's sidecar fields (a moderation report, a voice session), when it has one.
    case report
}

/// The facts the runner keeps for one item (`ItemContext.facts`): set by the stage that gives
/// each before it sends anything downstream, read by stages that use them, and by the runner
/// (the audio length for reports and the ledger). Each is set at most once per item.
public final class ItemFacts: @unchecked Sendable {
    private let lock = NSLock()
    private var _audioSeconds: Double?
    private var _report: [String: JSONValue]?
    private var _sourceFormat: AudioFormat?
    private var _cutAt: Double?
    private var _warnings: [ItemWarning] = []

    public init() {}

    public var audioSeconds: Double? {
        get { lock.withLock { _audioSeconds } }
        set { lock.withLock { _audioSeconds = newValue } }
    }

    /// The report sidecar's fields (every one it has), when the upload has one.
    public var report: [String: JSONValue]? {
        get { lock.withLock { _report } }
        set { lock.withLock { _report = newValue } }
    }

    /// Where decode stopped because the sidecar's `maxDurationMinutes` ended the session.
    public var cutAt: Double? {
        get { lock.withLock { _cutAt } }
        set { lock.withLock { _cutAt = newValue } }
    }

    /// What stages noticed about the item without failing it, in the order noticed.
    public var warnings: [ItemWarning] { lock.withLock { _warnings } }

    /// Records a warning: the runner prints it, and it goes into the report and the manifest;
    /// with `--strict` (or the spec's `"strict": true`) it fails the item.
    public func warn(_ warning: ItemWarning) { lock.withLock { _warnings.append(warning) } }

    public var sourceFormat: AudioFormat? {
        get { lock.withLock { _sourceFormat } }
        set { lock.withLock { _sourceFormat = newValue } }
    }
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
