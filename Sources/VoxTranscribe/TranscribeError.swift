import VoxCore

/// Why transcription failed: a model that cannot be loaded (at prepare) or a decode error.
public typealias TranscribeError = ModuleError<TranscribeFailure>

public enum TranscribeFailure: FailureCode {
    /// A model that is missing, will not load, or cannot do what the spec asks.
    case modelUnavailable
    /// A runtime built for instructions this CPU lacks.
    case runtimeUnavailable
    /// The engine failed on one item's audio.
    case decodeFailed

    public var category: VoxFailure {
        switch self {
        case .modelUnavailable, .runtimeUnavailable: .unavailable
        case .decodeFailed: .badInput
        }
    }
}
