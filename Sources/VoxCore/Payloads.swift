import Foundation

/// The kinds of value that flow between stages, by name, each with the kinds a value of it
/// carries. The planner checks edges with these, before any audio is read. Open: a module declares
/// its own payload's type as a static member in an extension (VoxFieldService's `.agentTurn`),
/// without editing VoxCore.
public struct PayloadType: Sendable, Hashable, CustomStringConvertible {
    /// The name specs and messages use ("Transcript").
    public let rawValue: String
    /// The payload types a value of this type carries, itself first: a stage that takes a
    /// `Transcript` can be fed a `Reply`, which carries the transcript it answers.
    public let carried: [PayloadType]

    /// A payload type named `name` whose values carry a value of each of `carrying` (and what
    /// those carry).
    public init(_ name: String, carrying: [PayloadType] = []) {
        rawValue = name
        var carried: [PayloadType] = []
        for type in carrying.flatMap(\.carried) where !carried.contains(type) { carried.append(type) }
        self.carried = [PayloadType(named: name)] + carried
    }

    private init(named name: String) {
        rawValue = name
        carried = []
    }

    public static let inputFile = PayloadType("InputFile")
    public static let audioBlock = PayloadType("AudioBlock")
    public static let audioChunk = PayloadType("AudioChunk")
    public static let transcript = PayloadType("Transcript", carrying: [.audioChunk])
    public static let reply = PayloadType("Reply", carrying: [.transcript])
    public static let speech = PayloadType("Speech", carrying: [.audioChunk, .reply])
    public static let artifact = PayloadType("Artifact")

    public var description: String { rawValue }

    /// Whether a value of this type can feed an input that takes `other`.
    public func carries(_ other: PayloadType) -> Bool { carried.contains(other) }

    /// Types are the same by name.
    public static func == (a: PayloadType, b: PayloadType) -> Bool { a.rawValue == b.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}

/// A value that flows on a channel between stages.
public protocol Payload: Sendable {
    static var payloadType: PayloadType { get }
    /// The payload of type `T` this value carries, itself included (see `PayloadType.carried`).
    func carried<T: Payload>(_ type: T.Type) -> T?
    /// Whether this value is a leading part of one that goes on in the next value (a reply spoken
    /// sentence by sentence): a stage that takes what only the last part carries skips it.
    var isLeadingPart: Bool { get }
}

extension Payload {
    public func carried<T: Payload>(_ type: T.Type) -> T? { self as? T }
    public var isLeadingPart: Bool { false }
}

/// Sample rate and channel count of PCM audio.
public struct AudioFormat: Sendable, Hashable, Codable, CustomStringConvertible {
    public var sampleRate: Int
    public var channels: Int

    public init(sampleRate: Int, channels: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    public var description: String { "\(sampleRate) Hz, \(channels) ch" }
}

/// One audio file to process: the unit of work ("item"), or one part of it (`ItemPart`).
public struct InputFile: Payload, Hashable {
    public static let payloadType = PayloadType.inputFile

    /// Where the file is.
    public var url: URL
    /// Its path relative to the INPUT root it was found under (the file name for a file given
    /// directly), with its extension.
    public var relativePath: String
    /// The item's output folder, relative to the output directory: the relative path without its
    /// extension, or with it where two inputs would otherwise share a folder.
    public var outputName: String
    /// The part of the file this item is, when the file became several items (`ItemExpansion`).
    public var part: ItemPart?

    public init(url: URL, relativePath: String, outputName: String, part: ItemPart? = nil) {
        self.url = url
        self.relativePath = relativePath
        self.outputName = outputName
        self.part = part
    }

    /// `path` or `path#part#part` for messages and reports.
    public var displayName: String {
        ([relativePath] + (part?.names ?? [])).joined(separator: "#")
    }

    /// The report sidecar's place: `X.json` beside `X.<ext>`.
    public var sidecarURL: URL { url.deletingPathExtension().appendingPathExtension("json") }
}

/// A run of PCM frames (Float32, interleaved) from a stream, with its format and the offset of
/// its first frame in the source. A stream of blocks keeps memory flat on a 3-hour file.
public struct AudioBlock: Payload {
    public static let payloadType = PayloadType.audioBlock
    public var format: AudioFormat
    /// Interleaved samples, `frames * format.channels` of them.
    public var samples: [Float]
    /// Index of this block's first frame in the stream (in `format.sampleRate` frames).
    public var frameOffset: Int64

    public init(format: AudioFormat, samples: [Float], frameOffset: Int64) {
        self.format = format
        self.samples = samples
        self.frameOffset = frameOffset
    }

    public var frames: Int { format.channels > 0 ? samples.count / format.channels : 0 }
    /// Start of this block in seconds from the start of the source.
    public var startSeconds: Double { Double(frameOffset) / Double(format.sampleRate) }
}

/// A bounded segment of audio cut from a stream, with its span in the original file.
public struct AudioChunk: Payload {
    public static let payloadType = PayloadType.audioChunk

    /// Why a chunk was cut where it was.
    public enum Cut: String, Sendable, Codable {
        case window, voice, tail, whole, synthesized
        /// One speaker's turn (`chunk` mode `speakers`).
        case speaker
        /// No audio: a line or segment of a text input (`read-text`).
        case text
    }

    public var format: AudioFormat
    public var samples: [Float]
    /// Start and end in seconds, in the original file's time.
    public var start: Double
    public var end: Double
    /// 0-based position of this chunk in its item.
    public var index: Int
    public var cut: Cut
    /// The audio of this index goes on in the next chunk: speech made sentence by sentence comes
    /// as consecutive chunks of one index, all but the last continuing. A writer makes them one file.
    public var continues: Bool
    /// Who speaks in the chunk, when a speaker chunker cut it: an enrolled voice's name, else
    /// `Speaker N` in order of first appearance; nil for every other cut. Transcripts (and what
    /// they carry on to) keep it with the chunk.
    public var speaker: String?

    public init(
        format: AudioFormat, samples: [Float], start: Double, end: Double, index: Int, cut: Cut,
        continues: Bool = false, speaker: String? = nil
    ) {
        self.format = format
        self.samples = samples
        self.start = start
        self.end = end
        self.index = index
        self.cut = cut
        self.continues = continues
        self.speaker = speaker
    }

    public var frames: Int { format.channels > 0 ? samples.count / format.channels : 0 }
}

/// A word with its time span (original file's time) and the engine's confidence (0…1).
public struct Word: Sendable, Hashable, Codable {
    public var text: String
    public var start: Double
    public var end: Double
    public var confidence: Double?

    public init(text: String, start: Double, end: Double, confidence: Double?) {
        self.text = text
        self.start = start
        self.end = end
        self.confidence = confidence
    }
}

/// A span of a transcript with times of its own (Whisper's segments within a chunk), in the
/// original file's time.
public struct TranscriptSegment: Sendable, Hashable, Codable {
    public var text: String
    public var start: Double
    public var end: Double

    public init(text: String, start: Double, end: Double) {
        self.text = text
        self.start = start
        self.end = end
    }
}

/// Text recognised in one chunk.
public struct Transcript: Payload {
    public static let payloadType = PayloadType.transcript
    public var chunk: AudioChunk
    public var text: String
    public var words: [Word]
    public var language: String?
    public var provider: String
    public var model: String?
    /// Spans within the chunk with their own times, where the engine gives them (a 30-s chunk
    /// holds several subtitle lines); empty: the chunk is one span.
    public var segments: [TranscriptSegment]

    public init(
        chunk: AudioChunk, text: String, words: [Word], language: String?, provider: String, model: String?,
        segments: [TranscriptSegment] = []
    ) {
        self.chunk = chunk
        self.text = text
        self.words = words
        self.language = language
        self.provider = provider
        self.model = model
        self.segments = segments
    }

    public func carried<T: Payload>(_ type: T.Type) -> T? {
        (self as? T) ?? (chunk as? T)
    }
}

/// A reply to one transcript.
public struct Reply: Payload {
    public static let payloadType = PayloadType.reply
    public var transcript: Transcript
    public var text: String

    public init(transcript: Transcript, text: String) {
        self.transcript = transcript
        self.text = text
    }

    public func carried<T: Payload>(_ type: T.Type) -> T? {
        (self as? T) ?? transcript.carried(T.self)
    }
}

/// Synthesized speech for one reply, or one part of it: a long reply is spoken sentence by sentence
/// and its audio streams downstream as Speech values whose `audio` continues in the next one.
/// Every part carries its audio (the chunk a writer takes); the reply and transcript are carried by
/// the last part only, so a stage that takes those sees each reply once.
public struct Speech: Payload {
    public static let payloadType = PayloadType.speech
    public var audio: AudioChunk
    public var reply: Reply

    public init(audio: AudioChunk, reply: Reply) {
        self.audio = audio
        self.reply = reply
    }

    public func carried<T: Payload>(_ type: T.Type) -> T? {
        (self as? T) ?? (audio as? T) ?? (audio.continues ? nil : reply.carried(T.self))
    }

    public var isLeadingPart: Bool { audio.continues }
}

/// A file a writer produced: where it is (relative to the output directory), its size and its
/// SHA-256.
public struct Artifact: Payload, Codable, Hashable {
    public static let payloadType = PayloadType.artifact
    public var path: String
    public var bytes: Int64
    public var sha256: String

    public init(path: String, bytes: Int64, sha256: String) {
        self.path = path
        self.bytes = bytes
        self.sha256 = sha256
    }
}
