import VoxCore

/// Why resampling failed: an engine error (libsoxr or libsamplerate's own text) or a stream it
/// cannot take.
public typealias ResampleError = ModuleError<ResampleFailure>

public enum ResampleFailure: FailureCode {
    case engine, unsupported

    /// Both are about the stream one item gave.
    public var category: VoxFailure { .badInput }
}
