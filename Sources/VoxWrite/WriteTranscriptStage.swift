import Foundation
import VoxCore

/// `write-transcript`: Transcript (or anything carrying one: Reply, Speech) → Artifact. Collects
/// an item's transcripts and, at end of input, writes `<id>.<format>` for each format asked:
/// txt, srt, vtt, tsv, json (whisper's shapes), rttm (speaker turns). Times are in the original file's time. Chunks
/// that held no words are left out.
public struct WriteTranscriptStage: Stage {
    public typealias Input = Transcript
    public typealias Output = Artifact

    public struct Configuration: Sendable {
        public var formats: [TranscriptFormat]
    }

    public static let kind = "write-transcript"
    public static let summary = "Writes transcripts as txt, srt, vtt, tsv, whisper-style json and RTTM speaker turns."
    /// Each option, declared once.
    public enum Option {
        public static let formats = StageOption<[TranscriptFormat]>(
            "formats", .choices(TranscriptFormat.allCases.map(\.rawValue)), default: [.txt, .srt, .json],
            help: "Files to write, one per format.")
    }

    public static let options: [OptionSpec] = [Option.formats.spec]

    public static func configure(_ options: StageOptions) throws -> Configuration {
        var formats: [TranscriptFormat] = []
        for f in options[Option.formats] where !formats.contains(f) { formats.append(f) }
        return Configuration(formats: formats)
    }

    public static func plannedOutputs(_ configuration: Configuration, id: String, input: PayloadType) -> [String] {
        configuration.formats.map { "\(id).\($0.rawValue)" }
    }

    public let id: String
    public let configuration: Configuration
    /// Redacts every key in use from what this writer writes.
    let secrets: Secrets

    public init(id: String, configuration: Configuration, context: StageContext) {
        self.id = id
        secrets = context.secrets
        self.configuration = configuration
    }

    public func run(_ input: Inbox<Transcript>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        var segments: [Transcript] = []
        var seen = Set<Int>()
        for try await transcript in input where !transcript.text.isEmpty {
            // Several replies may carry one transcript; write it once.
            if seen.insert(transcript.chunk.index).inserted { segments.append(transcript) }
        }
        segments.sort { $0.chunk.start < $1.chunk.start }
        let recording = URL(fileURLWithPath: item.item.outputName).lastPathComponent
        for format in configuration.formats {
            let temp = try item.outputs.reserve(stageID: id, ext: format.rawValue)
            try await output.send(
                try await item.outputs.write(
                    Data(secrets.redact(format.render(segments, file: recording)).utf8), to: temp))
        }
    }
}
