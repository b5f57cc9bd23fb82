import Foundation
import VoxCore
import VoxFormats

/// What a WAV (RIFF or RF64) file's header promises: the frames of its `data` chunk
/// (`WAVData.Header.promisedFrames`), read from the file up to its first sample.
enum WAVHeader {
    /// The frames the header promises; nil when it is no WAV, or its data length is unknown
    /// (0xFFFFFFFF, as a stream writer leaves it).
    static func promisedFrames(_ url: URL) -> Int64? {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
        defer { try? handle.close() }
        let header = WAVData.header { count in
            guard let data = try? handle.read(upToCount: count), data.count == count else { return nil }
            return [UInt8](data)
        }
        return header?.promisedFrames
    }
}
