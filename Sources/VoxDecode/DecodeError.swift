/// Why a file could not be decoded. The runner prefixes it with the file and the stage.
public struct DecodeError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable {
        /// The file is empty, unreadable, or in no format any decoder here reads.
        case unreadable
        /// The header declares something out of bounds (channels, rate, length).
        case outOfBounds
        /// Reading failed part-way.
        case readFailed
        /// libsndfile cannot read the format and ffmpeg is not installed.
        case needsFFmpeg
        /// ffmpeg was tried and failed.
        case ffmpegFailed
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
