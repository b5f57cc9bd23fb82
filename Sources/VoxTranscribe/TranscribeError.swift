import VoxCore

/// Why transcription failed: a model that cannot be loaded (at prepare) or a decode error.
public typealias TranscribeError = ModuleError<TranscribeFailure>

public enum TranscribeFailure: Sendable, Equatable { case modelUnavailable, decodeFailed }
