import VoxCore

/// Why a writer failed: the file it was writing and libsndfile's or the system's reason.
public typealias WriteError = ModuleError<WriteFailure>

public enum WriteFailure: FailureCode {
    case cannotCreate, writeFailed, unsupported
    /// The output's file system takes nothing more (full, over quota, read-only).
    case outputFull
    /// Audio must change rate and the caller gave no rate converter (a bug).
    case noRateConverter

    public var category: VoxFailure {
        switch self {
        case .cannotCreate, .writeFailed: .cannotCreate
        case .outputFull: .outputFull
        case .unsupported: .badInput
        case .noRateConverter: .internal
        }
    }
}
