import Foundation

/// Who speaks when in one bounded block of 16-kHz mono audio, the way pyannote's pipeline does it
/// but with an embedding for each stretch of speech instead of one for every window it is heard
/// in (sherpa-onnx's pipeline embedded each second of speech once per window over it: ten times
/// at a tenth's hop, two thirds of its time):
/// 1. pyannote segmentation over 10-s windows moved by `windowShift` of their length: up to three
///    local speakers a window;
/// 2. CAM++ embeddings of each local speaker of the *anchor* windows only, one window every
///    `anchorSeconds` (and the last), from its frames without overlapped speech;
/// 3. those clustered (complete linkage on cosine distance) into `speakers`, or by `threshold`;
/// 4. each local speaker of a window between anchors is the item speaker whose anchor frames it
///    agrees with most (no two of one window the same), or, where no anchor heard it, the
///    speaker nearest to an embedding of its own;
/// 5. pyannote's aggregation: each frame's speaker count is the windows' mean, its speakers the
///    ones the windows over it name most;
/// 6. each segment of a second or more goes to the speaker nearest an embedding of its middle,
///    a shorter one with the nearest such piece of its turn.
/// Windows are segmented (`SpeakerSegmentation.batch` at a time) and anchors embedded on `lanes`
/// threads; every batch and embedding is computed on one thread by itself, so the lanes change
/// the speed, never the turns.
final class Diarizer {
    /// One speaker's stretch in a block: seconds from the block's start, and the block's own
    /// speaker number (0-based, not comparable across blocks).
    struct Segment: Equatable, Sendable {
        var start: Double
        var end: Double
        var speaker: Int
    }

    /// Seconds between anchor windows.
    static let anchorSeconds = 10.0
    /// A local speaker with fewer frames of speech to itself in a window gets no embedding.
    static let minFrames = 10
    /// The least share of a local speaker's frames that an anchor speaker must share to name it.
    static let agreement: Float = 0.2
    /// Segments at least this long are checked by an embedding of their own (step 6) ...
    static let checkedSeconds = 1.0
    /// ... of at most this much of their middle.
    static let checkSeconds = 1.5

    private let segmentation: SpeakerSegmentation
    private let embedder: SpeakerEmbedder
    private let speakers: Int
    private let threshold: Double
    private let step: Int
    private let lanes: Int

    /// `speakers` > 0 fixes how many speakers each block's clustering finds; else `threshold`
    /// (the cosine distance up to which clusters are joined: larger gives fewer speakers) decides.
    init(
        segmentation: SpeakerSegmentation, embedder: SpeakerEmbedder, speakers: Int, threshold: Double,
        windowShift: Double, lanes: Int = 1
    ) {
        self.segmentation = segmentation
        self.embedder = embedder
        self.speakers = speakers
        self.threshold = threshold
        step = max(1, Int(Double(SpeakerSegmentation.window) * windowShift))
        self.lanes = max(1, lanes)
    }

    /// Who speaks when in `samples` (16 kHz mono), sorted by start; nothing for silence.
    func segments(_ samples: ArraySlice<Float>) throws -> [Segment] {
        guard samples.count >= SpeakerModels.sampleRate / 10 else { return [] }
        // The block's own samples, not a copy of them (a 10-minute block is 38 MB), numbered from 0.
        let audio = samples.startIndex == 0 ? samples : ArraySlice(Array(samples))
        let (windows, likelihoods) = try segment(audio)
        let frames = windows[0].count / SpeakerSegmentation.localSpeakers
        let starts = windows.indices.map { Int(Float($0) * Float(step) / Float(SpeakerSegmentation.frameShift) + 0.5) }
        let total = min(
            (SpeakerSegmentation.window + (windows.count - 1) * step) / SpeakerSegmentation.frameShift + 1,
            audio.count / SpeakerSegmentation.frameShift + 1)
        let plan = Plan(
            windows: windows, likelihoods: likelihoods, frames: frames, starts: starts, total: total, step: step)
        let perFrame = plan.speakersPerFrame()
        guard perFrame.contains(where: { $0 > 0 }) else { return [] }

        let every = max(1, Int((Self.anchorSeconds * Double(SpeakerModels.sampleRate) / Double(step)).rounded()))
        var anchors = windows.indices.filter { $0 % every == 0 || $0 == windows.count - 1 }
        var embedded = embed(plan.localSpeakers(of: anchors), audio: audio)
        if embedded.isEmpty && anchors.count < windows.count {
            anchors = Array(windows.indices)
            embedded = embed(plan.localSpeakers(of: anchors), audio: audio)
        }
        guard !embedded.isEmpty else { return [] }
        let labels = Self.cluster(embedded.map(\.embedding), count: speakers > 0 ? speakers : nil, threshold: threshold)
        let clusters = (labels.max() ?? 0) + 1
        var assigned: [LocalSpeaker: Int] = [:]
        for (e, label) in zip(embedded, labels) { assigned[e.speaker] = label }
        let centroids = Self.centroids(embedded.map(\.embedding), labels: labels, clusters: clusters)
        assignBetweenAnchors(
            &assigned, anchors: Set(anchors), plan: plan, clusters: clusters, audio: audio, centroids: centroids)
        let segments = plan.result(assigned: assigned, clusters: clusters, perFrame: perFrame)
        return verified(segments, audio: audio, centroids: centroids)
    }

    /// Step 6: each segment of at least `checkedSeconds` goes to the speaker nearest an embedding
    /// of its middle `checkSeconds`. Where two voices sound alike to the segmentation model, it
    /// hears them as one local speaker in window after window, and step 4's agreement carries an
    /// anchor's label to every turn of the other voice; the embedding model tells them apart
    /// (the LibriVox reader and Piper's joe: 12.5% and 17.7% DER without this step, 4.1% and 5.6%
    /// with it).
    private func verified(_ segments: [Segment], audio: ArraySlice<Float>, centroids: [[Float]]) -> [Segment] {
        guard centroids.count > 1 else { return segments }
        let rate = Double(SpeakerModels.sampleRate)
        let checked = segments.indices.filter { segments[$0].end - segments[$0].start >= Self.checkedSeconds }
        let embedder = embedder
        let embeddings = Self.map(lanes: lanes, count: checked.count) { k -> [Float]? in
            let segment = segments[checked[k]]
            let half = min(Self.checkSeconds, segment.end - segment.start) / 2
            let middle = (segment.start + segment.end) / 2
            let from = max(0, Int(((middle - half) * rate).rounded()))
            let to = min(audio.count, Int(((middle + half) * rate).rounded()))
            return to > from ? embedder.embedding(Array(audio[from..<to])) : nil
        }
        var relabelled = segments
        for (i, embedding) in zip(checked, embeddings) {
            if let embedding { relabelled[i].speaker = Self.nearest(embedding, centroids) }
        }
        // A shorter segment (too short for a sure embedding) goes with the nearest checked one of
        // its speaker less than `SpeakerSettings.joinGap` away: a piece of the same turn.
        for i in segments.indices where segments[i].end - segments[i].start < Self.checkedSeconds {
            let near = checked.filter {
                segments[$0].speaker == segments[i].speaker
                    && Self.gap(segments[$0], segments[i]) < SpeakerSettings.joinGap
            }
            if let j = near.min(by: { Self.gap(segments[$0], segments[i]) < Self.gap(segments[$1], segments[i]) }) {
                relabelled[i].speaker = relabelled[j].speaker
            }
        }
        return Self.joined(relabelled)
    }

    /// Seconds between two segments (0 where they overlap).
    static func gap(_ a: Segment, _ b: Segment) -> Double { max(0, max(a.start, b.start) - min(a.end, b.end)) }

    /// `segments` with those of one speaker that overlap or touch made one, sorted by start.
    static func joined(_ segments: [Segment]) -> [Segment] {
        var out: [Segment] = []
        for segment in segments.sorted(by: { ($0.speaker, $0.start) < ($1.speaker, $1.start) }) {
            if let last = out.last, last.speaker == segment.speaker, segment.start <= last.end {
                out[out.count - 1].end = max(last.end, segment.end)
            } else {
                out.append(segment)
            }
        }
        return out.sorted { ($0.start, $0.speaker) < ($1.start, $1.speaker) }
    }

    /// A window's local speaker.
    struct LocalSpeaker: Hashable {
        var window: Int
        var speaker: Int
    }

    /// The segmentation of every window over `audio` (the last padded with silence), as sherpa-onnx
    /// lays them: from 0 every `step` samples while a whole window fits, then one more over the rest.
    private func segment(_ audio: ArraySlice<Float>) throws -> (bits: [[UInt8]], likelihoods: [[Float]]) {
        let size = SpeakerSegmentation.window
        let whole = audio.count > size ? (audio.count - size) / step + 1 : 1
        let rest = audio.count > size && (audio.count - size) % step > 0
        let offsets = (0..<(whole + (rest ? 1 : 0))).map { $0 * step }
        let batch = SpeakerSegmentation.batch
        let batches = (offsets.count + batch - 1) / batch
        let results = Results<[(bits: [UInt8], likelihood: [Float])]>(count: batches)
        let segmentation = segmentation
        try Self.inLanes(lanes, count: batches) { b in
            let windows = b * batch..<min(offsets.count, (b + 1) * batch)
            var buffer = [Float](repeating: 0, count: size * windows.count)
            for (k, i) in windows.enumerated() {
                let from = offsets[i], to = min(audio.count, from + size)
                buffer.replaceSubrange(k * size..<(k * size + to - from), with: audio[from..<to])
            }
            results.set(b, try buffer.withUnsafeMutableBufferPointer { try segmentation.activity($0) })
        }
        let values = results.values.flatMap { $0 ?? [] }
        return (values.map(\.bits), values.map(\.likelihood))
    }

    /// The embeddings of `speakers` (those with enough speech to themselves), in their order.
    private func embed(
        _ speakers: [(LocalSpeaker, [Range<Int>])], audio: ArraySlice<Float>
    ) -> [(speaker: LocalSpeaker, embedding: [Float])] {
        let embedder = embedder
        let embeddings = Self.map(lanes: lanes, count: speakers.count) {
            embedder.embedding(Self.samples(audio, speakers[$0].1))
        }
        return zip(speakers, embeddings).compactMap { s, e in e.map { (s.0, $0) } }
    }

    static func samples(_ audio: ArraySlice<Float>, _ ranges: [Range<Int>]) -> [Float] {
        var out: [Float] = []
        for r in ranges where r.lowerBound < audio.count {
            out += audio[r.lowerBound..<min(r.upperBound, audio.count)]
        }
        return out
    }

    /// Step 4: the local speakers of the windows that are not anchors.
    private func assignBetweenAnchors(
        _ assigned: inout [LocalSpeaker: Int], anchors: Set<Int>, plan: Plan, clusters: Int, audio: ArraySlice<Float>,
        centroids: [[Float]]
    ) {
        let local = SpeakerSegmentation.localSpeakers
        var heard = [Float](repeating: 0, count: plan.total * clusters)
        for (speaker, cluster) in assigned {
            plan.forEachActive(speaker) { t in heard[t * clusters + cluster] += 1 }
        }
        // Local speakers no anchor heard: each the speaker nearest to an embedding of its own.
        var unheard: [(LocalSpeaker, [Range<Int>])] = []
        for w in plan.windows.indices where !anchors.contains(w) {
            let active = (0..<local).filter { plan.activeFrames(LocalSpeaker(window: w, speaker: $0)) > 0 }
            guard !active.isEmpty else { continue }
            let scores = active.map { s -> [Float] in
                let speaker = LocalSpeaker(window: w, speaker: s)
                var shared = [Float](repeating: 0, count: clusters)
                plan.forEachActive(speaker) { t in
                    for c in 0..<clusters { shared[c] += heard[t * clusters + c] > 0 ? 1 : 0 }
                }
                let own = Float(plan.activeFrames(speaker))
                return shared.map { $0 / own }
            }
            let choice = Self.bestAssignment(scores, clusters: clusters)
            for (a, s) in active.enumerated() {
                let speaker = LocalSpeaker(window: w, speaker: s)
                if scores[a][choice[a]] >= Self.agreement {
                    assigned[speaker] = choice[a]
                } else if let ranges = plan.ownRanges(speaker) {
                    unheard.append((speaker, ranges))
                }
            }
        }
        let embedder = embedder, fallbacks = unheard
        let embeddings = Self.map(lanes: lanes, count: fallbacks.count) {
            embedder.embedding(Self.samples(audio, fallbacks[$0].1))
        }
        for ((speaker, _), embedding) in zip(fallbacks, embeddings) {
            if let embedding { assigned[speaker] = Self.nearest(embedding, centroids) }
        }
    }

    /// The clusters for each row of `scores` with the largest sum, no two rows the same where
    /// there are clusters enough (else each row its best); ties go to the first found.
    static func bestAssignment(_ scores: [[Float]], clusters: Int) -> [Int] {
        let rows = scores.count
        guard rows <= clusters else {
            return scores.map { row in row.indices.max { row[$0] < row[$1] || (row[$0] == row[$1] && $0 > $1) } ?? 0 }
        }
        var best: (sum: Float, choice: [Int])?
        var choice = [Int](repeating: 0, count: rows)
        var used = [Bool](repeating: false, count: clusters)
        func search(_ row: Int, _ sum: Float) {
            if row == rows {
                if best.map({ sum > $0.sum }) ?? true { best = (sum, choice) }
                return
            }
            for c in 0..<clusters where !used[c] {
                used[c] = true
                choice[row] = c
                search(row + 1, sum + scores[row][c])
                used[c] = false
            }
        }
        search(0, 0)
        return best?.choice ?? choice
    }

    /// Complete-linkage clustering on cosine distance (1 − similarity, at least 0): joined until
    /// `count` clusters are left (at most as many as items), or while the closest two are at most
    /// `threshold` apart. With a count, as pyannote does it, the count is of *large* clusters (at
    /// least `minClusterSize(n)` items): the fewest joins that leave `count` large ones, and the
    /// items of the small ones go to the nearest large one, so a few odd embeddings (overlapped or
    /// mixed speech) never take a counted speaker's place; where no number of joins gives that, the
    /// plain count; then, with a count only, each item goes to its nearest cluster centre until none moves (at most
    /// `refinements` rounds). Labels run 0… in order of each cluster's first item.
    static func cluster(_ items: [[Float]], count: Int?, threshold: Double) -> [Int] {
        let n = items.count
        guard n > 1 else { return [Int](repeating: 0, count: n) }
        if let count, count >= n { return Array(0..<n) }
        var distance = [[Double]](repeating: [Double](repeating: 0, count: n), count: n)
        for a in 0..<n {
            for b in (a + 1)..<n {
                let d = max(0, 1 - SpeakerEmbedding.cosine(items[a], items[b]))
                distance[a][b] = d
                distance[b][a] = d
            }
        }
        var joins: [(Int, Int)] = []
        var alive = [Bool](repeating: true, count: n)
        var left = n
        while left > max(1, count ?? 1) {
            var pair: (Int, Int)?
            var closest = Double.infinity
            for a in 0..<n where alive[a] {
                for b in (a + 1)..<n where alive[b] && distance[a][b] < closest {
                    closest = distance[a][b]
                    pair = (a, b)
                }
            }
            guard let (a, b) = pair, count != nil || closest <= threshold else { break }
            joins.append((a, b))
            alive[b] = false
            left -= 1
            for k in 0..<n where alive[k] && k != a {
                let d = max(distance[a][k], distance[b][k])
                distance[a][k] = d
                distance[k][a] = d
            }
        }
        var groups = Self.groups(n, joins[...])
        var small: [[Int]] = []
        if let count {
            let least = minClusterSize(n)
            for undone in 0...joins.count {
                let candidate = Self.groups(n, joins.dropLast(undone))
                let large = candidate.filter { $0.count >= least }
                if large.count == count {
                    groups = large
                    small = candidate.filter { $0.count < least }
                    break
                }
            }
        }
        var labels = [Int](repeating: 0, count: n)
        for (label, group) in groups.enumerated() { for item in group { labels[item] = label } }
        let clusters = groups.count
        let centres = centroids(items, labels: labels, clusters: clusters)
        for group in small { for item in group { labels[item] = nearest(items[item], centres) } }
        for _ in 0..<(count == nil ? 0 : refinements) {
            let centres = centroids(items, labels: labels, clusters: clusters)
            let moved = items.map { nearest($0, centres) }
            if moved == labels { break }
            labels = moved
        }
        var renumbered: [Int: Int] = [:]
        for label in labels where renumbered[label] == nil { renumbered[label] = renumbered.count }
        return labels.map { renumbered[$0] ?? 0 }
    }

    /// Rounds of moving each clustered item to its nearest centre.
    static let refinements = 10

    /// The fewest items of a cluster that counts as a speaker when the count is given: 5% of
    /// them, at least 2.
    static func minClusterSize(_ items: Int) -> Int { max(2, (items + 19) / 20) }

    /// The clusters after `joins` (each joins the second's cluster into the first's), each
    /// sorted, in order of their first item.
    private static func groups(_ n: Int, _ joins: ArraySlice<(Int, Int)>) -> [[Int]] {
        var members = (0..<n).map { [$0] }
        var alive = [Bool](repeating: true, count: n)
        for (a, b) in joins {
            members[a] += members[b]
            alive[b] = false
        }
        return (0..<n).filter { alive[$0] }.map { members[$0].sorted() }.sorted { $0[0] < $1[0] }
    }

    static func centroids(_ items: [[Float]], labels: [Int], clusters: Int) -> [[Float]] {
        let dimension = items.first?.count ?? 0
        var sums = [[Float]](repeating: [Float](repeating: 0, count: dimension), count: clusters)
        for (item, label) in zip(items, labels) { for d in 0..<dimension { sums[label][d] += item[d] } }
        return sums.map(SpeakerEmbedding.normalized)
    }

    static func nearest(_ embedding: [Float], _ centroids: [[Float]]) -> Int {
        let similarity = centroids.map { SpeakerEmbedding.cosine(embedding, $0) }
        return similarity.indices.max {
            similarity[$0] < similarity[$1] || (similarity[$0] == similarity[$1] && $0 > $1)
        }
            ?? 0
    }

    /// `body(0..<count)` spread over `lanes` threads (lane k takes k, k + lanes, …); the first
    /// error thrown is rethrown.
    static func inLanes(_ lanes: Int, count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws {
        guard count > 0 else { return }
        let lanes = min(lanes, count)
        guard lanes > 1 else {
            for i in 0..<count { try body(i) }
            return
        }
        let failure = Results<Error>(count: 1)
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            var i = lane
            while i < count && failure.values[0] == nil {
                do { try body(i) } catch {
                    failure.set(0, error)
                    return
                }
                i += lanes
            }
        }
        if let error = failure.values[0] { throw error }
    }
}

extension Diarizer {
    /// `body(0..<count)` on `lanes` threads, the values in order (nil where `body` gave none).
    static func map<Value>(lanes: Int, count: Int, _ body: @escaping @Sendable (Int) -> Value?) -> [Value?] {
        let results = Results<Value>(count: count)
        // `body` throws nothing, so neither does this.
        try? inLanes(lanes, count: count) { i in if let value = body(i) { results.set(i, value) } }
        return results.values
    }
}

/// Values filled in from several threads, one slot each.
private final class Results<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [Value?]

    init(count: Int) { slots = [Value?](repeating: nil, count: count) }

    func set(_ index: Int, _ value: Value) { lock.withLock { slots[index] = value } }

    var values: [Value?] { lock.withLock { slots } }
}

/// A block's windows on the block's frame grid (one frame every 270 samples), and the sums over it.
private struct Plan {
    /// Each window's frames, a bit per local speaker (`frames × 3`): whether it talks.
    let windows: [[UInt8]]
    /// The same, how likely it talks.
    let likelihoods: [[Float]]
    let frames: Int
    /// Each window's first frame on the block's grid.
    let starts: [Int]
    /// Frames on the block's grid.
    let total: Int
    /// Samples between windows.
    let step: Int

    private var local: Int { SpeakerSegmentation.localSpeakers }

    func bit(_ w: Int, _ f: Int, _ s: Int) -> UInt8 { windows[w][f * local + s] }

    /// Each frame's speaker count: the mean of the windows over it, rounded.
    func speakersPerFrame() -> [Int] {
        var count = [Float](repeating: 0, count: total), weight = [Float](repeating: 0, count: total)
        for w in windows.indices {
            for f in 0..<frames where starts[w] + f < total {
                var sum = 0
                for s in 0..<local { sum += Int(bit(w, f, s)) }
                count[starts[w] + f] += Float(sum)
                weight[starts[w] + f] += 1
            }
        }
        return (0..<total).map { Int(count[$0] / (weight[$0] + 1e-12) + 0.5) }
    }

    func activeFrames(_ speaker: Diarizer.LocalSpeaker) -> Int {
        (0..<frames).reduce(0) { $0 + Int(bit(speaker.window, $1, speaker.speaker)) }
    }

    /// `body(t)` for each block frame `t` the local speaker talks in.
    func forEachActive(_ speaker: Diarizer.LocalSpeaker, _ body: (Int) -> Void) {
        for f in 0..<frames where bit(speaker.window, f, speaker.speaker) != 0 && starts[speaker.window] + f < total {
            body(starts[speaker.window] + f)
        }
    }

    /// The sample ranges where the local speaker talks and no one else of its window does; nil
    /// when they are fewer than `Diarizer.minFrames` frames.
    func ownRanges(_ speaker: Diarizer.LocalSpeaker) -> [Range<Int>]? {
        let w = speaker.window
        let own = (0..<frames).map { f in
            bit(w, f, speaker.speaker) != 0 && (0..<local).reduce(0) { $0 + Int(bit(w, f, $1)) } < 2
        }
        guard own.filter({ $0 }).count >= Diarizer.minFrames else { return nil }
        let size = Float(SpeakerSegmentation.window), offset = w * step
        func sample(_ f: Int) -> Int { Int(Float(f) / Float(frames) * size) + offset }
        var ranges: [Range<Int>] = []
        var from: Int?
        for f in 0..<frames {
            if own[f], from == nil { from = f }
            if !own[f], let start = from {
                ranges.append(sample(start)..<sample(f))
                from = nil
            }
        }
        if let start = from { ranges.append(sample(start)..<sample(frames - 1)) }
        return ranges.filter { !$0.isEmpty }
    }

    /// The local speakers of `windows` with enough speech to themselves for an embedding.
    func localSpeakers(of chosen: [Int]) -> [(Diarizer.LocalSpeaker, [Range<Int>])] {
        chosen.flatMap { w in
            (0..<local).compactMap { s -> (Diarizer.LocalSpeaker, [Range<Int>])? in
                let speaker = Diarizer.LocalSpeaker(window: w, speaker: s)
                return ownRanges(speaker).map { (speaker, $0) }
            }
        }
    }

    /// Step 5: each frame's `perFrame` speakers, those most likely over the windows on it (the
    /// likelihoods of their local speakers summed; ties to the lower number), as segments in
    /// seconds. Summed in one order (window, local speaker), so the same on every run.
    func result(assigned: [Diarizer.LocalSpeaker: Int], clusters: Int, perFrame: [Int]) -> [Diarizer.Segment] {
        var count = [Float](repeating: 0, count: total * clusters)
        for (speaker, cluster) in assigned.sorted(by: {
            ($0.key.window, $0.key.speaker) < ($1.key.window, $1.key.speaker)
        }) {
            let w = speaker.window
            for f in 0..<frames where starts[w] + f < total {
                count[(starts[w] + f) * clusters + cluster] += likelihoods[w][f * local + speaker.speaker]
            }
        }
        var active = [Bool](repeating: false, count: total * clusters)
        for t in 0..<total where perFrame[t] > 0 {
            let order = (0..<clusters).sorted {
                count[t * clusters + $0] > count[t * clusters + $1]
                    || (count[t * clusters + $0] == count[t * clusters + $1] && $0 < $1)
            }
            for c in order.prefix(perFrame[t]) { active[t * clusters + c] = true }
        }
        let rate = Double(SpeakerModels.sampleRate)
        let scale = Double(SpeakerSegmentation.frameShift) / rate
        let offset = 0.5 * Double(SpeakerSegmentation.frameSize) / rate
        var segments: [Diarizer.Segment] = []
        for c in 0..<clusters {
            var from: Int?
            for t in 0..<total {
                let on = active[t * clusters + c]
                if on, from == nil { from = t }
                if !on, let start = from {
                    segments.append(
                        .init(start: Double(start) * scale + offset, end: Double(t) * scale + offset, speaker: c))
                    from = nil
                }
            }
            if let start = from, total - 1 > start {
                segments.append(
                    .init(start: Double(start) * scale + offset, end: Double(total - 1) * scale + offset, speaker: c))
            }
        }
        return segments.sorted { ($0.start, $0.speaker) < ($1.start, $1.speaker) }
    }
}
