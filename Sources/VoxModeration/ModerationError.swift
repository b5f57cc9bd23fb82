import VoxCore

/// Why a moderation upload could not become its items. The runner prefixes it with the file and
/// the stage that declared the expansion.
public typealias ModerationError = ModuleError<ModerationFailure>

public enum ModerationFailure: FailureCode {
    /// The upload's report sidecar (`X.json` beside `X.<ext>`) is missing, unreadable or not a
    /// report.
    case badSidecar
    /// The upload's header declares more channels than the stage allows.
    case outOfBounds
    /// No seat is the reported user's, or the report names no reported user.
    case noReportedSeat
    /// An item that should be a seat of its upload came whole (a stage run alone, not through
    /// the runner).
    case notExpanded

    /// Every case is about one upload: that item fails, the batch goes on.
    public var category: VoxFailure { .badInput }
}
