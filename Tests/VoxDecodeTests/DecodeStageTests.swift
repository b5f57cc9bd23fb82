import CSndFile
import Foundation
import Testing
import VoxCore
import VoxFormats
import VoxTestSupport

@testable import VoxDecode

@Suite struct DecodeStageTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var ext: String
        var format: Int32
        var lossy: Bool
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "WAV 8-bit", ext: "wav", format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_U8), lossy: false),
        Case(name: "WAV 16-bit", ext: "wav", format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16), lossy: false),
        Case(name: "WAV 24-bit", ext: "wav", format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_24), lossy: false),
        Case(name: "WAV 32-bit int", ext: "wav", format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_32), lossy: false),
        Case(name: "WAV 32-bit float", ext: "wav", format: Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT), lossy: false),
        Case(name: "WAV 64-bit float", ext: "wav", format: Int32(SF_FORMAT_WAV | SF_FORMAT_DOUBLE), lossy: false),
        Case(name: "FLAC", ext: "flac", format: Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16), lossy: false),
        Case(name: "Ogg Vorbis", ext: "ogg", format: Int32(SF_FORMAT_OGG | SF_FORMAT_VORBIS), lossy: true),
        Case(name: "Opus", ext: "opus", format: Int32(SF_FORMAT_OGG | SF_FORMAT_OPUS), lossy: true),
        Case(name: "MP3", ext: "mp3", format: Int32(SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III), lossy: true),
        Case(name: "AIFF", ext: "aiff", format: Int32(SF_FORMAT_AIFF | SF_FORMAT_PCM_16), lossy: false),
        Case(name: "CAF", ext: "caf", format: Int32(SF_FORMAT_CAF | SF_FORMAT_PCM_16), lossy: false),
        Case(name: "W64", ext: "w64", format: Int32(SF_FORMAT_W64 | SF_FORMAT_PCM_16), lossy: false),
        Case(name: "RF64", ext: "rf64", format: Int32(SF_FORMAT_RF64 | SF_FORMAT_PCM_16), lossy: false),
    ]

    @Test(arguments: cases)
    func decodesEveryFormatLibsndfileOpensInBlocks(_ c: Case) async throws {
        let url = temporaryDirectory().appendingPathComponent("tone.\(c.ext)")
        let signal = sine(rate: 48000, channels: 2, seconds: 1.5)
        #expect(
            writeSoundFile(url, format: c.format, rate: 48000, channels: 2, samples: signal),
            "this libsndfile cannot write \(c.name)")
        let (blocks, stats) = try await decodeBlocks(url, options: ["blockFrames": 4096])
        let samples = blocks.flatMap(\.samples)
        #expect(blocks.allSatisfy { $0.format == AudioFormat(sampleRate: 48000, channels: 2) })
        #expect(blocks.dropLast().allSatisfy { $0.frames == 4096 })
        #expect(blocks.first?.frameOffset == 0)
        for (a, b) in zip(blocks, blocks.dropFirst()) { #expect(b.frameOffset == a.frameOffset + Int64(a.frames)) }
        let frames = samples.count / 2
        if c.lossy {
            #expect(abs(frames - 72000) < 4000)
        } else {
            #expect(frames == 72000)
        }
        #expect(abs(rms(samples) - 0.3536) < 0.04)
        #expect(abs((stats[.audioSeconds] ?? 0) - 1.5) < 0.1)
    }

    @Test(.startsProcess("ffmpeg"))
    func aContainerLibsndfileLacksIsDecodedThroughFFmpeg() async throws {
        let dir = temporaryDirectory()
        let wav = dir.appendingPathComponent("tone.wav")
        #expect(
            writeSoundFile(
                wav, format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16), rate: 44100, channels: 1,
                samples: sine(rate: 44100, channels: 1, seconds: 2)))
        let m4a = dir.appendingPathComponent("tone.m4a")
        try runTool("ffmpeg", ["-v", "error", "-y", "-i", wav.path, "-c:a", "aac", "-b:a", "96k", m4a.path])
        let (blocks, stats) = try await decodeBlocks(m4a)
        let samples = blocks.flatMap(\.samples)
        #expect(blocks.first?.format == AudioFormat(sampleRate: 44100, channels: 1))
        #expect(abs(samples.count - 88200) < 3000)
        #expect(abs(rms(samples) - 0.3536) < 0.04)
        #expect(abs((stats[.audioSeconds] ?? 0) - 2) < 0.1)
    }

    @Test func withoutFFmpegAnM4aFailsSayingToInstallIt() async throws {
        let stage = DecodeStage(
            id: "decode",
            configuration: .init(blockFrames: 1024, maxChannels: 64, maxHours: 48, ffmpegFallback: true),
            context: StageContext(logger: .init(label: "t")))
        let url = temporaryDirectory().appendingPathComponent("x.m4a")
        // A real m4a header (size, "ftyp", "M4A "), then bytes no decoder gets to see.
        try (Data([0, 0, 0, 0x1C]) + Data("ftypM4A ".utf8) + Data(repeating: 7, count: 1000)).write(to: url)
        #expect(FFmpegReader.tools(environment: ["PATH": "/nonexistent"]) == nil)
        do {
            _ = try stage.open(url, tools: FFmpegReader.tools(environment: ["PATH": "/nonexistent"]))
            Issue.record("expected an error")
        } catch let error as DecodeError {
            #expect(error.code == .needsFFmpeg)
            #expect(error.message.contains("install ffmpeg"))
        }
    }

    /// ffprobe's answer for a file declaring more frames than 64 bits hold (a fixture in
    /// Tests/Fixtures/fuzz-regressions/decode/, given by a stand-in ffprobe; the file has no MP4
    /// header to read a length from): the length was converted with a trap; now it is unknown,
    /// and the file decodes (to nothing, here).
    @Test(.startsProcess("stand-in ffprobe and ffmpeg scripts"))
    func aLengthBeyond64BitsFromFFprobeIsUnknownNotACrash() async throws {
        let dir = temporaryDirectory()
        let url = dir.appendingPathComponent("x.m4a")
        try (Data([0, 0, 0, 0x1C]) + Data("ftypM4A ".utf8) + Data(repeating: 7, count: 1000)).write(to: url)
        let ffprobe = dir.appendingPathComponent("ffprobe"), ffmpeg = dir.appendingPathComponent("ffmpeg")
        try Data("#!/bin/sh\ncat '\(fuzzRegression("decode", "ffprobe-duration-beyond-64-bits.txt").path)'\n".utf8)
            .write(to: ffprobe)
        // ffmpeg stands in with what it writes to a pipe for no samples: the header of a Float32
        // WAV stream (768 kHz, mono) with placeholder sizes.
        let header = dir.appendingPathComponent("header.wav")
        func le(_ value: Int, _ bytes: Int) -> [UInt8] {
            (0..<bytes).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        }
        var wav: [UInt8] = Array("RIFF".utf8) + le(-1, 4) + Array("WAVEfmt ".utf8) + le(16, 4)
        wav += le(3, 2) + le(1, 2) + le(768000, 4) + le(4 * 768000, 4) + le(4, 2) + le(32, 2)
        wav += Array("data".utf8) + le(-1, 4)
        try Data(wav).write(to: header)
        try Data("#!/bin/sh\ncat '\(header.path)'\n".utf8).write(to: ffmpeg)
        for tool in [ffprobe, ffmpeg] {
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: tool.path)
        }
        let stage = DecodeStage(
            id: "decode",
            configuration: .init(blockFrames: 1024, maxChannels: 64, maxHours: 48, ffmpegFallback: true),
            context: StageContext(logger: .init(label: "t")))
        let source = try stage.open(url, tools: (ffmpeg, ffprobe))
        #expect(source.format == AudioFormat(sampleRate: 768000, channels: 1))
        #expect(source.frames == nil)
        #expect(try source.read(1024).isEmpty)
    }

    /// A float WAV the fuzzer made (Tests/Fixtures/fuzz-regressions/decode/): samples of 7e31
    /// decode as they are, and turning them into 16-bit PCM for an upload (the OpenAI
    /// transcriber, pocketsphinx) trapped; they clip to full scale now, NaN to silence.
    @Test func floatSamplesBeyond16BitsClipInsteadOfCrashing() async throws {
        let (blocks, _) = try await decodeBlocks(fuzzRegression("decode", "float-samples-beyond-16-bits.wav"))
        let samples = blocks.flatMap(\.samples)
        #expect(samples.contains { $0 > 1e30 })
        let wav = try #require(
            WAVData.decodePCM16(WAVData.pcm16(samples, format: AudioFormat(sampleRate: 8000, channels: 1))))
        #expect(wav.samples.count == samples.count)
        #expect(wav.samples.max() == Float(32767) / 32768)
        #expect(
            [Float.nan, .infinity, -.infinity, 7e31, -7e31, 0.5].map(WAVData.int16) == [
                0, 32767, -32768, 32767, -32768, 16384,
            ])
    }

    @Test func anEmptyFileIsAnItemError() async throws {
        let url = temporaryDirectory().appendingPathComponent("empty.wav")
        try Data().write(to: url)
        let error = await #expect(throws: DecodeError.self) { try await decodeBlocks(url) }
        #expect(error?.message == "empty file (0 bytes)")
    }

    /// 2000 bytes of noise, each with its top bit set (no text, no audio format's magic).
    static let noise: Data = {
        var random: UInt64 = 1
        return Data(
            (0..<2000).map { _ -> UInt8 in
                random = random &* 6364136223846793005 &+ 1
                return UInt8(truncatingIfNeeded: random >> 56) | 0x80
            })
    }()

    @Test func filesThatAreNotAudioSayWhatIsWrongWithThem() async throws {
        let dir = temporaryDirectory()
        let cases: [(String, Data, String)] = [
            ("notes.mp3", Data("These are my notes, not audio.\n".utf8), "not an audio file: it holds text"),
            ("notes.flac", Data("hello world, not audio".utf8), "not an audio file: it holds text"),
            ("one.mp3", Data([0x78]), "too short to be audio (1 byte)"),
            ("noise.wav", Data([0x00, 0x01]) + Self.noise, "not an audio file: no audio format starts like this"),
        ]
        for (name, bytes, message) in cases {
            let url = dir.appendingPathComponent(name)
            try bytes.write(to: url)
            await #expect(throws: DecodeError(.unreadable, message), "\(name)") { _ = try await decodeBlocks(url) }
        }
    }

    @Test(.startsProcess("ffmpeg and ffprobe, the decoder's fallback"))
    func aWAVHeaderOverGarbageIsADamagedAudioFileWithTheDecodersDetail() async throws {
        let dir = temporaryDirectory()
        let damaged = dir.appendingPathComponent("damaged.wav")
        try (Data("RIFF".utf8) + Data([0xFF, 0xFF, 0xFF, 0x7F]) + Data("WAVEjunk".utf8) + Self.noise).write(to: damaged)
        let error = await #expect(throws: DecodeError.self) { _ = try await decodeBlocks(damaged) }
        #expect(error?.message.hasPrefix("unsupported or damaged audio file (") == true, "\(String(describing: error))")
    }

    @Test(.startsProcess("ffmpeg and ffprobe, the decoder's fallback"))
    func aCorruptWAVHeaderIsAnItemError() async throws {
        let url = temporaryDirectory().appendingPathComponent("corrupt.wav")
        var bytes = Data("RIFF".utf8) + Data([0x24, 0, 0, 0]) + Data("WAVEfmt ".utf8)
        bytes += Data([0xff, 0xff, 0xff, 0x7f]) + Data(repeating: 0xAB, count: 64)
        try bytes.write(to: url)
        await #expect(throws: DecodeError.self) { try await decodeBlocks(url) }
    }

    /// A canonical 16-bit PCM WAV header with the given fields, then `dataBytes` of silence.
    func wavHeader(channels: UInt16, rate: UInt32, dataBytes: UInt32) -> Data {
        func le32(_ v: UInt32) -> Data { withUnsafeBytes(of: v.littleEndian) { Data($0) } }
        func le16(_ v: UInt16) -> Data { withUnsafeBytes(of: v.littleEndian) { Data($0) } }
        var d = Data("RIFF".utf8) + le32(36 + dataBytes) + Data("WAVE".utf8)
        d += Data("fmt ".utf8) + le32(16) + le16(1) + le16(channels) + le32(rate)
        d += le32(rate &* UInt32(max(channels, 1)) &* 2) + le16(max(channels, 1) * 2) + le16(16)
        d += Data("data".utf8) + le32(dataBytes) + Data(repeating: 0, count: Int(dataBytes))
        return d
    }

    @Test func tooManyChannelsIsAnItemError() async throws {
        let url = temporaryDirectory().appendingPathComponent("three.wav")
        #expect(
            writeSoundFile(
                url, format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16), rate: 8000, channels: 3,
                samples: [Float](repeating: 0, count: 300)))
        let error = await #expect(throws: DecodeError.self) { try await decodeBlocks(url, options: ["maxChannels": 2]) }
        #expect(error?.message == "3 channels is more than maxChannels (2)")
    }

    @Test func aSampleRateOutsideTheGuardIsAnItemError() async throws {
        let url = temporaryDirectory().appendingPathComponent("fast.wav")
        try wavHeader(channels: 1, rate: 1_000_000, dataBytes: 200).write(to: url)
        let error = await #expect(throws: DecodeError.self) { try await decodeBlocks(url) }
        #expect(error?.message == "sample rate 1000000 Hz is outside 1 Hz…768 kHz")
    }

    @Test(.startsProcess("ffmpeg and ffprobe, the decoder's fallback"))
    func zeroChannelsIsAnItemError() async throws {
        let url = temporaryDirectory().appendingPathComponent("none.wav")
        try wavHeader(channels: 0, rate: 8000, dataBytes: 200).write(to: url)
        await #expect(throws: DecodeError.self) { try await decodeBlocks(url) }
    }

    @Test func anAbsurdLengthIsAnItemError() async throws {
        let url = temporaryDirectory().appendingPathComponent("long.wav")
        #expect(
            writeSoundFile(
                url, format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16), rate: 8000, channels: 1,
                samples: [Float](repeating: 0, count: 80000)))
        let error = await #expect(throws: DecodeError.self) {
            try await decodeBlocks(url, options: ["maxHours": 0.001])
        }
        #expect(error?.message == "the file declares 0.0 hours of audio, more than maxHours (0.001)")
    }

    @Test func aZeroFrameFileGivesOneEmptyBlockWithItsFormat() async throws {
        let url = temporaryDirectory().appendingPathComponent("zero.wav")
        try wavHeader(channels: 2, rate: 22050, dataBytes: 0).write(to: url)
        let (blocks, _) = try await decodeBlocks(url)
        #expect(blocks.count == 1)
        #expect(blocks.first?.frames == 0)
        #expect(blocks.first?.format == AudioFormat(sampleRate: 22050, channels: 2))
    }
}
