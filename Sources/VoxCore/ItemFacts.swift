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

    public var sourceFormat: AudioFormat? {
        get { lock.withLock { _sourceFormat } }
        set { lock.withLock { _sourceFormat = newValue } }
    }
}
