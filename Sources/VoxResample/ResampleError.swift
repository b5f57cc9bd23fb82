/// Why resampling failed: an engine error (libsoxr or libsamplerate's own text) or a stream it
/// cannot take.
public struct ResampleError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable { case engine, unsupported }
    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
