import Foundation
import VoxCore
import VoxFormats

extension StageDeclarationKey where Value == String {
    /// The extension of the audio files a writer writes (`wav`, `m4a`): what `write-replies` names
    /// the spoken replies' files with.
    static var audioFileExtension: Self { Self("audioFileExtension") }
}

/// `write-replies`: Speech | Reply → Artifact. Collects an item's turns and, at end of input,
/// writes `<id>.json`: every turn with its start, end, transcription, reply and the spoken
/// reply's file, in the field names the tutor bot's REST API answers with (`success`,
/// `transcription`, `reply`, `audio`) so existing clients can read it. With `embedAudio`, each
/// turn's `audio` is the spoken reply as a base64 16-bit WAV.
public struct WriteRepliesStage: Stage {
    public enum Input: StageInput {
        case speech(Speech)
        case reply(Reply)

        public static let accepted: [PayloadType] = [.speech, .reply]

        public init?(payload: any Payload) {
            if let speech = payload.carried(Speech.self) {
                self = .speech(speech)
            } else if let reply = payload.carried(Reply.self) {
                self = .reply(reply)
            } else {
                return nil
            }
        }
    }

    public typealias Output = Artifact

    public struct Configuration: Sendable {
        public var embedAudio: Bool
        /// The id of the write-audio (or write-wav) stage that writes the spoken replies, to name their files.
        public var audioFrom: String?
    }

    public static let kind = "write-replies"
    public static let summary = "Writes one JSON per item: every turn's times, transcription, reply and spoken reply."
    /// Each option, declared once.
    public enum Option {
        public static let embedAudio = StageOption<Bool>(
            "embedAudio", .boolean, default: false,
            help: "Put each spoken reply in the JSON as a base64 WAV (`audio`).")
        public static let audioFrom = StageOption<String?>(
            "audioFrom", .stage(["write-audio", "write-wav"]),
            help: "Id of the write-audio (or write-wav) stage writing the spoken replies; each turn then names its "
                + "file (`audioFile`).")
    }

    public static let options: [OptionSpec] = [Option.embedAudio.spec, Option.audioFrom.spec]

    public static func configure(_ options: StageOptions) throws -> Configuration {
        Configuration(embedAudio: options[Option.embedAudio], audioFrom: options[Option.audioFrom])
    }

    public static func plannedOutputs(_ configuration: Configuration, id: String, input: PayloadType) -> [String] {
        ["\(id).json"]
    }

    public let id: String
    public let configuration: Configuration
    /// Redacts every key in use from what this writer writes.
    let secrets: Secrets
    /// The extension of the spoken replies' files: what the `audioFrom` stage declares.
    let audioExtension: String

    public init(id: String, configuration: Configuration, context: StageContext) {
        self.id = id
        secrets = context.secrets
        self.configuration = configuration
        audioExtension =
            context.provenance.stages.first { $0.id == configuration.audioFrom }?.declarations[.audioFileExtension]
            ?? "wav"
    }

    struct Turn: Encodable {
        var turn: Int
        var success = true
        var start: Double
        var end: Double
        var transcription: String
        var reply: String
        var audioFile: String?
        var audio: String?
    }

    struct Document: Encodable {
        var success = true
        var input: String
        var turns: [Turn]
    }

    public func run(_ input: Inbox<Input>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        var turns: [Turn] = []
        func r(_ x: Double) -> Double { (x * 1000).rounded() / 1000 }
        // The samples of a reply spoken in parts, before its last part (for embedAudio).
        var earlier: [Float] = []
        for try await value in input {
            let reply: Reply, speech: Speech?
            switch value {
            case .speech(var s):
                guard !s.audio.continues else {
                    if configuration.embedAudio { earlier += s.audio.samples }
                    continue
                }
                s.audio.samples = earlier + s.audio.samples
                earlier = []
                (reply, speech) = (s.reply, s)
            case .reply(let rep): (reply, speech) = (rep, nil)
            }
            let chunk = reply.transcript.chunk
            let file =
                speech != nil
                ? configuration.audioFrom.map {
                    ItemOutputs.fileName(stageID: $0, index: chunk.index, ext: audioExtension)
                }
                : nil
            let audio =
                configuration.embedAudio
                ? speech.map { WAVData.pcm16($0.audio.samples, format: $0.audio.format).base64EncodedString() } : nil
            turns.append(
                Turn(
                    turn: turns.count + 1, start: r(chunk.start), end: r(chunk.end),
                    transcription: reply.transcript.text, reply: reply.text, audioFile: file, audio: audio))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(Document(input: item.item.relativePath, turns: turns))
        let temp = try item.outputs.reserve(stageID: id, ext: "json")
        try await output.send(try await item.outputs.write(secrets.redact(data + Data("\n".utf8)), to: temp))
    }
}
