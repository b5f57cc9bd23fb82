import VoxCore

/// A speech-to-text engine behind the `transcribe` stage. Providers are chosen by the spec's
/// provider block (`{"name": "pocketsphinx", …}`); a new one is a type conforming to this and to
/// `ProviderKind`, and a line in `TranscribeStage.providers`.
public protocol TranscriptionProvider: Sendable {
    /// Checks models or endpoints before data flows; throws an error of category `.unavailable`.
    func prepare() async throws
    /// Starts one item: engines that keep state are borrowed here, per worker (made, when there
    /// is none idle, on the blocking executor: a model's state takes a while to set up).
    func beginItem() async throws -> any TranscriptionSession
}

/// One item's transcription: chunks in order, then `end()`.
public protocol TranscriptionSession {
    func transcribe(_ chunk: AudioChunk) async throws -> Transcript
    /// How the stage gathers consecutive chunks for `transcribe(batch:)`; nil (the default): each
    /// chunk is transcribed alone and sent on as soon as it is done.
    var batching: ChunkBatching? { get }
    /// Transcribes chunks gathered by `batching`: one Transcript per chunk, in order. The default
    /// transcribes them one by one.
    func transcribe(batch chunks: [AudioChunk]) async throws -> [Transcript]
    /// Returns borrowed engines; called on success and failure alike.
    func end()
}

extension TranscriptionSession {
    public var batching: ChunkBatching? { nil }

    public func transcribe(batch chunks: [AudioChunk]) async throws -> [Transcript] {
        var transcripts: [Transcript] = []
        for chunk in chunks { transcripts.append(try await transcribe(chunk)) }
        return transcripts
    }
}

/// Which consecutive chunks of an item are transcribed together: as many as fit, in order, into
/// `seconds` of audio with `gap` seconds between two of them. It looks at the chunks' lengths and
/// order only, never at when they arrive, so the batches (and the text) do not depend on timing.
public struct ChunkBatching: Sendable, Equatable {
    public var seconds: Double
    public var gap: Double

    public init(seconds: Double, gap: Double) {
        self.seconds = seconds
        self.gap = gap
    }

    /// Whether `next` joins `batch` (chunks not yet transcribed, in order; never empty).
    public func accepts(_ batch: [AudioChunk], _ next: AudioChunk) -> Bool {
        let length = batch.map(Self.seconds(of:)).reduce(0, +) + Double(batch.count) * gap + Self.seconds(of: next)
        return length <= seconds
    }

    /// A chunk's length from its frames (its span in the file may be rounded).
    public static func seconds(of chunk: AudioChunk) -> Double {
        chunk.format.sampleRate > 0 ? Double(chunk.frames) / Double(chunk.format.sampleRate) : 0
    }
}
