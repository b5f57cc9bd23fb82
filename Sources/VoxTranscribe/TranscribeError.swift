import VoxCore

/// Why transcription failed: a model that cannot be loaded (at prepare) or a decode error.
public typealias TranscribeError = ModuleError<TranscribeFailure>

public enum TranscribeFailure: FailureCode {
    case modelUnavailable, decodeFailed

    public var category: VoxFailure {
        switch self {
        case .modelUnavailable: .unavailable
        case .decodeFailed: .badInput
        }
    }
}
