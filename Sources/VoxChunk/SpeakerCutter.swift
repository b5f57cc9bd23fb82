import Foundation
import VoxCore

/// How mode `speakers` finds and labels turns.
public struct SpeakerSettings: Sendable {
    /// How many speakers the item has; nil: as many as `clusterThreshold` finds.
    public var speakers: Int?
    /// sherpa-onnx's clustering threshold when `speakers` is nil (larger: fewer speakers).
    public var clusterThreshold: Double
    /// The cosine similarity of mean embeddings from which two speakers are one (a speaker of an
    /// earlier block, an enrolled voice).
    public var match: Double
    /// Turns shorter than this go to the neighbour next to them.
    public var minTurn: Double
    /// Seconds of the silence around a turn kept in its chunk (at most half-way to the next turn).
    public var padding: Double
    public var overlap: OverlapPolicy
    /// Longer turns are cut (at their quietest point) into chunks of at most this.
    public var maxSeconds: Double
    /// The audio diarized at once: what memory holds, whatever the input's length.
    public var blockSeconds: Double
    /// The segmentation window's hop, as a fraction of its 10 s.
    public var windowShift: Double
    /// Enrolled voices: names and clips (16-bit PCM WAV), resolved against the spec's folder.
    public var voices: [VoiceClip]
    /// The JSON path of the `voices` option, for messages about a clip.
    public var voicesPath: String
    public var models: SpeakerModels

    /// An enrolled voice's name and clip.
    public struct VoiceClip: Sendable, Equatable {
        public var name: String
        public var file: URL
    }

    /// Turns of one speaker this close are one turn; a short turn goes to a neighbour this close.
    static let joinGap = 0.5
    /// The most of a block's speech of one speaker its embedding is computed from.
    static let embeddingSeconds = 60.0
    /// Turns at least this long are checked on their own against the enrolled voices.
    static let checkSeconds = 1.0
}

/// Mode `speakers`: a stream of 16-kHz mono blocks in, one chunk per speaker turn out, labelled.
/// sherpa-onnx's diarization takes a whole signal, so the stream is diarized `blockSeconds` at a
/// time; a turn running into the end of a block is held back and diarized again with the next
/// one. Each block's speakers are matched to the item's so far by their mean embeddings
/// (`SpeakerBook`). Memory holds one block and the item's speakers' embeddings, whatever the
/// input's length. Calls are sequential (one item's stream), on the blocking executor's thread.
final class SpeakerCutter: @unchecked Sendable {
    let format: AudioFormat
    private let settings: SpeakerSettings
    private let diarizer: Diarizer
    private let embedder: SpeakerEmbedder
    private let blocking: BlockingExecutor
    private var book: SpeakerBook
    private var buffer: [Float] = []
    /// Stream frame of `buffer`'s first sample.
    private var bufferStart: Int64?
    private var index = 0
    private let blockFrames: Int
    /// Threads the diarization and the block speakers' embeddings run on.
    private let lanes: Int
    /// Each item speaker's talk time and turns so far (`ItemFacts[.speakerTalk]`).
    private(set) var talk = SpeakerTally(joinGap: SpeakerSettings.joinGap)

    init(format: AudioFormat, settings: SpeakerSettings, engines: SpeakerEngines, blocking: BlockingExecutor) throws {
        guard format == AudioFormat(sampleRate: SpeakerModels.sampleRate, channels: 1) else {
            throw ChunkError(.unsupported, "mode speakers takes 16 kHz mono, not \(format)")
        }
        self.format = format
        self.settings = settings
        embedder = engines.embedder
        self.blocking = blocking
        // Segmentation and embeddings on as many threads as the process has cores to itself
        // (CPUBudget): the turns are the same on any number.
        lanes = CPUReader().budget().threads
        diarizer = Diarizer(
            segmentation: engines.segmentation, embedder: engines.embedder, speakers: settings.speakers ?? 0,
            threshold: settings.clusterThreshold, windowShift: settings.windowShift, lanes: lanes)
        book = SpeakerBook(threshold: settings.match, limit: settings.speakers, voices: engines.voices)
        blockFrames = Int(settings.blockSeconds * Double(format.sampleRate))
    }

    func push(_ block: AudioBlock) async throws -> [AudioChunk] {
        if bufferStart == nil { bufferStart = block.frameOffset }
        buffer.append(contentsOf: block.samples)
        var out: [AudioChunk] = []
        while buffer.count >= blockFrames {
            out += try await blocking.run { try self.diarize(final: false) }
        }
        return out
    }

    func finish() async throws -> [AudioChunk] {
        guard !buffer.isEmpty else { return [] }
        return try await blocking.run { try self.diarize(final: true) }
    }

    /// Diarizes the buffer's first block (all of it at the end), labels the turns that end
    /// before the cut, and keeps what follows the cut for the next block.
    private func diarize(final: Bool) throws -> [AudioChunk] {
        let rate = Double(format.sampleRate)
        let frames = final ? buffer.count : blockFrames
        let seconds = Double(frames) / rate
        let segments = try diarizer.segments(buffer[0..<frames]).map {
            SpeakerTurn(start: max(0, $0.start), end: min(seconds, $0.end), speaker: $0.speaker)
        }
        var turns = SpeakerTurns.resolveOverlaps(segments, policy: settings.overlap)
        turns = SpeakerTurns.mergeShort(turns, minTurn: settings.minTurn, joinGap: SpeakerSettings.joinGap)
        let cut = final ? seconds : Self.cut(turns, seconds: seconds)
        turns = turns.filter { $0.start < cut }.map {
            SpeakerTurn(start: $0.start, end: min($0.end, cut), speaker: $0.speaker)
        }
        let labelled = label(turns)
        let start = bufferStart ?? 0
        for turn in labelled.turns {
            let offset = Double(start) / rate
            talk.add(labelled.labels[turn.speaker], start: offset + turn.start, end: offset + turn.end)
        }
        var chunks: [AudioChunk] = []
        for turn in Self.padded(labelled.turns, by: settings.padding, end: cut) {
            let from = Int((turn.start * rate).rounded()), to = min(frames, Int((turn.end * rate).rounded()))
            for piece in Self.pieces(buffer, from: from, to: to, maxFrames: Int(settings.maxSeconds * rate)) {
                chunks.append(
                    AudioChunk(
                        format: format, samples: Array(buffer[piece]),
                        start: Double(start + Int64(piece.lowerBound)) / rate,
                        end: Double(start + Int64(piece.upperBound)) / rate, index: index, cut: .speaker,
                        speaker: labelled.labels[turn.speaker]))
                index += 1
            }
        }
        let kept = final ? buffer.count : min(buffer.count, Int((cut * rate).rounded()))
        buffer.removeFirst(kept)
        bufferStart = start + Int64(kept)
        // A block's windows, embeddings and copies of its audio are freed now; their pages go
        // back, so the next block does not start from a heap with holes in it.
        Heap.returnFreeMemory()
        return chunks
    }

    /// `turns` each widened by up to `padding` on either side, into the silence around it but at
    /// most half-way to the next turn (and not before the block's start or after `end`): a
    /// recogniser hears a turn's first and last sounds better with a little context.
    static func padded(_ turns: [SpeakerTurn], by padding: Double, end: Double) -> [SpeakerTurn] {
        turns.indices.map { i in
            var turn = turns[i]
            let before = i > 0 ? turns[i - 1].end : 0
            let after = i + 1 < turns.count ? turns[i + 1].start : end
            turn.start = max(turn.start - padding, turn.start - max(0, turn.start - before) / 2)
            turn.end = min(turn.end + padding, turn.end + max(0, after - turn.end) / 2)
            return turn
        }
    }

    /// Where a block that the stream goes on after is cut: before the turn that runs into its
    /// last second, and before the turns it follows without a pause (a change of speaker without
    /// a pause is least sure at a block's end, where fewer windows hear it): they are diarized
    /// again with the next block, so a turn is not split at a block's end. Not before the block's
    /// second half; else a second before the end.
    static func cut(_ turns: [SpeakerTurn], seconds: Double) -> Double {
        let margin = 1.0
        guard var i = turns.indices.last, turns[i].end > seconds - margin, turns[i].start > seconds / 2 else {
            return seconds - margin
        }
        while i > 0, turns[i].start - turns[i - 1].end < SpeakerSettings.joinGap, turns[i - 1].start > seconds / 2 {
            i -= 1
        }
        return turns[i].start
    }

    /// The turns with item speakers (indexes into `labels`): each block speaker's embedding from
    /// its speech (up to `embeddingSeconds`) is matched in the book, in order of its first turn;
    /// the turns of a speaker with too little speech for an embedding go to the turn before (or
    /// after) them. Consecutive turns of one item speaker are joined.
    private func label(_ turns: [SpeakerTurn]) -> (turns: [SpeakerTurn], labels: [String]) {
        let rate = Double(format.sampleRate)
        var order: [Int] = []
        for turn in turns where !order.contains(turn.speaker) { order.append(turn.speaker) }
        let speech = order.map { speaker in
            var samples: [Float] = []
            var spoken = 0.0
            for turn in turns where turn.speaker == speaker && spoken < SpeakerSettings.embeddingSeconds {
                let length = min(turn.duration, SpeakerSettings.embeddingSeconds - spoken)
                let from = Int((turn.start * rate).rounded()), to = Int(((turn.start + length) * rate).rounded())
                samples += buffer[from..<min(to, buffer.count)]
                spoken += length
            }
            return samples
        }
        let embedder = embedder
        let embeddings = Diarizer.map(lanes: lanes, count: order.count) { embedder.embedding(speech[$0]) }
        var embedded: [(speaker: Int, embedding: [Float], seconds: Double)] = []
        for (speaker, embedding) in zip(order, embeddings) {
            if let embedding {
                embedded.append(
                    (speaker, embedding, turns.filter { $0.speaker == speaker }.map(\.duration).reduce(0, +)))
            }
        }
        let items = book.assign(embedded.map { ($0.embedding, $0.seconds) })
        var item: [Int: Int] = [:]
        for (i, e) in embedded.enumerated() { item[e.speaker] = items[i] }
        var labelled: [SpeakerTurn] = []
        for (i, turn) in turns.enumerated() {
            let own = item[turn.speaker]
            let neighbour = labelled.last?.speaker ?? turns[(i + 1)...].lazy.compactMap { item[$0.speaker] }.first
            guard let speaker = own ?? neighbour else { continue }
            labelled.append(SpeakerTurn(start: turn.start, end: turn.end, speaker: speaker))
        }
        if !book.voices.isEmpty {
            // Each turn long enough for an embedding of its own is checked against the enrolled voices.
            for i in labelled.indices where labelled[i].duration >= SpeakerSettings.checkSeconds {
                let length = min(labelled[i].duration, SpeakerSettings.embeddingSeconds)
                let from = Int((labelled[i].start * rate).rounded())
                let to = min(buffer.count, Int(((labelled[i].start + length) * rate).rounded()))
                guard to > from, let embedding = embedder.embedding(Array(buffer[from..<to])) else { continue }
                labelled[i].speaker = book.checked(embedding, current: labelled[i].speaker)
            }
        }
        return (
            SpeakerTurns.mergeShort(labelled, minTurn: 0, joinGap: SpeakerSettings.joinGap),
            book.speakers.map(\.label)
        )
    }

    /// `from..<to` of `samples` in pieces of at most `maxFrames`, each cut at the quietest 20 ms
    /// of its last 40 %.
    static func pieces(_ samples: [Float], from: Int, to: Int, maxFrames: Int) -> [Range<Int>] {
        var pieces: [Range<Int>] = []
        var start = from
        let frame = 320
        while to - start > maxFrames {
            var best = start + maxFrames, quietest = Float.infinity
            var f = start + maxFrames * 6 / 10
            while f + frame <= start + maxFrames {
                var energy: Float = 0
                for s in samples[f..<f + frame] { energy += s * s }
                if energy < quietest {
                    quietest = energy
                    best = f + frame / 2
                }
                f += frame
            }
            pieces.append(start..<best)
            start = best
        }
        if to > start { pieces.append(start..<to) }
        return pieces
    }
}
