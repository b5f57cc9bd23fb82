/// Why a writer failed: the file it was writing and libsndfile's or the system's reason.
public struct WriteError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable { case cannotCreate, writeFailed, unsupported }
    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
