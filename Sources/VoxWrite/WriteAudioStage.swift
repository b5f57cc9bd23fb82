import Foundation
import VoxCore

/// `write-audio`: AudioBlock | AudioChunk | Speech → Artifact. A stream of blocks becomes one
/// file, `<id>.<ext>`, written as it streams; chunks (or the audio of speech) become one file
/// each, `<id>-NNNN.<ext>`. Formats: wav, flac, mp3, ogg (Vorbis) and opus through libsndfile,
/// m4a (AAC) through ffmpeg from a temporary WAV at the end of each file. Every file is written
/// to a temporary name and moved into place when the item succeeds. Sends one Artifact per file.
public struct WriteAudioStage: Stage {
    /// The audio an audio writer takes.
    public enum Input: StageInput {
        case block(AudioBlock)
        case chunk(AudioChunk)

        public static let accepted: [PayloadType] = [.audioBlock, .audioChunk]

        public init?(payload: any Payload) {
            if let block = payload.carried(AudioBlock.self) {
                self = .block(block)
            } else if let chunk = payload.carried(AudioChunk.self) {
                self = .chunk(chunk)
            } else {
                return nil
            }
        }
    }

    public typealias Output = Artifact

    public struct Configuration: Sendable {
        public var encoding: AudioEncoding
        /// Converts to this rate on the way out (libsoxr); nil keeps the input's, or for a codec
        /// that cannot take it (opus at 44.1 kHz), 48 kHz.
        public var rate: Int?
    }

    public static let kind = "write-audio"
    public static let summary =
        "Writes audio files (wav, flac, mp3, ogg, opus, m4a): one per stream of blocks, or one per chunk or speech."
    /// Each option, declared once.
    public enum Option {
        public static let format = StageOption<AudioFileFormat>(
            "format", default: .wav,
            help: "File format: wav, flac, mp3, ogg (Vorbis), opus (Ogg Opus), m4a (AAC, encoded by ffmpeg).")
        public static let encoding = StageOption<WAVEncoding>(
            "encoding", default: .pcm16,
            help: "wav, flac: sample encoding, 16- or 24-bit PCM, or 32-bit float (wav only)."
        ).only(where: format, is: .wav, .flac)
        public static let rate = StageOption<Int?>(
            "rate", .integer(8000...192_000),
            help: "Sample rate of the files (converted with libsoxr); absent keeps the input's (opus, mp3: 48 kHz "
                + "when the codec cannot take it).")
        public static let quality = StageOption<Double?>(
            "quality", .number(0...1),
            help: "mp3, ogg, opus: 0 smallest … 1 best (libsndfile's compression level turned round); flac: "
                + "how hard to compress. Absent: the library's default."
        ).only(where: format, is: .flac, .mp3, .ogg, .opus)
        public static let bitrateMode = StageOption<BitrateMode?>(
            "bitrateMode", .choice(BitrateMode.allCases.map(\.rawValue)),
            help: "mp3, opus: constant, average or variable bit rate."
        ).only(where: format, is: .mp3, .opus)
        public static let bitrate = StageOption<Int>(
            "bitrate", .integer(16...512), default: 96, help: "m4a: AAC bit rate in kbit/s."
        ).only(where: format, is: .m4a)
    }

    public static let options: [OptionSpec] = [
        Option.format.spec, Option.encoding.spec, Option.rate.spec, Option.quality.spec, Option.bitrateMode.spec,
        Option.bitrate.spec,
    ]

    public static func configure(_ options: StageOptions) throws -> Configuration {
        let format = options[Option.format]
        let sampleEncoding = options[Option.encoding]
        if format == .flac && sampleEncoding == .float32 {
            throw options.error(Option.encoding, "flac holds integer samples: pcm16 or pcm24")
        }
        let rate = options[Option.rate]
        if let rate, let rates = format.sampleRates, !rates.contains(rate) {
            throw options.error(
                Option.rate,
                "\(format.rawValue) takes \(rates.map(String.init).joined(separator: ", ")) Hz, not \(rate)")
        }
        let encoding = AudioEncoding(
            format: format, sampleEncoding: sampleEncoding, quality: options[Option.quality],
            bitrateMode: options[Option.bitrateMode], bitrate: options[Option.bitrate])
        return Configuration(encoding: encoding, rate: rate)
    }

    /// The format written, and by what, for provenance records.
    public static func provenance(_ configuration: Configuration) -> [String: JSONValue]? {
        let format = configuration.encoding.format
        return ["format": .string(format.ext), "encoder": .string(format == .m4a ? "ffmpeg aac" : "libsndfile")]
    }

    /// The extension of the files it writes, for a writer naming them (write-replies' `audioFrom`).
    public static func declarations(_ configuration: Configuration) -> StageDeclarations {
        StageDeclarations().declaring(.audioFileExtension, configuration.encoding.format.ext)
    }

    public static func plannedOutputs(_ configuration: Configuration, id: String, input: PayloadType) -> [String] {
        let ext = configuration.encoding.format.ext
        return [input == .audioBlock ? "\(id).\(ext)" : "\(id)-NNNN.\(ext)"]
    }

    public let id: String
    public let configuration: Configuration
    /// The encoding, rate and converter every file is written with.
    let audio: AudioOutput
    /// Where a chunk's file is encoded: off the cooperative pool (an m4a file waits for ffmpeg).
    let blocking: BlockingExecutor

    public init(id: String, configuration: Configuration, context: StageContext) throws {
        self.id = id
        self.configuration = configuration
        blocking = context.blocking
        audio = AudioOutput(
            encoding: configuration.encoding, rate: configuration.rate, rateConversion: context.rateConversion)
    }

    /// The files being written as their audio streams in, which live on the stage's lane.
    struct OpenFiles {
        var stream: OpenAudioFile?
        /// The file of the chunk index whose parts are coming in.
        var parts: (index: Int, file: OpenAudioFile)?
    }

    /// Writes what comes in. Encoding and writing (libsndfile, a resampler, ffmpeg for m4a at the
    /// end) run on a lane of the blocking executor, where the open files stay; the reservations and
    /// the artifacts are made here.
    public func run(_ input: Inbox<Input>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        let ext = configuration.encoding.format.ext
        let audio = audio
        let lane = blocking.lane(OpenFiles.self)
        try await lane.open { _ in (OpenFiles(), ()) }
        var streaming = false
        // The chunk index whose parts are coming in.
        var partsOf: Int?
        for try await value in input {
            switch value {
            case .block(let block):
                let temp = streaming ? nil : try item.outputs.reserve(stageID: id, ext: ext)
                streaming = true
                try await lane.run { files, _ in
                    if let temp { files.stream = try audio.open(temp, for: block.format) }
                    try files.stream?.write(block.samples, format: block.format)
                }
            case .chunk(let chunk):
                if let open = partsOf, open != chunk.index {
                    throw WriteError(.unsupported, "chunk \(chunk.index) came before the last part of chunk \(open)")
                }
                if partsOf == nil && !chunk.continues {
                    let temp = try item.outputs.reserve(stageID: id, index: chunk.index, ext: ext)
                    try await blocking.run { try audio.write(chunk, to: temp) }
                    try await output.send(try await item.outputs.artifact(for: temp))
                    continue
                }
                let temp = partsOf == nil ? try item.outputs.reserve(stageID: id, index: chunk.index, ext: ext) : nil
                partsOf = chunk.continues ? chunk.index : nil
                let finished = try await lane.run { files, _ -> URL? in
                    guard let file = try files.parts?.file ?? temp.map({ try audio.open($0, for: chunk.format) })
                    else { throw WriteError(.writeFailed, "chunk \(chunk.index): no file open for its parts") }
                    try file.write(chunk.samples, format: chunk.format)
                    files.parts = chunk.continues ? (chunk.index, file) : nil
                    return chunk.continues ? nil : try file.finish()
                }
                if let finished { try await output.send(try await item.outputs.artifact(for: finished)) }
            }
        }
        // Input that ended mid-way through a chunk's parts still gives what came.
        let ended = try await lane.run { files, _ in
            defer { files = OpenFiles() }
            return try [files.parts?.file, files.stream].compactMap { try $0?.finish() }
        }
        for url in ended { try await output.send(try await item.outputs.artifact(for: url)) }
    }
}

/// `write-wav`: `write-audio` fixed to WAV, under the name specs written before it use.
public struct WriteWAVStage: Stage {
    public typealias Input = WriteAudioStage.Input
    public typealias Output = Artifact
    public typealias Configuration = WriteAudioStage.Configuration

    public static let kind = "write-wav"
    public static let summary = "Writes WAV files: write-audio with format wav (the name older specs use)."
    public static let options = WriteAudioStage.options.filter { $0.name == "encoding" || $0.name == "rate" }

    public static func configure(_ options: StageOptions) throws -> Configuration {
        try WriteAudioStage.configure(options)
    }

    public static func plannedOutputs(_ configuration: Configuration, id: String, input: PayloadType) -> [String] {
        WriteAudioStage.plannedOutputs(configuration, id: id, input: input)
    }

    public static func declarations(_ configuration: Configuration) -> StageDeclarations {
        WriteAudioStage.declarations(configuration)
    }

    let writer: WriteAudioStage

    public init(id: String, configuration: Configuration, context: StageContext) throws {
        writer = try WriteAudioStage(id: id, configuration: configuration, context: context)
    }

    public func run(_ input: Inbox<Input>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        try await writer.run(input, output, item)
    }
}
