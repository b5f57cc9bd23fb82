import Foundation
import VoxCore

// Packing (`packSeconds`): Whisper encodes a full 30-s window however short the audio, so a 3-s
// turn costs as much encoder work as 30 s of speech. Consecutive turns of an item are laid end to
// end with a second of silence between them, decoded as one window, and each word goes back to
// the turn its alignment time falls in:
//
//   chunks   [ 3 s ]      [ 5 s ]   [ 2 s ]
//   window   [ 3 s ]·1 s·[ 5 s ]·1 s·[ 2 s ]      one whisper_full call
//   words    w w w        w w w w     w w      → one Transcript per chunk, times in the file
//
// A chunk whose words cannot be placed cleanly (one heard in a gap, one spanning two chunks, one
// without a time), that got no words, or whose words repeat themselves is decoded alone, as
// without packing, and so are the chunks on both sides of a word aligned far from its segment's
// timestamps; so is every chunk of a window that repeats itself or is unsure.

extension WhisperProvider {
    /// Seconds of silence between two chunks packed into one window.
    static let packGapSeconds = 1.0
    /// How far (seconds) into a gap a word's alignment time may fall and still belong to the chunk
    /// beside it: alignment times are in 20-ms frames and can run a little early or late.
    static let packTolerance = 0.3
    /// How far (seconds) a word's alignment time may lie outside its segment's own timestamps.
    /// Further off, the alignment went astray (seen: a turn's last sentence, its segment at 2.7–4.1 s,
    /// aligned at 12.2 s into the next turn), and the chunks on both sides are decoded alone. On
    /// the 10-minute lesson (1,490 words) the alignment lay at most 1.4 s outside its segment.
    static let packAlignmentSlack = 3.0

    /// Chunks laid end to end with `gap` samples of silence between two.
    struct PackedWindow: Sendable {
        var samples: [Float]
        /// Each chunk's span in the window, in seconds.
        var spans: [ClosedRange<Double>]

        init(_ chunks: [[Float]], gap: Int) {
            var samples: [Float] = []
            samples.reserveCapacity(chunks.map(\.count).reduce(0, +) + gap * max(0, chunks.count - 1))
            var spans: [ClosedRange<Double>] = []
            for (k, chunk) in chunks.enumerated() {
                if k > 0 { samples.append(contentsOf: repeatElement(0, count: gap)) }
                let start = Double(samples.count) / 16000
                samples.append(contentsOf: chunk)
                spans.append(start...(Double(samples.count) / 16000))
            }
            self.samples = samples
            self.spans = spans
        }
    }

    /// Each packed chunk's share of a window's segments, with times from the chunk's own start,
    /// or nil for a chunk whose words cannot be placed cleanly: a word whose spoken tokens were
    /// aligned in a gap, in two chunks, far from its segment's timestamps or not at all, or no
    /// words at all. Words are tokens as in `Session.words`; consecutive words of one segment and
    /// one chunk stay one segment.
    static func split(
        _ segments: [WhisperEngine.Segment], spans: [ClosedRange<Double>], tolerance: Double = packTolerance
    ) -> [[WhisperEngine.Segment]?] {
        var pieces = [[WhisperEngine.Segment]](repeating: [], count: spans.count)
        var unplaced = Set<Int>()
        /// The chunk a time belongs to, or the chunks on both sides of the gap it falls in.
        func chunks(at time: Double) -> (home: Int?, near: [Int]) {
            if let k = spans.firstIndex(where: { ($0.lowerBound - tolerance)...($0.upperBound + tolerance) ~= time }) {
                return (k, [k])
            }
            let after = spans.firstIndex { $0.lowerBound > time }
            return (nil, [after.map { $0 - 1 } ?? spans.count - 1, after ?? spans.count - 1].filter { $0 >= 0 })
        }
        for segment in segments {
            var current: (chunk: Int, tokens: [WhisperEngine.Token])?
            func close() {
                guard let open = current else { return }
                let (k, tokens) = (open.chunk, open.tokens)
                current = nil
                let offset = spans[k].lowerBound
                let shifted = tokens.map { token in
                    var token = token
                    token.start = max(0, token.start - offset)
                    token.end = max(token.start, token.end - offset)
                    token.aligned = token.aligned.map { max(0, $0 - offset) }
                    return token
                }
                pieces[k].append(
                    WhisperEngine.Segment(
                        start: shifted[0].aligned ?? shifted[0].start,
                        end: shifted.map { max($0.end, $0.aligned ?? 0) }.max() ?? 0,
                        text: String(decoding: shifted.flatMap(\.bytes), as: UTF8.self),
                        noSpeechProbability: segment.noSpeechProbability, averageLogprob: segment.averageLogprob,
                        tokens: shifted, ids: [], endsWithTimestamp: segment.endsWithTimestamp))
            }
            for group in segment.wordTokens {
                let text = String(decoding: group.flatMap(\.bytes), as: UTF8.self)
                guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
                // Punctuation is aligned where the next sound starts, often in the gap after its
                // word: a word is placed by its spoken tokens, and punctuation stays with its word.
                let spoken = group.filter { $0.bytes.contains { $0 >= 0x80 || isalnum(Int32($0)) != 0 } }
                if spoken.isEmpty, let open = current {
                    current = (open.chunk, open.tokens + group)
                    continue
                }
                let times = (spoken.isEmpty ? group : spoken).map { $0.aligned ?? $0.start }
                guard times.allSatisfy({ $0 >= 0 }) else {
                    // No time for this word: any chunk may be missing it.
                    unplaced.formUnion(spans.indices)
                    continue
                }
                let places = times.map(chunks(at:))
                let slack = packAlignmentSlack
                guard times.allSatisfy({ (segment.start - slack)...(segment.end + slack) ~= $0 }) else {
                    // Aligned far from where the segment says it was heard: both places are suspect.
                    let heard = spans.indices.filter {
                        spans[$0].overlaps((segment.start - tolerance)...max(segment.start, segment.end) + tolerance)
                    }
                    unplaced.formUnion(places.flatMap(\.near) + heard)
                    continue
                }
                guard let home = places[0].home, places.allSatisfy({ $0.home == home }) else {
                    unplaced.formUnion(places.flatMap(\.near))
                    continue
                }
                if let open = current, open.chunk != home { close() }
                current = (home, (current?.tokens ?? []) + group)
            }
            close()
        }
        return pieces.indices.map { k in unplaced.contains(k) || pieces[k].isEmpty ? nil : pieces[k] }
    }
}

extension WhisperProvider.Session {
    var batching: ChunkBatching? {
        let seconds = provider.settings.packSeconds
        return seconds > 0 ? ChunkBatching(seconds: seconds, gap: WhisperProvider.packGapSeconds) : nil
    }

    /// Decodes the chunks with sound in one window, and alone each one that packing could not
    /// place; silent chunks give no text, as alone. One Transcript per chunk, in order.
    func transcribe(batch chunks: [AudioChunk]) async throws -> [Transcript] {
        for chunk in chunks { try Self.checkFormat(chunk) }
        let audible = chunks.indices.filter { !Self.isSilent(chunks[$0]) }
        var placed: [Int: [WhisperEngine.Segment]] = [:]
        var detected: String?
        if audible.count > 1 {
            let window = WhisperProvider.PackedWindow(
                audible.map { chunks[$0].samples }, gap: Int(WhisperProvider.packGapSeconds * 16000))
            let decoded = try await decode(window.samples)
            detected = decoded.language
            // A window that repeats itself or is unsure (the tests a shrunk decode must pass) is
            // not split at all: a repetition loop there was aligned into one chunk and took words
            // of another. Each chunk's share must be plausible for its own length too.
            // The chunks decoded alone then are not prompted with that text.
            let seconds = Double(window.samples.count) / 16000
            if WhisperEngine.Decoder.rejection(
                decoded.segments, seconds: seconds, frames: 1500, options: provider.settings.options) == nil
            {
                for (k, pieces) in WhisperProvider.split(decoded.segments, spans: window.spans).enumerated() {
                    let length = window.spans[k].upperBound - window.spans[k].lowerBound
                    guard let pieces else { continue }
                    guard WhisperEngine.Decoder.implausible(pieces.map(\.text), seconds: length) == nil else {
                        forgetPreviousText = true
                        continue
                    }
                    placed[audible[k]] = pieces
                }
            } else {
                forgetPreviousText = !decoded.segments.isEmpty
            }
        }
        var transcripts: [Transcript] = []
        for (i, chunk) in chunks.enumerated() {
            if let pieces = placed[i] {
                transcripts.append(transcript(chunk, segments: pieces, detected: detected))
            } else {
                transcripts.append(try await transcribe(chunk))
            }
        }
        return transcripts
    }
}
