/// Why transcription failed: a model that cannot be loaded (at prepare) or a decode error.
public struct TranscribeError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable { case modelUnavailable, decodeFailed }
    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
