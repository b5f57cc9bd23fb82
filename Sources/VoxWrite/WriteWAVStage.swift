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
    }

    public static let kind = "write-wav"
    public static let summary = "Writes WAV files: one per stream of blocks, or one per chunk or speech."
    public static let options: [OptionSpec] = [
        OptionSpec("encoding", .choice(WAVEncoding.allCases.map(\.rawValue)), default: "pcm16", help: "Sample encoding: 16- or 24-bit PCM, or 32-bit float."),
    ]

    public static func configure(_ options: StageOptions) throws -> Configuration {
        Configuration(encoding: options.choice("encoding", as: WAVEncoding.self) ?? .pcm16)
    }

    public static func plannedOutputs(_ configuration: Configuration, id: String, input: PayloadType) -> [String] {
        [input == .audioBlock ? "\(id).wav" : "\(id)-NNNN.wav"]
    }

    public let id: String
    public let configuration: Configuration

    public init(id: String, configuration: Configuration, context: StageContext) {
        self.id = id
        self.configuration = configuration
    }

    public func run(_ input: Inbox<Input>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        var stream: (writer: SndFileWriter, temp: URL)?
        for try await value in input {
            switch value {
            case .block(let block):
                if stream == nil {
                    let temp = try item.outputs.reserve(stageID: id, ext: "wav")
                    stream = (try SndFileWriter(url: temp, format: block.format, encoding: configuration.encoding), temp)
                }
                guard let current = stream else { continue }
                guard block.format == current.writer.format else {
                    throw WriteError(.unsupported, "the stream changed format mid-way (\(current.writer.format) to \(block.format))")
                }
                try current.writer.write(block.samples)
            case .chunk(let chunk):
                let temp = try item.outputs.reserve(stageID: id, index: chunk.index, ext: "wav")
                let writer = try SndFileWriter(url: temp, format: chunk.format, encoding: configuration.encoding)
                try writer.write(chunk.samples)
                try writer.close()
                try await output.send(try item.outputs.artifact(for: temp))
            }
        }
        if let stream {
            try stream.writer.close()
            try await output.send(try item.outputs.artifact(for: stream.temp))
        }
    }
}

