import Foundation
import VoxCore

/// One speaker's turn: a span (seconds) and who speaks in it (a block's speaker number, or a
/// speaker of the whole item once labelled).
struct SpeakerTurn: Equatable {
    var start: Double
    var end: Double
    var speaker: Int

    var duration: Double { end - start }
}

/// What becomes of speech where two speakers talk at once.
public enum OverlapPolicy: String, Sendable, CaseIterable, OptionValue {
    /// The speaker who started first keeps it; the other's turn starts when theirs ends.
    case first
    /// Neither keeps it: both turns lose the overlapped stretch.
    case drop
}

/// The pure steps from a diarizer's segments to turns that do not overlap: no models, no audio.
enum SpeakerTurns {
    /// Turns that do not overlap, sorted by start, from `segments` (sorted by start) that may.
    static func resolveOverlaps(_ segments: [SpeakerTurn], policy: OverlapPolicy) -> [SpeakerTurn] {
        var out: [SpeakerTurn] = []
        for segment in segments.sorted(by: { ($0.start, $0.speaker) < ($1.start, $1.speaker) }) {
            var next = segment
            guard let last = out.last, next.start < last.end else {
                if next.duration > 0 { out.append(next) }
                continue
            }
            if last.speaker == next.speaker {
                out[out.count - 1].end = max(last.end, next.end)
                continue
            }
            switch policy {
            case .first:
                next.start = last.end
                if next.duration > 0 { out.append(next) }
            case .drop:
                out[out.count - 1].end = next.start
                if next.end < last.end {
                    // Inside the earlier turn: that turn goes on after it.
                    out.append(SpeakerTurn(start: next.end, end: last.end, speaker: last.speaker))
                } else {
                    next.start = last.end
                    if next.duration > 0 { out.append(next) }
                }
                out.removeAll { $0.duration <= 0 }
            }
        }
        return out
    }

    /// `turns` (sorted, not overlapping) with every turn shorter than `minTurn` given to the
    /// nearer neighbour within `joinGap` (it becomes part of that neighbour's turn; a short turn
    /// with nobody near stays), then consecutive turns of one speaker at most `joinGap` apart
    /// joined.
    static func mergeShort(_ turns: [SpeakerTurn], minTurn: Double, joinGap: Double) -> [SpeakerTurn] {
        var turns = turns
        var i = 0
        while i < turns.count {
            guard turns[i].duration < minTurn else {
                i += 1
                continue
            }
            let before = i > 0 ? turns[i].start - turns[i - 1].end : .infinity
            let after = i + 1 < turns.count ? turns[i + 1].start - turns[i].end : .infinity
            if before <= joinGap && before <= after {
                turns[i - 1].end = max(turns[i - 1].end, turns[i].end)
                turns.remove(at: i)
            } else if after <= joinGap {
                turns[i + 1].start = turns[i].start
                turns.remove(at: i)
            } else {
                i += 1
            }
        }
        var joined: [SpeakerTurn] = []
        for turn in turns {
            if let last = joined.last, last.speaker == turn.speaker, turn.start - last.end <= joinGap {
                joined[joined.count - 1].end = max(last.end, turn.end)
            } else {
                joined.append(turn)
            }
        }
        return joined
    }
}

/// The speakers of one item, across its blocks: each with the mean of its blocks' embeddings,
/// a label (an enrolled voice's name, else `Speaker N` in order of first appearance), and the
/// rule that maps a new block's speakers onto them.
struct SpeakerBook {
    struct Known {
        var label: String
        /// Sum of the embeddings the speaker was matched with, each weighted by its seconds.
        var sum: [Float]
        var mean: [Float] { SpeakerEmbedding.normalized(sum) }
    }

    /// An enrolled voice: its name and embedding.
    struct Voice: Sendable, Equatable {
        var name: String
        var embedding: [Float]
    }

    private(set) var speakers: [Known] = []
    private var numbered = 0
    /// The cosine similarity from which two embeddings are one speaker.
    let threshold: Double
    /// The most speakers the item has (the `speakers` option), or nil for no limit.
    let limit: Int?
    let voices: [Voice]

    init(threshold: Double, limit: Int?, voices: [Voice]) {
        self.threshold = threshold
        self.limit = limit
        self.voices = voices
    }

    /// Maps a block's speakers, given in order of their first turn with their embedding and
    /// seconds of speech, to the item's (their indexes in `speakers`): the most similar pairs
    /// first, one block speaker to one item speaker, at `threshold` or above; the rest are new
    /// speakers, or, once `limit` is reached, the item speaker they are most like.
    mutating func assign(_ block: [(embedding: [Float], seconds: Double)]) -> [Int] {
        var pairs: [(similarity: Double, local: Int, known: Int)] = []
        for (l, speaker) in block.enumerated() {
            for (k, known) in speakers.enumerated() {
                pairs.append((SpeakerEmbedding.cosine(speaker.embedding, known.mean), l, k))
            }
        }
        pairs.sort { ($0.similarity, -$0.local, -$0.known) > ($1.similarity, -$1.local, -$1.known) }
        var mapping = [Int?](repeating: nil, count: block.count)
        var taken = Set<Int>()
        for pair in pairs
        where pair.similarity >= threshold && mapping[pair.local] == nil && !taken.contains(pair.known) {
            mapping[pair.local] = pair.known
            taken.insert(pair.known)
        }
        for (l, speaker) in block.enumerated() where mapping[l] == nil {
            if let limit, speakers.count >= limit, let nearest = nearest(speaker.embedding) {
                mapping[l] = nearest
            } else {
                mapping[l] = add(speaker.embedding)
            }
        }
        let result = mapping.map { $0 ?? 0 }
        for (l, speaker) in block.enumerated() {
            let weight = Float(max(speaker.seconds, 0.1))
            for d in speakers[result[l]].sum.indices { speakers[result[l]].sum[d] += weight * speaker.embedding[d] }
        }
        return result
    }

    /// The item speaker of a turn whose own embedding is `embedding`, given the one its block's
    /// clustering gave it (`current`), checked against the enrolled voices (the clustering can put
    /// a short turn with another speaker's): a turn of an unnamed speaker that matches a named
    /// speaker's enrolled voice at `threshold` or above, and more than its own speaker, goes to the
    /// named one; a turn of a named speaker that does not match its voice goes to the speaker it is
    /// more like, if any. Without enrolled voices, `current`.
    func checked(_ embedding: [Float], current: Int) -> Int {
        func voice(_ k: Int) -> [Float]? { voices.first { $0.name == speakers[k].label }?.embedding }
        let own = SpeakerEmbedding.cosine(embedding, voice(current) ?? speakers[current].mean)
        let candidates = speakers.indices.filter { $0 != current }.compactMap { k -> (k: Int, similarity: Double)? in
            if voice(current) != nil {
                return own < threshold ? (k, SpeakerEmbedding.cosine(embedding, speakers[k].mean)) : nil
            }
            return voice(k).map { (k, SpeakerEmbedding.cosine(embedding, $0)) }.flatMap {
                $0.similarity >= threshold ? $0 : nil
            }
        }
        guard let best = candidates.max(by: { ($0.similarity, -$0.k) < ($1.similarity, -$1.k) }), best.similarity > own
        else { return current }
        return best.k
    }

    private func nearest(_ embedding: [Float]) -> Int? {
        speakers.indices.max {
            SpeakerEmbedding.cosine(embedding, speakers[$0].mean)
                < SpeakerEmbedding.cosine(embedding, speakers[$1].mean)
        }
    }

    /// A new speaker: the enrolled voice it matches best at `threshold` or above that no speaker
    /// has yet, else the next number.
    private mutating func add(_ embedding: [Float]) -> Int {
        let named = Set(speakers.map(\.label))
        let match = voices.enumerated()
            .map {
                (
                    index: $0.offset, voice: $0.element,
                    similarity: SpeakerEmbedding.cosine(embedding, $0.element.embedding)
                )
            }
            .filter { $0.similarity >= threshold && !named.contains($0.voice.name) }
            .max { ($0.similarity, -$0.index) < ($1.similarity, -$1.index) }
        let label: String
        if let match {
            label = match.voice.name
        } else {
            numbered += 1
            label = "Speaker \(numbered)"
        }
        speakers.append(Known(label: label, sum: [Float](repeating: 0, count: embedding.count)))
        return speakers.count - 1
    }
}
