import VoxCore

/// Why a file could not be decoded. The runner prefixes it with the file and the stage.
public typealias DecodeError = ModuleError<DecodeFailure>

public enum DecodeFailure: FailureCode {
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
    /// The input's report sidecar (`X.json` beside `X.<ext>`) is missing, unreadable or not a
    /// report.
    case badSidecar

    /// Every case is about one input file: that item fails, the batch goes on.
    public var category: VoxFailure { .badInput }
}
