import Foundation
import VoxCore

/// `write-wav`: AudioBlock | AudioChunk | Speech → Artifact. A stream of blocks becomes one file,
/// `<id>.wav`, written as it streams; chunks (or the audio of speech) become one file each,
/// `<id>-NNNN.wav`. Every file is written to a temporary name and moved into place when the item
/// succeeds. Sends one Artifact per file.
public struct WriteWAVStage: Stage {
    /// The audio a WAV writer takes.
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
        public var encoding: WAVEncoding
        /// Converts to this rate on the way out (libsoxr); nil keeps the input's.
        public var rate: Int?
    }

    public static let kind = "write-wav"
    public static let summary = "Writes WAV files: one per stream of blocks, or one per chunk or speech."
    public static let options: [OptionSpec] = [
        OptionSpec(
            "encoding", .choice(WAVEncoding.allCases.map(\.rawValue)), default: "pcm16",
            help: "Sample encoding: 16- or 24-bit PCM, or 32-bit float."),
        OptionSpec(
            "rate", .integer(8000...192_000),
            help: "Sample rate of the files (converted with libsoxr); absent keeps the input's."),
    ]

    public static func configure(_ options: StageOptions) throws -> Configuration {
        Configuration(encoding: options.choice("encoding", as: WAVEncoding.self) ?? .pcm16, rate: options.int("rate"))
    }

    public static func plannedOutputs(_ configuration: Configuration, id: String, input: PayloadType) -> [String] {
        [input == .audioBlock ? "\(id).wav" : "\(id)-NNNN.wav"]
    }

    public let id: String
    public let configuration: Configuration
    let rateConversion: (any RateConversion)?

    public init(id: String, configuration: Configuration, context: StageContext) throws {
        self.id = id
        self.configuration = configuration
        rateConversion = context.rateConversion
        if configuration.rate != nil && rateConversion == nil {
            throw VoxError(.internal, "write-wav '\(id)': a rate was set but no rate converter was provided")
        }
    }

    /// A converter from `format` to the configured rate, or nil when none is needed.
    func converter(for format: AudioFormat) throws -> (any RateConverter)? {
        guard let rate = configuration.rate, rate != format.sampleRate, let rateConversion else { return nil }
        return try rateConversion.converter(channels: format.channels, from: format.sampleRate, to: rate)
    }

    func outputFormat(_ format: AudioFormat) -> AudioFormat {
        AudioFormat(sampleRate: configuration.rate ?? format.sampleRate, channels: format.channels)
    }

    public func run(_ input: Inbox<Input>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        var stream: (writer: SndFileWriter, temp: URL, input: AudioFormat, converter: (any RateConverter)?)?
        for try await value in input {
            switch value {
            case .block(let block):
                if stream == nil {
                    let temp = try item.outputs.reserve(stageID: id, ext: "wav")
                    stream = (
                        try SndFileWriter(
                            url: temp, format: outputFormat(block.format), encoding: configuration.encoding), temp,
                        block.format, try converter(for: block.format)
                    )
                }
                guard let current = stream else { continue }
                guard block.format == current.input else {
                    throw WriteError(
                        .unsupported, "the stream changed format mid-way (\(current.input) to \(block.format))")
                }
                try current.writer.write(try current.converter?.process(block.samples) ?? block.samples)
            case .chunk(let chunk):
                let temp = try item.outputs.reserve(stageID: id, index: chunk.index, ext: "wav")
                let writer = try SndFileWriter(
                    url: temp, format: outputFormat(chunk.format), encoding: configuration.encoding)
                try writer.write(try converter(for: chunk.format)?.convertAll(chunk.samples) ?? chunk.samples)
                try writer.close()
                try await output.send(try item.outputs.artifact(for: temp))
            }
        }
        if let stream {
            if let tail = try stream.converter?.flush() { try stream.writer.write(tail) }
            try stream.writer.close()
            try await output.send(try item.outputs.artifact(for: stream.temp))
        }
    }
}
