import Foundation

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
        var pcm = samples.map { int16($0).littleEndian }
        d += pcm.withUnsafeMutableBytes { Data($0) }
        return d
    }

    /// A sample as 16-bit PCM: scaled, clipped to full scale, NaN as silence. A float file's
    /// samples are whatever its bytes say (7e31, ±inf, NaN), and none may trap.
    public static func int16(_ sample: Float) -> Int16 {
        sample.isNaN ? 0 : Int16(min(max(sample * 32767, -32768), 32767).rounded())
    }

    /// Reads a 16-bit PCM WAV; nil when it is not one.
    public static func decodePCM16(_ data: Data) -> (format: AudioFormat, samples: [Float])? {
        let bytes = [UInt8](data)
        func u32(_ i: Int) -> Int {
            Int(bytes[i]) | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2]) << 16 | Int(bytes[i + 3]) << 24
        }
        func u16(_ i: Int) -> Int { Int(bytes[i]) | Int(bytes[i + 1]) << 8 }
        guard bytes.count >= 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WAVE".utf8)
        else { return nil }
        var offset = 12
        var format: AudioFormat?
        while offset + 8 <= bytes.count {
            let id = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            var size = u32(offset + 4)
            let body = offset + 8
            if id == "fmt ", body + 16 <= bytes.count {
                guard u16(body) == 1 || u16(body) == 0xFFFE, u16(body + 14) == 16, u16(body + 2) > 0, u32(body + 4) > 0
                else { return nil }
                format = AudioFormat(sampleRate: u32(body + 4), channels: u16(body + 2))
            } else if id == "data", let format {
                // Streamed WAVs may say 0 or 0xFFFFFFFF: take what is there.
                if size == 0 || body + size > bytes.count { size = bytes.count - body }
                let count = size / 2
                var samples = [Float](repeating: 0, count: count)
                for i in 0..<count { samples[i] = Float(Int16(bitPattern: UInt16(u16(body + 2 * i)))) / 32768 }
                return (format, samples)
            }
            offset = body + size + (size & 1)
        }
        return nil
    }
}
