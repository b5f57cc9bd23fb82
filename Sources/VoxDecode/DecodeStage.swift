import Foundation
import Logging
import VoxCore
import VoxModeration

/// `decode`: InputFile → AudioBlock. Reads the file with libsndfile in fixed-size blocks (never
/// the whole file at once) — WAV, FLAC, Ogg Vorbis, Opus, MP3, AIFF, CAF, W64, RF64 and every
/// other format it opens — and falls back to `ffmpeg` for containers libsndfile lacks (m4a/AAC,
/// webm). Emits at least one block (an empty one for an empty stream), so downstream stages
/// always learn the format. Fails the item, never the run, on a bad file.
///
/// It decodes what the item is: one channel of the file and one stretch of it, when the item is a
/// part (`ItemPart`), and no further than the item's `lengthLimit`. Which items an upload becomes
/// (seats, report windows) is not its business: it declares moderation's item expansion
/// (`ModerationItems`, with the options that configure it) and lends it the header probe.
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
        /// What items an upload becomes (seats, report windows) and what its sidecar says: the
        /// moderation options this stage takes for the expansion it declares.
        public var items: ModerationItems.Configuration

        /// Defaults as declared (`DecodeStage.Option`).
        public init(
            blockFrames: Int = Option.blockFrames.fallback, maxChannels: Int = Option.maxChannels.fallback,
            maxHours: Double = Option.maxHours.fallback, ffmpegFallback: Bool = Option.fallback.fallback == .ffmpeg,
            items: ModerationItems.Configuration = .init()
        ) {
            self.blockFrames = blockFrames
            self.maxChannels = maxChannels
            self.maxHours = maxHours
            self.ffmpegFallback = ffmpegFallback
            self.items = items
        }
    }

    public static let kind = "decode"
    public static let summary = "Reads an audio file in blocks: libsndfile formats, others through ffmpeg."
    /// Each option of its own, declared once.
    public enum Option {
        public static let blockFrames = StageOption<Int>(
            "blockFrames", .integer(256...1_048_576), default: 65536, help: "Frames per block passed downstream.")
        public static let maxChannels = StageOption<Int>(
            "maxChannels", .integer(1...1024), default: 64,
            help: "Files with more channels fail (a guard against corrupt headers).")
        public static let maxHours = StageOption<Double>(
            "maxHours", .number(0.001...1000), default: 48, help: "Files declaring longer audio fail.")
        public static let fallback = StageOption<Fallback>(
            "fallback", default: .ffmpeg, help: "Decoder for formats libsndfile cannot read (m4a/AAC, webm).")
    }

    /// What decodes the formats libsndfile cannot read.
    public enum Fallback: String, Sendable, CaseIterable, OptionValue { case ffmpeg, none }

    /// Its own options, then those of the moderation items it declares (`ModerationItems.options`).
    public static let options: [OptionSpec] =
        [Option.blockFrames.spec, Option.maxChannels.spec, Option.maxHours.spec, Option.fallback.spec]
        + ModerationItems.options

    /// The decoding library's version, for provenance records.
    public static var libraryVersions: [String: String] { ["libsndfile": SndFileReader.version] }

    /// The sample rates a decoder accepts from a header.
    public static let sampleRates = 1...768_000

    public static func configure(_ options: StageOptions) throws -> Configuration {
        Configuration(
            blockFrames: options[Option.blockFrames], maxChannels: options[Option.maxChannels],
            maxHours: options[Option.maxHours], ffmpegFallback: options[Option.fallback] == .ffmpeg,
            items: try ModerationItems.configure(options))
    }

    /// The source's format and length (and where the item's length limit cut it), and what the
    /// items it declares learn from the sidecar before it runs.
    public static let factsGiven = ItemFact.list(.sourceFormat, .audioSeconds, .cutAt) + ModerationItems.factsGiven

    /// The items an upload becomes (`ModerationItems`), which read the upload's header with this
    /// stage's decoders.
    public static func declarations(_ configuration: Configuration) -> StageDeclarations {
        let fallback = configuration.ffmpegFallback
        let items = ModerationItems(configuration.items, maxChannels: configuration.maxChannels) { url in
            let header = try probe(url, ffmpegFallback: fallback)
            return ModerationItems.Header(channels: header.channels, seconds: header.seconds)
        }
        return StageDeclarations().declaring(.itemExpansion, items)
    }

    /// The file's channel count and length in seconds (when its header says), without decoding.
    static func probe(_ url: URL, ffmpegFallback: Bool) throws -> (channels: Int, seconds: Double?) {
        try checkReadable(url)
        if let reader = try? SndFileReader(url: url) {
            return (
                reader.format.channels,
                reader.format.sampleRate > 0 ? Double(reader.frames) / Double(reader.format.sampleRate) : nil
            )
        }
        guard ffmpegFallback, let tools = FFmpegReader.tools() else {
            throw DecodeError(.unreadable, "libsndfile cannot read this file, and ffmpeg is not there to try")
        }
        let probed = try FFmpegReader.probe(url: url, ffprobe: tools.ffprobe)
        return (probed.format.channels, probed.duration)
    }

    public let id: String
    public let configuration: Configuration
    /// Only the last this-many seconds of the stream matter downstream (set by the plan).
    let lookback: Double?
    let logger: Logger
    let blocking: BlockingExecutor

    public init(id: String, configuration: Configuration, context: StageContext) {
        self.id = id
        self.configuration = configuration
        lookback = context.lookback
        logger = context.logger
        blocking = context.blocking
    }

    public func run(_ input: Inbox<InputFile>, _ output: Outbox<AudioBlock>, _ item: ItemContext) async throws {
        for try await file in input { try await decode(file, into: output, facts: item.facts) }
    }

    /// Seconds of extra audio decoded before a tail window, so resampler filters have settled
    /// by the window's start; the seek lands on a whole second, so every integer output rate
    /// keeps the same sample grid as a decode from the start.
    static let seekMargin = 2.0

    /// What the caller learns of an open source; the reader itself stays on its lane.
    struct Header: Sendable {
        var format: AudioFormat
        var frames: Int64?
        var promisedFrames: Int64?
        var seeks: Bool
    }

    /// Decodes `file` into blocks. The file is opened, sought and read on a lane of the blocking
    /// executor (libsndfile's reads and ffmpeg's pipe block), so a slow disk or a slow ffmpeg
    /// holds no thread of the cooperative pool; the blocks are sent from here.
    func decode(_ file: InputFile, into output: Outbox<AudioBlock>, facts: ItemFacts) async throws {
        let lane = blocking.lane(Source.self)
        let header = try await lane.open { [self] _ in
            try Self.checkReadable(file.url)
            let source = try open(file.url)
            if source.format.channels < 1, let why = FileSniffer.diagnose(file.url) {
                throw DecodeError(.unreadable, why)
            }
            let header = Header(
                format: source.format, frames: source.frames, promisedFrames: source.promisedFrames,
                seeks: source.seek != nil)
            return (source, header)
        }
        func seek(_ frame: Int64) async throws -> Bool {
            guard header.seeks else { return false }
            return try await lane.run { source, _ in source.seek?(frame) ?? false }
        }
        try check(header.format, frames: header.frames)
        let rate = header.format.sampleRate
        facts[.audioSeconds] = header.frames.map { Double($0) / Double(rate) }
        facts[.sourceFormat] = header.format
        let channel = file.part?.channel
        if let channel, channel.index >= header.format.channels {
            throw DecodeError(
                .outOfBounds,
                "track \(channel.name) is channel \(channel.index), but the file has \(header.format.channels)")
        }
        let span = file.part?.span

        var offset: Int64 = 0
        // A part of the recording (a report window): from its start (less the settling margin) to
        // its end, seeking where the format seeks exactly, so the cost follows the span, not where
        // it lies.
        var endFrame: Int64?
        if let span {
            endFrame = Int64((span.end * Double(rate)).rounded())
            let startSecond = (span.start - Self.seekMargin).rounded(.down)
            if startSecond > 0, try await seek(Int64(startSecond) * Int64(rate)) {
                offset = Int64(startSecond) * Int64(rate)
                logger.debug(
                    "seeked to the report window",
                    metadata: ["stage.id": .string(id), "decode.from.seconds": .stringConvertible(startSecond)])
            }
        } else if let lookback, let frames = header.frames {
            let startSecond = (Double(frames) / Double(rate) - lookback - Self.seekMargin).rounded(.down)
            if startSecond > 0, try await seek(Int64(startSecond) * Int64(rate)) {
                offset = Int64(startSecond) * Int64(rate)
                logger.debug(
                    "seeked past what no stage needs",
                    metadata: ["stage.id": .string(id), "decode.from.seconds": .stringConvertible(startSecond)])
            }
        }
        // The item's length limit (a session sidecar's `maxDurationMinutes`): audio beyond it is
        // not decoded.
        var cut = false
        if endFrame == nil, let seconds = facts[.lengthLimit] {
            let limit = Int64((seconds * Double(rate)).rounded())
            if header.frames.map({ $0 > limit }) ?? true {
                endFrame = limit
                cut = header.frames != nil
            }
        }
        let firstFrame = offset
        let outFormat = channel == nil ? header.format : AudioFormat(sampleRate: rate, channels: 1)
        var sent = false
        while true {
            var want = configuration.blockFrames
            if let endFrame { want = Int(max(0, min(Int64(want), endFrame - offset))) }
            let channels = header.format.channels
            var samples: [Float] = []
            if want > 0 {
                samples = try await lane.run { [want] source, _ -> [Float] in
                    let samples = try source.read(want)
                    return channel.map { Self.channel($0.index, of: samples, channels: channels) } ?? samples
                }
            }
            if samples.isEmpty && sent { break }
            let block = AudioBlock(format: outFormat, samples: samples, frameOffset: offset)
            offset += Int64(block.frames)
            try await output.send(block)
            sent = true
            if samples.isEmpty { break }
        }
        if header.frames == nil || span != nil || cut {
            facts[.audioSeconds] = Double(offset - firstFrame) / Double(rate)
        }
        // Read to the end: fewer frames than the header promised is a truncated file (sox says
        // "Premature EOF"). The item goes on with what there is, and says so.
        if let promised = header.promisedFrames, endFrame == nil, span == nil, offset < promised {
            facts[.audioSeconds] = Double(offset) / Double(rate)
            facts.warn(
                ItemWarning(
                    stage: id, kind: Self.kind,
                    message: "truncated: the header promises \(promised) frames, the file holds \(offset) "
                        + "(\(String(format: "%.1f", Double(offset) / Double(promised) * 100)) %)",
                    framesPromised: promised, framesFound: offset))
        }
        if let endFrame, span == nil, cut || offset >= endFrame {
            let seconds = Double(endFrame) / Double(rate)
            facts[.cutAt] = seconds
            logger.warning(
                "\(file.displayName): decode: the session runs past its maxDurationMinutes; cut at \(Int(seconds)) s",
                metadata: ["stage.id": .string(id)])
        }
    }

    /// Throws why `url` is no file to decode: a missing file, a loop of symbolic links, or no
    /// regular file (a FIFO would block the reader forever; a folder or device is no audio); an
    /// empty file. A file that says 0 bytes but reads (in /proc) goes on to the sniffer.
    static func checkReadable(_ url: URL) throws {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            throw DecodeError(.unreadable, "cannot read file: \(systemReason(errno))")
        }
        if let type = InputListing.fileTypeName(info.st_mode & S_IFMT) {
            throw DecodeError(.unreadable, "not a regular file (\(type))")
        }
        if info.st_size == 0 {
            let handle = try? FileHandle(forReadingFrom: url)
            defer { try? handle?.close() }
            if (try? handle?.read(upToCount: 1))??.isEmpty ?? true {
                throw DecodeError(.unreadable, "empty file (0 bytes)")
            }
        }
    }

    /// One channel of interleaved samples.
    static func channel(_ c: Int, of samples: [Float], channels: Int) -> [Float] {
        if channels == 1 { return samples }
        let frames = samples.count / channels
        return [Float](unsafeUninitializedCapacity: frames) { buffer, count in
            samples.withUnsafeBufferPointer { src in
                for f in 0..<frames { buffer[f] = src[f &* channels &+ c] }
            }
            count = frames
        }
    }

    /// A reader over either decoder.
    struct Source {
        var format: AudioFormat
        var frames: Int64?
        /// What the file's header promises, where it can be told from what it holds (libsndfile
        /// reports what a truncated WAV holds, and what a truncated FLAC or MP3 promised).
        var promisedFrames: Int64?
        var read: (Int) throws -> [Float]
        /// Seeks to a frame; nil where seeks are not exact.
        var seek: ((Int64) -> Bool)?
    }

    func open(_ url: URL, tools: (ffmpeg: URL, ffprobe: URL)? = FFmpegReader.tools()) throws -> Source {
        do {
            let reader = try SndFileReader(url: url)
            return Source(
                format: reader.format, frames: reader.frames,
                promisedFrames: max(reader.frames, WAVHeader.promisedFrames(url) ?? 0),
                read: { try reader.read(maxFrames: $0) }, seek: reader.seeksExactly ? { reader.seek(toFrame: $0) } : nil
            )
        } catch let error as SndFileOpenError {
            // libsndfile's open errors do not reliably separate "unknown format" from "corrupt"
            // (a text file named .mp3 is "not a regular file"), so ffmpeg gets every file it refused.
            if let why = FileSniffer.diagnose(url) { throw DecodeError(.unreadable, why) }
            guard configuration.ffmpegFallback else {
                throw DecodeError(.unreadable, "unsupported or damaged audio file (libsndfile: \(error.message))")
            }
            guard let tools else {
                throw DecodeError(
                    .needsFFmpeg,
                    "libsndfile cannot read this file (\(error.message)); if it is m4a/AAC, webm or another "
                        + "container, install ffmpeg (apt-get install ffmpeg) to decode it"
                )
            }
            let reader: FFmpegReader
            do {
                reader = try FFmpegReader(url: url, ffmpeg: tools.ffmpeg, ffprobe: tools.ffprobe)
            } catch let ffmpegError as DecodeError {
                throw DecodeError(
                    .unreadable,
                    "unsupported or damaged audio file (\(ffmpegError.message); libsndfile: \(error.message))")
            }
            // ffprobe reports what the file declares: a length beyond 64 bits of frames (or not
            // finite) is unknown, not a trap.
            let frames = reader.duration.flatMap { Int64(exactly: ($0 * Double(reader.format.sampleRate)).rounded()) }
            return Source(format: reader.format, frames: frames, read: { try reader.read(maxFrames: $0) }, seek: nil)
        }
    }

    func check(_ format: AudioFormat, frames: Int64?) throws {
        guard format.channels >= 1 else { throw DecodeError(.outOfBounds, "the file declares no audio channels") }
        guard format.channels <= configuration.maxChannels else {
            throw DecodeError(
                .outOfBounds, "\(format.channels) channels is more than maxChannels (\(configuration.maxChannels))")
        }
        guard Self.sampleRates.contains(format.sampleRate) else {
            throw DecodeError(.outOfBounds, "sample rate \(format.sampleRate) Hz is outside 1 Hz…768 kHz")
        }
        if let frames {
            guard frames >= 0, frames != Int64.max else {
                throw DecodeError(.outOfBounds, "the file's length is unknown")
            }
            let hours = Double(frames) / Double(format.sampleRate) / 3600
            guard hours <= configuration.maxHours else {
                throw DecodeError(
                    .outOfBounds,
                    String(
                        format: "the file declares %.1f hours of audio, more than maxHours (%g)", hours,
                        configuration.maxHours))
            }
        }
    }
}
