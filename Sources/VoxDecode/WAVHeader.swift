import Foundation

/// What a WAV (RIFF or RF64) header promises: the frames of its `data` chunk, from the chunk's
/// size (RF64: the `ds64` chunk's) and the format's block size. libsndfile reports the frames a
/// file holds, which hides a truncated file; this is what it was meant to hold.
enum WAVHeader {
    /// The frames the header promises; nil when it is no WAV, or its data length is unknown
    /// (0xFFFFFFFF, as a stream writer leaves it).
    static func promisedFrames(_ url: URL) -> Int64? {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
        defer { try? handle.close() }
        func read(_ count: Int, at offset: UInt64) -> [UInt8]? {
            guard (try? handle.seek(toOffset: offset)) != nil, let data = try? handle.read(upToCount: count),
                data.count == count
            else { return nil }
            return [UInt8](data)
        }
        func le(_ bytes: [UInt8], _ at: Int, _ count: Int) -> UInt64 {
            (0..<count).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) }
        }
        guard let head = read(12, at: 0), head[8..<12].elementsEqual("WAVE".utf8) else { return nil }
        let rf64 = head[0..<4].elementsEqual("RF64".utf8)
        guard rf64 || head[0..<4].elementsEqual("RIFF".utf8) else { return nil }
        var offset: UInt64 = 12
        var blockAlign: UInt64 = 0
        var ds64Bytes: UInt64?
        // The chunks before `data` are few; a header that never reaches it promises nothing.
        for _ in 0..<64 {
            guard let chunk = read(8, at: offset) else { return nil }
            let size = le(chunk, 4, 4)
            switch String(decoding: chunk[0..<4], as: UTF8.self) {
            case "fmt ":
                guard let format = read(16, at: offset + 8) else { return nil }
                blockAlign = le(format, 12, 2)
            case "ds64":
                guard let ds64 = read(16, at: offset + 8) else { return nil }
                ds64Bytes = le(ds64, 8, 8)
            case "data":
                let bytes = rf64 && size == 0xFFFF_FFFF ? ds64Bytes : size == 0xFFFF_FFFF ? nil : size
                guard blockAlign > 0, let bytes, bytes / blockAlign <= UInt64(Int64.max) else { return nil }
                return Int64(bytes / blockAlign)
            default:
                break
            }
            offset += 8 + size + (size & 1)
        }
        return nil
    }
}
