import Foundation
import Testing
import VoxCore
import VoxProcess
import VoxResample
import VoxTestSupport
import VoxTesting

@testable import VoxWrite

/// The seconds of audio ffmpeg decodes from a file (every packet decoded, not the header's claim).
func decodedSeconds(_ url: URL) throws -> Double {
    guard let ffmpeg = ExternalTool.find("ffmpeg") else { throw HarnessError("ffmpeg is not on PATH") }
    let pcm = url.deletingLastPathComponent().appendingPathComponent("decoded-\(UUID().uuidString).f32")
    defer { try? FileManager.default.removeItem(at: pcm) }
    let result = try ExternalTool.capture(
        ffmpeg, ["-nostdin", "-v", "error", "-i", url.path, "-ac", "1", "-ar", "48000", "-f", "f32le", pcm.path])
    guard result.status == 0 else { throw HarnessError("ffmpeg cannot decode \(url.lastPathComponent)") }
    let bytes = (try FileManager.default.attributesOfItem(atPath: pcm.path)[.size] as? NSNumber)?.intValue ?? 0
    return Double(bytes / 4) / 48000
}

@Suite struct WriteAudioStageTests {
    /// How far a compressed file's length may be from the audio's: decoders give whole codec
    /// frames (AAC 1024 samples, MP3 1152: 72 ms at 16 kHz), well under a word.
    let codecFrame = 0.075
    /// 3 s of a tone at 22.05 kHz mono, the rate espeak-ng speaks at.
    let speech = AudioChunk(
        format: AudioFormat(sampleRate: 22050, channels: 1), samples: sine(rate: 22050, channels: 1, seconds: 3),
        start: 0, end: 3, index: 0, cut: .synthesized)

    @Test(
        .startsProcess("ffprobe and ffmpeg"),
        arguments: [
            ("mp3", "mp3", 22050), ("opus", "opus", 48000), ("m4a", "aac", 22050), ("ogg", "vorbis", 22050),
            ("flac", "flac", 22050), ("wav", "pcm_s16le", 22050),
        ])
    func eachFormatDecodesWithFFmpegToTheDurationWritten(format: String, codec: String, rate: Int) async throws {
        let out = temporaryDirectory()
        let harness = try StageHarness(
            WriteAudioStage.self, id: "reply", options: ["format": .string(format)], outputDirectory: out,
            rateConversion: SoxrRateConversion())
        let (artifacts, _) = try await harness.run([speech])
        let ext = format == "opus" ? "opus" : format
        #expect(artifacts.map(\.path) == ["item/reply-0001.\(ext)"])
        let url = out.appendingPathComponent("item/reply-0001.\(ext)")
        let probed = try probedDuration(url)
        #expect(probed.codec == codec)
        #expect(probed.rate == rate)
        #expect(abs(probed.seconds - 3) < codecFrame, "\(format): header says \(probed.seconds) s")
        #expect(abs(try decodedSeconds(url) - 3) < codecFrame, "\(format): decodes to a different length")
    }

    @Test(.startsProcess("ffmpeg"))
    func aStreamOfBlocksBecomesOneM4AFile() async throws {
        let out = temporaryDirectory()
        let format = AudioFormat(sampleRate: 16000, channels: 2)
        let samples = sine(rate: 16000, channels: 2, seconds: 2.5)
        let harness = try StageHarness(
            WriteAudioStage.self, id: "audio", options: ["format": "m4a", "bitrate": 64], outputDirectory: out)
        let (artifacts, _) = try await harness.run(blocks(samples, format: format))
        #expect(artifacts.map(\.path) == ["item/audio.m4a"])
        let folder = out.appendingPathComponent("item")
        // Only the file: the temporary WAV ffmpeg read is gone.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["audio.m4a"])
        #expect(abs(try decodedSeconds(folder.appendingPathComponent("audio.m4a")) - 2.5) < codecFrame)
    }

    @Test(.startsProcess("ffmpeg"))
    func equalAudioGivesEqualM4ABytes() async throws {
        var hashes: [String] = []
        for _ in 0..<2 {
            let harness = try StageHarness(
                WriteAudioStage.self, id: "reply", options: ["format": "m4a"], outputDirectory: temporaryDirectory())
            hashes.append(try await harness.run([speech]).outputs[0].sha256)
        }
        #expect(hashes[0] == hashes[1])
    }

    @Test func aHigherQualityMakesABiggerMP3() async throws {
        var sizes: [Int64] = []
        for quality in [0.0, 1.0] {
            let harness = try StageHarness(
                WriteAudioStage.self, id: "reply",
                options: ["format": "mp3", "quality": .number(quality), "bitrateMode": "constant"],
                outputDirectory: temporaryDirectory())
            sizes.append(try await harness.run([speech]).outputs[0].bytes)
        }
        #expect(sizes[0] * 2 < sizes[1], "quality 0 gave \(sizes[0]) bytes, quality 1 \(sizes[1])")
    }

    /// `speech` cut into three parts of index 0 (as a reply spoken sentence by sentence comes),
    /// then a whole chunk of index 1.
    var spokenInParts: [AudioChunk] {
        let cuts = [0, 20000, 41000, speech.samples.count]
        return (0..<3).map { i in
            var part = speech
            part.samples = Array(speech.samples[cuts[i]..<cuts[i + 1]])
            part.continues = i < 2
            return part
        } + [AudioChunk(format: speech.format, samples: speech.samples, start: 5, end: 8, index: 1, cut: .synthesized)]
    }

    @Test(arguments: ["wav", "flac", "mp3"])
    func aReplySpokenInPartsBecomesOneFileEqualToTheWholeOne(format: String) async throws {
        let out = temporaryDirectory()
        let harness = try StageHarness(
            WriteAudioStage.self, id: "reply", options: ["format": .string(format)], outputDirectory: out)
        let artifacts = try await harness.run(spokenInParts).outputs
        #expect(artifacts.map(\.path) == ["item/reply-0001.\(format)", "item/reply-0002.\(format)"])
        let whole = try await StageHarness(
            WriteAudioStage.self, id: "reply", options: ["format": .string(format)],
            outputDirectory: temporaryDirectory()
        ).run([speech]).outputs
        #expect(artifacts.map(\.sha256) == [whole[0].sha256, whole[0].sha256])
    }

    @Test(.startsProcess("ffprobe"))
    func partsConvertedToAnotherRateKeepTheirLength() async throws {
        let out = temporaryDirectory()
        let harness = try StageHarness(
            WriteAudioStage.self, id: "reply", options: ["rate": 16000], outputDirectory: out,
            rateConversion: SoxrRateConversion())
        _ = try await harness.run(spokenInParts)
        for name in ["reply-0001.wav", "reply-0002.wav"] {
            let probed = try probedDuration(out.appendingPathComponent("item/\(name)"))
            #expect(probed.rate == 16000)
            #expect(abs(probed.seconds - 3) < 0.001, "\(name): \(probed.seconds) s")
        }
    }

    @Test func aChunkBeforeTheLastPartOfAnotherFailsTheItem() async throws {
        var parts = spokenInParts
        parts.swapAt(2, 3)
        let harness = try StageHarness(WriteAudioStage.self, id: "reply", outputDirectory: temporaryDirectory())
        let error = await #expect(throws: WriteError.self) { try await harness.run(parts) }
        #expect(error?.message == "chunk 1 came before the last part of chunk 0")
    }

    @Test func optionsThatDoNotFitTheFormatAreRefusedWithTheirPath() throws {
        let cases: [([String: JSONValue], String)] = [
            (
                ["format": "mp3", "encoding": "pcm24"],
                "stages[0].encoding: applies only where format is wav or flac (here: mp3)"
            ),
            (["format": "wav", "bitrate": 128], "stages[0].bitrate: applies only where format is m4a (here: wav)"),
            (["format": "opus", "rate": 44100], "stages[0].rate: opus takes 8000, 12000, 16000, 24000, 48000 Hz"),
            (["format": "flac", "encoding": "float32"], "stages[0].encoding: flac holds integer samples"),
        ]
        for (options, message) in cases {
            let error = #expect(throws: VoxError.self) { try StageHarness(WriteAudioStage.self, options: options) }
            #expect(error?.message.hasPrefix(message) == true, "\(error?.message ?? "no error")")
        }
    }
}
