import Foundation
import VoxCore

/// WAV files in memory, 16-bit PCM: what HTTP speech APIs take and give.
public enum WAVData {
    /// A canonical 44-byte-header WAV of the samples (clipped to 16 bits).
    public static func pcm16(_ samples: [Float], format: AudioFormat) -> Data {
        func le32(_ v: UInt32) -> Data { withUnsafeBytes(of: v.littleEndian) { Data($0) } }
        func le16(_ v: UInt16) -> Data { withUnsafeBytes(of: v.littleEndian) { Data($0) } }
        let channels = UInt16(format.channels), rate = UInt32(format.sampleRate)
        let dataBytes = UInt32(samples.count * 2)
        var d = Data("RIFF".utf8) + le32(36 + dataBytes) + Data("WAVE".utf8)
        d +=
            Data("fmt ".utf8) + le32(16) + le16(1) + le16(channels) + le32(rate) + le32(rate * UInt32(channels) * 2)
            + le16(channels * 2) + le16(16)
        d += Data("data".utf8) + le32(dataBytes)
        return d + pcm16Bytes(samples)
    }

    /// Samples as raw 16-bit little-endian PCM (`int16` each): a WAV's data, or OpenAI's `pcm`.
    public static func pcm16Bytes(_ samples: [Float]) -> Data {
        var pcm = samples.map { int16($0).littleEndian }
        return pcm.withUnsafeMutableBytes { Data($0) }
    }

    /// Raw 16-bit little-endian PCM as samples in -1..<1 (an odd last byte is dropped).
    public static func samples<Bytes: Collection<UInt8>>(pcm16 bytes: Bytes) -> [Float] where Bytes.Index == Int {
        let start = bytes.startIndex
        return (0..<bytes.count / 2).map { i in
            Float(Int16(bitPattern: UInt16(bytes[start + 2 * i]) | UInt16(bytes[start + 2 * i + 1]) << 8)) / 32768
        }
    }

    /// A sample as 16-bit PCM: scaled, clipped to full scale, NaN as silence. A float file's
    /// samples are whatever its bytes say (7e31, ±inf, NaN), and none may trap.
    public static func int16(_ sample: Float) -> Int16 {
        sample.isNaN ? 0 : Int16(min(max(sample * 32767, -32768), 32767).rounded())
    }

    /// Reads a 16-bit PCM WAV; nil when it is not one.
    public static func decodePCM16(_ data: Data) -> (format: AudioFormat, samples: [Float])? {
        let bytes = [UInt8](data)
        guard let (header, offset) = header(of: bytes), header.formatTag == 1 || header.formatTag == 0xFFFE,
            header.bits == 16,
            header.format.channels > 0, header.format.sampleRate > 0
        else { return nil }
        // Streamed WAVs may say 0 or 0xFFFFFFFF: take what is there.
        var size = header.dataBytes
        if size == 0 || offset + size > bytes.count { size = bytes.count - offset }
        return (header.format, samples(pcm16: bytes[offset..<offset + size]))
    }

    /// A RIFF/WAVE (or RF64) header: its `fmt ` chunk's fields and the size its `data` chunk
    /// declares (RF64: its `ds64` chunk's), 0 or 0xFFFFFFFF from a program writing to a pipe,
    /// which cannot seek back to fill it in.
    public struct Header: Sendable, Equatable {
        public var format: AudioFormat
        public var formatTag: Int
        public var bits: Int
        public var dataBytes: Int
        /// Bytes per frame, as the `fmt ` chunk says.
        public var blockAlign: Int

        public init(format: AudioFormat, formatTag: Int, bits: Int, dataBytes: Int, blockAlign: Int = 0) {
            self.format = format
            self.formatTag = formatTag
            self.bits = bits
            self.dataBytes = dataBytes
            self.blockAlign = blockAlign
        }

        /// The frames the header promises; nil when the data's length is unknown (0xFFFFFFFF) or
        /// the block size is 0. libsndfile reports the frames a file holds, which hides a
        /// truncated file; this is what it was meant to hold.
        public var promisedFrames: Int64? {
            guard blockAlign > 0, dataBytes != 0xFFFF_FFFF else { return nil }
            return Int64(dataBytes / blockAlign)
        }
    }

    /// The header of a WAV held in memory, and where its samples start.
    public static func header(of bytes: [UInt8]) -> (header: Header, samplesAt: Int)? {
        var offset = 0
        let header = Self.header { count in
            guard offset + count <= bytes.count else { return nil }
            defer { offset += count }
            return Array(bytes[offset..<offset + count])
        }
        return header.map { ($0, offset) }
    }

    /// Reads a WAV header through `read` (exactly `count` bytes, or nil at the end), chunk by
    /// chunk up to the first sample and no further, so it serves files and pipes alike; nil
    /// when the bytes are not RIFF/WAVE, or no `fmt ` chunk comes before `data`.
    public static func header(_ read: (_ count: Int) throws -> [UInt8]?) rethrows -> Header? {
        func little(_ b: [UInt8], _ at: Int, _ count: Int) -> Int {
            (0..<count).reduce(0) { $0 | Int(b[at + $1]) << (8 * $1) }
        }
        guard let riff = try read(12), riff[8..<12].elementsEqual("WAVE".utf8) else { return nil }
        let rf64 = riff[0..<4].elementsEqual("RF64".utf8)
        guard rf64 || riff[0..<4].elementsEqual("RIFF".utf8) else { return nil }
        var fmt: [UInt8]?
        /// RF64's 64-bit data size (its `ds64` chunk), where it fits in an Int.
        var ds64Bytes: Int?
        while let chunk = try read(8) {
            let id = String(decoding: chunk[0..<4], as: UTF8.self)
            let size = little(chunk, 4, 4)
            if id == "data" {
                guard let fmt else { return nil }
                return Header(
                    format: AudioFormat(sampleRate: little(fmt, 4, 4), channels: little(fmt, 2, 2)),
                    formatTag: little(fmt, 0, 2), bits: little(fmt, 14, 2),
                    dataBytes: rf64 && size == 0xFFFF_FFFF ? ds64Bytes ?? size : size, blockAlign: little(fmt, 12, 2))
            }
            // Chunks before the samples (fmt, ds64, LIST, fact) are small; a huge one is no header.
            guard size <= 1 << 24, let body = try read(size + size % 2) else { return nil }
            if id == "fmt " {
                guard size >= 16 else { return nil }
                fmt = body
            } else if id == "ds64", size >= 16 {
                let bytes = (0..<8).reduce(UInt64(0)) { $0 | UInt64(body[8 + $1]) << (8 * UInt64($1)) }
                ds64Bytes = Int(exactly: bytes)
            }
        }
        return nil
    }
}
