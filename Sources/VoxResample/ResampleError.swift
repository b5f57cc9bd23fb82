import VoxCore

/// Why resampling failed: an engine error (libsoxr or libsamplerate's own text) or a stream it
/// cannot take.
public typealias ResampleError = ModuleError<ResampleFailure>

public enum ResampleFailure: Sendable, Equatable { case engine, unsupported }
