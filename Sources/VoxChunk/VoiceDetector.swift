import Foundation
import VoxCore

/// The voice-activity detector behind `chunk` mode `voice`: `energy` (below) or `silero`, the Silero
/// VAD network (`SileroVAD`), which tells speech from music, noise and tones where energy cannot.
/// With Silero a 32-ms window is speech when its probability is at least `speechProbability`, and
/// a segment under way goes on while it stays above that less 0.15 (Silero's own hysteresis); the
/// segments are then cut, padded and split as below.
///
/// What it does and why: it measures energy (dBFS of the channel mix) in 10 ms frames and calls
/// a frame speech when it is `thresholdDB` above the noise floor (and above -55 dBFS). The noise
/// floor is the lowest frame energy within 3 s before and 1 s after the frame: speech has
/// regular dips between syllables and words, so the minimum over a few seconds tracks the
/// background, also when it changes, and the 1 s look-ahead lets speech that starts the file be
/// found. This is cheap, needs no model, adapts to each recording's level, and is deterministic.
/// A segment ends after `minSilence` without speech; segments get `padding` of context on each
/// side; those shorter than `minSeconds` are dropped; a turn longer than `maxSeconds` is split at
/// its quietest 10 ms frame in the second half of the allowed length, which is a pause between
/// words where the turn has one.
///
/// Joining (`joinPause`): segments with pauses of at most `joinPause` between them stay one chunk,
/// pauses included, as long as it fits in `maxSeconds`; one that would not fit is cut at its last
/// pause of `minSilence` or more (a sentence boundary), and only a stretch with no such pause at
/// its quietest frame. A transcriber that encodes a fixed 30-s window (Whisper) then encodes a
/// recording in about as many windows as its length needs, not one per sentence:
///
///   speech   ███ ·· ████ · ██████ ··· ███ ········· ████
///   chunks   [ one chunk: pauses ≤ joinPause kept   ] [ next ]     (each ≤ maxSeconds)
public enum VoiceDetector {
    public struct Settings: Sendable, Equatable {
        public var minSilence: Double
        public var padding: Double
        public var minSeconds: Double
        public var maxSeconds: Double
        public var thresholdDB: Double
        public var detector: Detector
        public var speechProbability: Double
        /// Pauses up to this long (seconds) inside one chunk; 0: a pause of `minSilence` ends it.
        public var joinPause: Double

        public init(
            minSilence: Double = 0.5, padding: Double = 0.2, minSeconds: Double = 0.25, maxSeconds: Double = 30,
            thresholdDB: Double = 12, detector: Detector = .energy, speechProbability: Double = 0.5,
            joinPause: Double = 0
        ) {
            self.minSilence = minSilence
            self.padding = padding
            self.minSeconds = minSeconds
            self.maxSeconds = maxSeconds
            self.thresholdDB = thresholdDB
            self.detector = detector
            self.speechProbability = speechProbability
            self.joinPause = joinPause
        }
    }

    /// How frames are told to be speech: their energy, or the Silero network with its model file.
    public enum Detector: Sendable, Equatable {
        case energy
        case silero(model: URL)
    }

    static let framesPerSecond = 100
    static let floorBehind = 3.0
    static let floorAhead = 1.0
    static let absoluteFloorDB = -55.0
}

/// Streaming state of the detector for one item.
final class VoiceCutter: Cutter {
    let format: AudioFormat
    private let settings: VoiceDetector.Settings
    /// Samples per 10 ms frame (per channel).
    private let hop: Int
    private let behind: Int, ahead: Int, minSilence: Int, pad: Int, minFrames: Int, maxSpeech: Int
    /// Frames of silence that end a segment: `minSilence`, or `joinPause` when joining.
    private let endSilence: Int
    /// The Silero network (nil: energy), and the speech probability of each frame (one frame is
    /// one of its windows), kept from frame `energyStart` on like the energies.
    private let vad: SileroVAD?
    private var probabilities: [Float] = []

    /// Interleaved samples from stream frame `bufferStart` on.
    private var buffer: [Float] = []
    private var bufferStart: Int64 = 0
    private var streamStart: Int64?
    private var streamEnd: Int64 = 0
    /// Energies (dB) of 10 ms frames from frame `energyStart` on.
    private var energies: [Double] = []
    private var energyStart = 0
    /// Frames measured so far, and frames decided so far.
    private var measured = 0
    private var decided = 0

    private var inSpeech = false
    private var segmentStart = 0
    private var lastSpeech = 0
    private var segmentPadded = true
    /// Pauses of `minSilence` or more inside the current segment (joining only): the frame where
    /// each began and the frame where speech came back.
    private var pauses: [(start: Int, end: Int)] = []
    private var index = 0

    init(format: AudioFormat, settings: VoiceDetector.Settings) throws {
        self.format = format
        self.settings = settings
        if case .silero(let model) = settings.detector {
            guard format == AudioFormat(sampleRate: SileroVAD.sampleRate, channels: 1) else {
                throw ChunkError(.unsupported, "the silero detector takes 16 kHz mono, got \(format)")
            }
            vad = try SileroVAD(modelFile: model)
            hop = SileroVAD.window
        } else {
            vad = nil
            hop = max(1, format.sampleRate / VoiceDetector.framesPerSecond)
        }
        let fps = Double(format.sampleRate) / Double(hop)
        // The energy detector's noise floor looks 3 s back and 1 s ahead; Silero needs neither.
        behind = vad == nil ? Int(VoiceDetector.floorBehind * fps) : 0
        ahead = vad == nil ? Int(VoiceDetector.floorAhead * fps) : 0
        minSilence = max(1, Int((settings.minSilence * fps).rounded()))
        endSilence = max(minSilence, Int((settings.joinPause * fps).rounded()))
        pad = Int((settings.padding * fps).rounded())
        minFrames = max(1, Int((settings.minSeconds * fps).rounded()))
        maxSpeech = max(minFrames + 1, Int((settings.maxSeconds * fps).rounded()) - 2 * pad)
    }

    func push(_ block: AudioBlock) throws -> [AudioChunk] {
        if streamStart == nil {
            streamStart = block.frameOffset
            bufferStart = block.frameOffset
        }
        buffer.append(contentsOf: block.samples)
        streamEnd = block.frameOffset + Int64(block.frames)
        try measure()
        var out: [AudioChunk] = []
        while decided + ahead < measured {
            decide(decided, into: &out)
            decided += 1
        }
        trim()
        return out
    }

    func finish() -> [AudioChunk] {
        var out: [AudioChunk] = []
        while decided < measured {
            decide(decided, into: &out)
            decided += 1
        }
        if inSpeech { endSegment(at: lastSpeech + 1, into: &out) }
        buffer.removeAll()
        return out
    }

    /// Energy (and with Silero the speech probability) of every complete frame not yet measured.
    private func measure() throws {
        let ch = format.channels
        let origin = streamStart ?? 0
        let firstNew = measured
        defer { precondition(vad == nil || probabilities.count == energies.count, "a probability per frame") }
        while true {
            let first = origin + Int64(measured * hop)
            let last = first + Int64(hop)
            guard last <= streamEnd else { break }
            let offset = Int(first - bufferStart) * ch
            var sum: Double = 0
            buffer.withUnsafeBufferPointer { p in
                for f in 0..<hop {
                    var v: Float = 0
                    for c in 0..<ch { v += p[offset + f * ch + c] }
                    v /= Float(ch)
                    sum += Double(v * v)
                }
            }
            energies.append(10 * log10(sum / Double(hop) + 1e-12))
            measured += 1
        }
        if let vad, measured > firstNew {
            let from = Int(origin + Int64(firstNew * hop) - bufferStart)
            probabilities += try vad.probabilities(buffer[from..<from + (measured - firstNew) * hop])
        }
    }

    private func energy(_ frame: Int) -> Double { energies[frame - energyStart] }

    private func isSpeech(_ frame: Int) -> Bool {
        if vad != nil {
            let p = Double(probabilities[frame - energyStart])
            return p >= settings.speechProbability || (inSpeech && p >= settings.speechProbability - 0.15)
        }
        let lo = max(energyStart, frame - behind), hi = min(measured - 1, frame + ahead)
        var floor = Double.infinity
        for f in lo...hi { floor = min(floor, energy(f)) }
        let threshold = max(floor + settings.thresholdDB, VoiceDetector.absoluteFloorDB)
        return energy(frame) > threshold
    }

    private func decide(_ frame: Int, into out: inout [AudioChunk]) {
        let speech = isSpeech(frame)
        if !inSpeech {
            if speech {
                inSpeech = true
                segmentStart = frame
                lastSpeech = frame
                segmentPadded = true
            }
            return
        }
        if speech {
            if frame - lastSpeech > minSilence { pauses.append((lastSpeech + 1, frame)) }
            lastSpeech = frame
        }
        if frame - lastSpeech >= endSilence {
            endSegment(at: lastSpeech + 1, into: &out)
        } else if frame + 1 - segmentStart >= maxSpeech {
            if endSilence > minSilence && frame - lastSpeech >= minSilence {
                // Joining, in a pause when the chunk is full: it ends where the speech did.
                endSegment(at: lastSpeech + 1, into: &out)
                return
            }
            if let pause = pauses.last {
                // Joined segments: cut at the last pause, each side padded as a segment's end.
                if pause.start - segmentStart >= minFrames || !segmentPadded {
                    let (from, to) = (segmentStart, pause.start)
                    emit(fromFrame: from, toFrame: to, padStart: segmentPadded, padEnd: true, into: &out)
                }
                segmentStart = pause.end
                segmentPadded = true
                pauses.removeAll()
                return
            }
            // Split at the quietest frame of the second half of what is allowed.
            let from = segmentStart + maxSpeech / 2
            var cut = from
            for f in from...frame where energy(f) < energy(cut) { cut = f }
            if cut == segmentStart { cut = frame }
            emit(fromFrame: segmentStart, toFrame: cut, padStart: segmentPadded, padEnd: false, into: &out)
            segmentStart = cut
            segmentPadded = false
            if lastSpeech < cut { lastSpeech = cut }
        }
    }

    private func endSegment(at end: Int, into out: inout [AudioChunk]) {
        inSpeech = false
        pauses.removeAll()
        if end - segmentStart >= minFrames || !segmentPadded {
            emit(fromFrame: segmentStart, toFrame: end, padStart: segmentPadded, padEnd: true, into: &out)
        }
    }

    private func emit(fromFrame: Int, toFrame: Int, padStart: Bool, padEnd: Bool, into out: inout [AudioChunk]) {
        let origin = streamStart ?? 0
        var start = origin + Int64((fromFrame - (padStart ? pad : 0)) * hop)
        var end = origin + Int64((toFrame + (padEnd ? pad : 0)) * hop)
        start = max(start, bufferStart, origin)
        end = min(end, streamEnd)
        guard end > start else { return }
        let ch = format.channels
        let samples = Array(buffer[Int(start - bufferStart) * ch..<Int(end - bufferStart) * ch])
        let rate = Double(format.sampleRate)
        out.append(
            AudioChunk(
                format: format, samples: samples, start: Double(start) / rate, end: Double(end) / rate, index: index,
                cut: .voice))
        index += 1
    }

    /// What the cutter holds now (for tests of its memory bound).
    var bufferedSamples: Int { buffer.count }
    var bufferedEnergies: Int { energies.count }

    /// Drops samples and energies no later decision or chunk can need.
    private func trim() {
        let origin = streamStart ?? 0
        let keepFrame = inSpeech ? segmentStart - pad : decided - pad
        let keepSample = max(bufferStart, origin + Int64(max(0, keepFrame) * hop))
        let drop = Int(keepSample - bufferStart) * format.channels
        if drop > 0 {
            buffer.removeFirst(drop)
            bufferStart = keepSample
        }
        let keepEnergy = min(decided - behind, inSpeech ? segmentStart : decided)
        if keepEnergy > energyStart {
            energies.removeFirst(keepEnergy - energyStart)
            if vad != nil { probabilities.removeFirst(keepEnergy - energyStart) }
            energyStart = keepEnergy
        }
    }
}
