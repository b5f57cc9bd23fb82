import Foundation
import Testing
import VoxCore
import VoxFormats

/// WAVData: the 16-bit PCM WAVs sent to and read from HTTP speech APIs.
@Suite struct WAVDataTests {
    /// A canonical 44-byte header, spelled out field by field (little-endian).
    static func header(
        riffSize: UInt32, format: UInt16 = 1, channels: UInt16, rate: UInt32, byteRate: UInt32, blockAlign: UInt16,
        bits: UInt16 = 16, dataSize: UInt32
    ) -> [UInt8] {
        func le32(_ v: UInt32) -> [UInt8] {
            [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)]
        }
        func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
        return Array("RIFF".utf8) + le32(riffSize) + Array("WAVE".utf8)
            + Array("fmt ".utf8) + le32(16) + le16(format) + le16(channels) + le32(rate) + le32(byteRate)
            + le16(blockAlign) + le16(bits)
            + Array("data".utf8) + le32(dataSize)
    }

    /// A mono 8 kHz WAV header for `dataSize` bytes, then `payload` as it is.
    static func mono(
        dataSize: UInt32, payload: [UInt8], format: UInt16 = 1, channels: UInt16 = 1, rate: UInt32 = 8000,
        bits: UInt16 = 16
    ) -> Data {
        Data(
            header(
                riffSize: 36 + UInt32(payload.count), format: format, channels: channels, rate: rate,
                byteRate: rate * UInt32(channels) * 2,
                blockAlign: channels * 2, bits: bits, dataSize: dataSize) + payload)
    }

    @Test func pcm16WritesTheExactHeaderAndClippedRoundedSamples() {
        // Stereo 8 kHz, four frames: silence, full scale, beyond full scale, halves, and a value
        // that rounds up (0.00011 · 32767 = 3.6 → 4, where truncation would give 3).
        let wav = WAVData.pcm16(
            [0, 1, -1, 2, -2, 0.5, -0.5, 0.00011], format: AudioFormat(sampleRate: 8000, channels: 2))
        let expected =
            Self.header(riffSize: 36 + 16, channels: 2, rate: 8000, byteRate: 32000, blockAlign: 4, dataSize: 16) + [
                0x00, 0x00,  // 0
                0xFF, 0x7F,  // 1.0 → 32767
                0x01, 0x80,  // -1.0 → -32767
                0xFF, 0x7F,  // 2.0 clips to 32767
                0x00, 0x80,  // -2.0 clips to -32768
                0x00, 0x40,  // 0.5 → 16383.5 rounds away from zero to 16384
                0x00, 0xC0,  // -0.5 → -16384
                0x04, 0x00,  // 0.00011 → 4
            ]
        #expect([UInt8](wav) == expected)
        // The header fields, read back from the bytes.
        #expect(wav.count == 44 + 16)
        #expect([UInt8](wav[4..<8]) == [52, 0, 0, 0])  // RIFF size: file size − 8
        #expect([UInt8](wav[24..<28]) == [0x40, 0x1F, 0, 0])  // 8000 Hz
        #expect([UInt8](wav[28..<32]) == [0x00, 0x7D, 0, 0])  // byte rate 32000
        #expect([UInt8](wav[32..<34]) == [4, 0])  // block align: 2 channels · 2 bytes
        #expect([UInt8](wav[40..<44]) == [16, 0, 0, 0])  // data size
    }

    @Test func pcm16OfNoSamplesIsAHeaderWithAnEmptyDataChunk() {
        let wav = WAVData.pcm16([], format: AudioFormat(sampleRate: 48000, channels: 1))
        #expect(
            [UInt8](wav)
                == Self.header(riffSize: 36, channels: 1, rate: 48000, byteRate: 96000, blockAlign: 2, dataSize: 0))
    }

    @Test func pcm16ClipsHugeAndNonFiniteSamplesInsteadOfCrashing() {
        // A float file can hold anything; converting such values to Int used to trap.
        let wav = WAVData.pcm16(
            [1e30, -1e30, .infinity, -.infinity, .nan], format: AudioFormat(sampleRate: 8000, channels: 1))
        #expect([UInt8](wav.dropFirst(44)) == [0xFF, 0x7F, 0x00, 0x80, 0xFF, 0x7F, 0x00, 0x80, 0x00, 0x00])
    }

    @Test func decodePCM16ReadsBackWhatPcm16Wrote() throws {
        let format = AudioFormat(sampleRate: 22050, channels: 2)
        let decoded = try #require(WAVData.decodePCM16(WAVData.pcm16([0, 0.25, -0.25, 1, -1, 0.5], format: format)))
        #expect(decoded.format == format)
        // Written as round(x · 32767), read as n / 32768.
        let expected: [Float] = [0, 0.25, -0.25, 32767 / 32768, -32767 / 32768, 16384 / 32768]
        #expect(decoded.samples == expected)
    }

    @Test func decodePCM16SkipsOtherChunksAndTheirPadByte() throws {
        // A LIST chunk of odd size (3) is followed by one pad byte before the data chunk.
        var bytes = [UInt8](WAVData.pcm16([0.5], format: AudioFormat(sampleRate: 16000, channels: 1)))
        bytes.insert(contentsOf: Array("LIST".utf8) + [3, 0, 0, 0, 0x61, 0x62, 0x63, 0x00], at: 36)
        let decoded = try #require(WAVData.decodePCM16(Data(bytes)))
        #expect(decoded.format == AudioFormat(sampleRate: 16000, channels: 1))
        #expect(decoded.samples == [0.5])
    }

    @Test func decodePCM16AcceptsWaveFormatExtensible() throws {
        let decoded = try #require(WAVData.decodePCM16(Self.mono(dataSize: 2, payload: [0x00, 0x40], format: 0xFFFE)))
        #expect(decoded.samples == [0.5])
    }

    @Test func aDataChunkLongerThanTheFileYieldsTheSamplesThatAreThere() throws {
        // Streamed WAVs cannot know their length: they say 0xFFFFFFFF or 0, or the file was cut.
        for size: UInt32 in [1000, 0xFFFF_FFFF, 0] {
            let decoded = try #require(
                WAVData.decodePCM16(Self.mono(dataSize: size, payload: [0x00, 0x40, 0x00, 0xC0])), "data size \(size)")
            #expect(decoded.samples == [0.5, -0.5], "data size \(size)")
        }
        // An odd byte at the end is half a sample: dropped.
        #expect(WAVData.decodePCM16(Self.mono(dataSize: 3, payload: [0x00, 0x40, 0x7F]))?.samples == [0.5])
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        var name: String
        var data: Data
        var testDescription: String { name }
    }

    static let bad: [Bad] = {
        let good = WAVData.pcm16([0.5, -0.5], format: AudioFormat(sampleRate: 8000, channels: 1))
        func patched(_ offset: Int, _ bytes: [UInt8]) -> Data {
            var d = good
            d.replaceSubrange(offset..<offset + bytes.count, with: bytes)
            return d
        }
        return [
            Bad(name: "empty", data: Data()),
            Bad(name: "shorter than the RIFF header", data: good.prefix(11)),
            Bad(name: "cut inside the fmt chunk", data: good.prefix(30)),
            Bad(name: "cut before the data chunk", data: good.prefix(36)),
            Bad(name: "RIFX (big-endian)", data: patched(0, Array("RIFX".utf8))),
            Bad(name: "not WAVE", data: patched(8, Array("AVI ".utf8))),
            Bad(name: "IEEE float", data: patched(20, [3, 0])),
            Bad(name: "A-law", data: patched(20, [6, 0])),
            Bad(name: "8-bit", data: patched(34, [8, 0])),
            Bad(name: "24-bit", data: patched(34, [24, 0])),
            Bad(name: "0 channels", data: patched(22, [0, 0])),
            Bad(name: "0 Hz", data: patched(24, [0, 0, 0, 0])),
            Bad(name: "data before fmt", data: Data(Array(good[0..<12]) + Array(good[36...]) + Array(good[12..<36]))),
            Bad(name: "text", data: Data("RIFF is not a WAVE file at all, just some words".utf8)),
        ]
    }()

    @Test(arguments: bad)
    func decodePCM16RejectsWhatIsNotA16BitPCMWAV(_ bad: Bad) {
        #expect(WAVData.decodePCM16(bad.data) == nil)
    }

    /// The header as a program streams it to a pipe (ffmpeg: extensible Float32, a LIST chunk,
    /// placeholder sizes), read chunk by chunk up to the first sample and not beyond it.
    @Test func aStreamedHeaderIsReadUpToItsFirstSample() {
        var bytes = Self.header(
            riffSize: 0xFFFF_FFFF, format: 0xFFFE, channels: 1, rate: 22050, byteRate: 88200, blockAlign: 4, bits: 32,
            dataSize: 0xFFFF_FFFF)
        let list = Array("LIST".utf8) + [5, 0, 0, 0] + Array("INFOx".utf8) + [0]
        bytes.insert(contentsOf: list, at: 36)
        let samples: [UInt8] = [1, 2, 3, 4]
        let parsed = WAVData.header(of: bytes + samples)
        #expect(
            parsed?.header
                == WAVData.Header(
                    format: AudioFormat(sampleRate: 22050, channels: 1), formatTag: 0xFFFE, bits: 32,
                    dataBytes: 0xFFFF_FFFF, blockAlign: 4))
        #expect(parsed?.header.promisedFrames == nil)
        #expect(parsed?.samplesAt == bytes.count)
        // No fmt before data, not RIFF, a chunk too large to be a header, cut short: nil.
        let noFormat = Array(bytes[0..<12]) + Array("data".utf8) + [0, 0, 0, 0]
        let huge = Array(bytes[0..<12]) + Array("junk".utf8) + [0, 0, 0, 0x7F]
        for broken in [noFormat, Array("RIFX".utf8) + bytes.dropFirst(4), huge, Array(bytes.prefix(30))] {
            #expect(WAVData.header(of: broken) == nil)
        }
    }
}

@Suite struct PCM16Tests {
    @Test func rawPCMRoundTripsAndNoSampleTraps() {
        let samples: [Float] = [0, 0.5, -0.5, 1, -1, 7e31, -.infinity, .nan]
        let bytes = WAVData.pcm16Bytes(samples)
        #expect(bytes.count == 16)
        #expect(
            WAVData.samples(pcm16: [UInt8](bytes))
                == [0, 16384, -16384, 32767, -32767, 32767, -32768, 0].map {
                    Float($0) / 32768
                })
        // A slice that starts past 0, and an odd last byte dropped.
        let sliced = ([9] + [UInt8](bytes) + [7])[1...]
        #expect(WAVData.samples(pcm16: sliced) == WAVData.samples(pcm16: [UInt8](bytes)))
    }

    /// RF64 (a WAV over 4 GB): the data's size is in the ds64 chunk; the frames it promises come
    /// from there, and a plain RIFF's unknown size (0xFFFFFFFF) promises nothing.
    @Test func anRF64HeaderPromisesTheFramesItsDS64ChunkSays() {
        func le(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
        let fmt =
            Array("fmt ".utf8) + le(16, 4) + le(1, 2) + le(2, 2) + le(48000, 4) + le(192_000, 4) + le(4, 2)
            + le(16, 2)
        let ds64 = Array("ds64".utf8) + le(28, 4) + le(0, 8) + le(6_000_000_000, 8) + le(0, 8) + le(0, 4)
        let rf64 =
            Array("RF64".utf8) + le(0xFFFF_FFFF, 4) + Array("WAVE".utf8) + ds64 + fmt + Array("data".utf8)
            + le(0xFFFF_FFFF, 4)
        let header = WAVData.header(of: rf64)?.header
        #expect(header?.dataBytes == 6_000_000_000 && header?.blockAlign == 4)
        #expect(header?.promisedFrames == 1_500_000_000)
        let riff =
            Array("RIFF".utf8) + le(0xFFFF_FFFF, 4) + Array("WAVE".utf8) + fmt + Array("data".utf8)
            + le(0xFFFF_FFFF, 4)
        #expect(WAVData.header(of: riff)?.header.promisedFrames == nil)
        #expect(WAVData.header(of: riff.dropLast(4) + le(400, 4))?.header.promisedFrames == 100)
    }
}
