import Foundation
import VoxCore

/// `decode`: InputFile → AudioBlock. Reads the file with libsndfile in fixed-size blocks (never
/// the whole file at once) — WAV, FLAC, Ogg Vorbis, Opus, MP3, AIFF, CAF, W64, RF64 and every
/// other format it opens — and falls back to `ffmpeg` for containers libsndfile lacks (m4a/AAC,
/// webm). Emits at least one block (an empty one for an empty stream), so downstream stages
/// always learn the format. Fails the item, never the run, on a bad file.
public struct DecodeStage: Stage {
    public typealias Input = InputFile
    public typealias Output = AudioBlock

    public struct Configuration: Sendable {
        /// Frames per block.
        public var blockFrames: Int
        /// More channels than this is an item error.
        public var maxChannels: Int
        /// Longer audio than this (hours) is an item error.
        public var maxHours: Double
        /// Whether to try ffmpeg for formats libsndfile cannot read.
        public var ffmpegFallback: Bool
    }

    public static let kind = "decode"
    public static let summary = "Reads an audio file in blocks: libsndfile formats, others through ffmpeg."
    public static let options: [OptionSpec] = [
        OptionSpec("blockFrames", .integer(256...1_048_576), default: 65536, help: "Frames per block passed downstream."),
        OptionSpec("maxChannels", .integer(1...1024), default: 64, help: "Files with more channels fail (a guard against corrupt headers)."),
        OptionSpec("maxHours", .number(0.001...1000), default: 48, help: "Files declaring longer audio fail."),
        OptionSpec("fallback", .choice(["ffmpeg", "none"]), default: "ffmpeg", help: "Decoder for formats libsndfile cannot read (m4a/AAC, webm)."),
    ]

    /// The sample rates a decoder accepts from a header.
    public static let sampleRates = 1...768_000

    public static func configure(_ options: StageOptions) throws -> Configuration {
        Configuration(blockFrames: options.int("blockFrames") ?? 65536, maxChannels: options.int("maxChannels") ?? 64,
                      maxHours: options.double("maxHours") ?? 48, ffmpegFallback: options.string("fallback") != "none")
    }

    public let id: String
    public let configuration: Configuration

    public init(id: String, configuration: Configuration, context: StageContext) {
        self.id = id
        self.configuration = configuration
    }

    public func run(_ input: Inbox<InputFile>, _ output: Outbox<AudioBlock>, _ item: ItemContext) async throws {
        for try await file in input {
            try await decode(file, into: output, stats: item.stats)
        }
    }

    func decode(_ file: InputFile, into output: Outbox<AudioBlock>, stats: ItemStats) async throws {
        let size = (try? FileManager.default.attributesOfItem(atPath: file.url.path)[.size] as? NSNumber)?.int64Value
        guard let size else { throw DecodeError(.unreadable, "cannot read file") }
        guard size > 0 else { throw DecodeError(.unreadable, "empty file (0 bytes)") }

        let source = try open(file.url)
        try check(source.format, frames: source.frames)
        stats.audioSeconds = source.frames.map { Double($0) / Double(source.format.sampleRate) }

        var offset: Int64 = 0
        var sent = false
        while true {
            let samples = try source.read(configuration.blockFrames)
            if samples.isEmpty && sent { break }
            let block = AudioBlock(format: source.format, samples: samples, frameOffset: offset)
            offset += Int64(block.frames)
            try await output.send(block)
            sent = true
            if samples.isEmpty { break }
        }
        if source.frames == nil { stats.audioSeconds = Double(offset) / Double(source.format.sampleRate) }
    }

    /// A reader over either decoder.
    struct Source {
        var format: AudioFormat
        var frames: Int64?
        var read: (Int) throws -> [Float]
    }

    func open(_ url: URL, tools: (ffmpeg: URL, ffprobe: URL)? = FFmpegReader.tools()) throws -> Source {
        do {
            let reader = try SndFileReader(url: url)
            return Source(format: reader.format, frames: reader.frames) { try reader.read(maxFrames: $0) }
        } catch let error as SndFileOpenError {
            // libsndfile's open errors do not reliably separate "unknown format" from "corrupt"
            // (a text file named .mp3 is "not a regular file"), so ffmpeg gets every file it refused.
            guard configuration.ffmpegFallback else {
                throw DecodeError(.unreadable, "libsndfile: \(error.message)")
            }
            guard let tools else {
                throw DecodeError(.needsFFmpeg, "libsndfile cannot read this file (\(error.message)); if it is m4a/AAC, webm or another container, install ffmpeg (apt-get install ffmpeg) to decode it")
            }
            let reader: FFmpegReader
            do {
                reader = try FFmpegReader(url: url, ffmpeg: tools.ffmpeg, ffprobe: tools.ffprobe)
            } catch let ffmpegError as DecodeError {
                throw DecodeError(.unreadable, "not a readable audio file (\(ffmpegError.message); libsndfile: \(error.message))")
            }
            let frames = reader.duration.map { Int64(($0 * Double(reader.format.sampleRate)).rounded()) }
            return Source(format: reader.format, frames: frames) { try reader.read(maxFrames: $0) }
        }
    }

    func check(_ format: AudioFormat, frames: Int64?) throws {
        guard format.channels >= 1 else { throw DecodeError(.outOfBounds, "the file declares no audio channels") }
        guard format.channels <= configuration.maxChannels else {
            throw DecodeError(.outOfBounds, "\(format.channels) channels is more than maxChannels (\(configuration.maxChannels))")
        }
        guard Self.sampleRates.contains(format.sampleRate) else {
            throw DecodeError(.outOfBounds, "sample rate \(format.sampleRate) Hz is outside 1 Hz…768 kHz")
        }
        if let frames {
            guard frames >= 0, frames != Int64.max else { throw DecodeError(.outOfBounds, "the file's length is unknown") }
            let hours = Double(frames) / Double(format.sampleRate) / 3600
            guard hours <= configuration.maxHours else {
                throw DecodeError(.outOfBounds, String(format: "the file declares %.1f hours of audio, more than maxHours (%g)", hours, configuration.maxHours))
            }
        }
    }
}

