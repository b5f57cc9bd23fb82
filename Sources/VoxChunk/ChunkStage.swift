import Foundation
import VoxCore

/// `chunk`: AudioBlock → AudioChunk. Cuts a stream into bounded segments, each with its span in
/// the original file:
/// - `window`: fixed windows of `seconds` with optional `overlap`; the last short window is kept.
/// - `voice`: speech segments found by a voice-activity detector (see `VoiceDetector`): energy, or
///   the Silero network (`detector: "silero"`, 16 kHz mono), padded, with long turns split at their
///   quietest point. Silence gives no chunks; with Silero, neither do music, noise and tones.
/// - `tail`: the last `seconds` of the stream, from a ring buffer whose memory does not grow
///   with the input.
/// - `whole`: the whole stream as one chunk (a clip its sender already cut, as `voxpipe serve`
///   gets); a stream longer than `seconds` fails the item rather than grow without bound.
/// - `speakers`: one chunk per speaker turn (16 kHz mono), labelled `Speaker 1`, `Speaker 2`, … in
///   order of first appearance, or with an enrolled voice's name (`SpeakerCutter`): the
///   diarization models `make setup` installs, `blockSeconds` at a time. Silence gives no chunks.
/// Holds at most one chunk's worth of audio and flushes it at end of input.
public struct ChunkStage: Stage {
    public typealias Input = AudioBlock
    public typealias Output = AudioChunk

    public enum Mode: String, Sendable, CaseIterable, OptionValue { case window, voice, tail, whole, speakers }

    public struct Configuration: Sendable {
        public var mode: Mode
        /// window: window length; tail: how much of the end to keep.
        public var seconds: Double
        public var overlap: Double
        public var voice: VoiceDetector.Settings
        /// whole: the clip from where the voice detector hears speech start to where it ends, and
        /// nothing when it hears none (a served turn of a spec that cuts voice turns with Silero:
        /// silence, music and noise are not decoded, nor silence around the words).
        public var speechOnly = false
        /// speakers: how turns are found and labelled.
        public var speakers: SpeakerSettings? = nil
    }

    public static let kind = "chunk"
    public static let summary =
        "Cuts a stream into chunks: fixed windows, voice segments, speaker turns, or the last N seconds."
    /// Each option, declared once (name, kind, default, help) and read by declaration in `configure`.
    public enum Option {
        public static let mode = StageOption<Mode>(
            "mode", default: .window,
            help:
                "window: fixed windows; voice: speech segments; tail: the last `seconds`; whole: one chunk; "
                + "speakers: one chunk per speaker turn, labelled (16 kHz mono; the diarization models).")
        public static let seconds = StageOption<Double?>(
            "seconds", .number(0.01...86400),
            help: "window: window length (default 8); tail: length kept (default 300); whole: longest (default 300)."
        ).only(where: mode, is: .window, .tail, .whole)
        public static let overlap = StageOption<Double>(
            "overlap", .number(0...3600), default: 0, help: "window: seconds each window shares with the one before."
        ).only(where: mode, is: .window)
        public static let minSilence = StageOption<Double>(
            "minSilence", .number(0.01...60), default: 0.5, help: "voice: a pause this long ends a segment."
        ).only(where: mode, is: .voice)
        public static let padding = StageOption<Double>(
            "padding", .number(0...10), default: 0.2,
            help:
                "voice, speakers: seconds of context kept before and after speech (speakers: at most half-way to the "
                + "next turn)."
        ).only(where: mode, is: .voice, .speakers)
        public static let minSeconds = StageOption<Double>(
            "minSeconds", .number(0...60), default: 0.25, help: "voice: shorter segments (clicks, coughs) are dropped."
        ).only(where: mode, is: .voice)
        public static let maxSeconds = StageOption<Double>(
            "maxSeconds", .number(0.5...3600), default: 30,
            help: "voice, speakers: longer turns are split at their quietest point."
        ).only(where: mode, is: .voice, .speakers)
        public static let joinPause = StageOption<Double>(
            "joinPause", .number(0...60), default: 0,
            help:
                "voice: segments with pauses up to this long between them are one chunk (pauses kept) while it fits "
                + "in maxSeconds, cut at its last pause: fewer, longer chunks for Whisper's 30-s window (0: off)."
        ).only(where: mode, is: .voice)
        public static let threshold = StageOption<Double>(
            "threshold", .number(1...60), default: 12,
            help: "voice, energy: dB above the noise floor that counts as speech."
        )
        .only(where: mode, is: .voice).only(where: detector, is: .energy)
        public static let detector = StageOption<DetectorName>(
            "detector", default: .energy,
            help:
                "voice: energy (no model; any sound louder than the background) or silero (the Silero VAD network "
                + "that make setup installs; speech only, not music or noise; takes 16 kHz mono)."
        ).only(where: mode, is: .voice)
        public static let vadModel = StageOption<String>(
            "vadModel", .string, default: "silero",
            help: "voice, silero: an installed model name, or a ggml Silero VAD file (relative to the spec)."
        )
        .only(where: mode, is: .voice).only(where: detector, is: .silero)
        public static let speechProbability = StageOption<Double>(
            "speechProbability", .number(0.05...0.95), default: 0.5,
            help: "voice, silero: the probability from which a 32-ms window counts as speech."
        )
        .only(where: mode, is: .voice).only(where: detector, is: .silero)

        public static let speakers = StageOption<Int?>(
            "speakers", .integer(1...20),
            help: "speakers: how many speakers there are (unset: as many as speakerThreshold finds)."
        ).only(where: mode, is: .speakers)
        public static let speakerThreshold = StageOption<Double>(
            "speakerThreshold", .number(0.05...2), default: 0.8,
            help: "speakers, without a count: the clustering's distance threshold (larger: fewer speakers)."
        ).only(where: mode, is: .speakers)
        public static let voiceMatch = StageOption<Double>(
            "voiceMatch", .number(0...1), default: 0.5,
            help:
                "speakers: the cosine similarity of mean voice embeddings from which two speakers are one (a "
                + "speaker of an earlier block, an enrolled voice)."
        ).only(where: mode, is: .speakers)
        public static let minTurn = StageOption<Double>(
            "minTurn", .number(0...10), default: 0.3,
            help: "speakers: shorter turns go to the neighbouring turn (within 0.5 s)."
        ).only(where: mode, is: .speakers)
        public static let overlapSpeech = StageOption<OverlapPolicy>(
            "overlapSpeech", default: .first,
            help: "speakers: speech of two at once: first keeps it with the speaker who started first; drop drops it."
        ).only(where: mode, is: .speakers)
        public static let voices = StageOption<[String: String]>(
            "voices", .namedPaths, default: [:],
            help:
                "speakers: enrolled voices, names to clips (16-bit PCM WAV, relative to the spec): a speaker who "
                + "matches one (voiceMatch) is given its name; the rest are numbered."
        ).only(where: mode, is: .speakers)
        public static let blockSeconds = StageOption<Double>(
            "blockSeconds", .number(30...3600), default: 600,
            help:
                "speakers: audio diarized at once (memory holds one block whatever the input's length); blocks' "
                + "speakers are matched by voice."
        ).only(where: mode, is: .speakers)
        public static let windowShift = StageOption<Double>(
            "windowShift", .number(0.05...1), default: 0.25,
            help:
                "speakers: the segmentation window's hop, as a fraction of its 10 s (smaller: slower; 0.5 halves the "
                + "time and misplaced a turn's end in tests)."
        ).only(where: mode, is: .speakers)

    }

    /// The voice detectors `detector` names.
    public enum DetectorName: String, Sendable, CaseIterable, OptionValue { case energy, silero }

    public static let options: [OptionSpec] = [
        Option.mode.spec, Option.seconds.spec, Option.overlap.spec, Option.minSilence.spec, Option.padding.spec,
        Option.minSeconds.spec, Option.maxSeconds.spec, Option.joinPause.spec, Option.threshold.spec,
        Option.detector.spec, Option.vadModel.spec, Option.speechProbability.spec, Option.speakers.spec,
        Option.speakerThreshold.spec, Option.voiceMatch.spec, Option.minTurn.spec, Option.overlapSpeech.spec,
        Option.voices.spec, Option.blockSeconds.spec, Option.windowShift.spec,
    ]

    /// Mode speakers counts each speaker's talk time and turns, for the item's report line.
    public static let factsGiven = ItemFact.list(.speakerTalk)

    public static func configure(_ options: StageOptions) throws -> Configuration {
        let mode = options[Option.mode]
        let seconds = options[Option.seconds] ?? (mode == .tail || mode == .whole ? 300 : 8)
        let overlap = options[Option.overlap]
        if mode == .window && overlap >= seconds {
            throw options.error(Option.overlap, "must be shorter than the window (\(seconds) s)")
        }
        if options.isSet(Option.speakers) && options.isSet(Option.speakerThreshold) {
            throw options.error(Option.speakerThreshold, "applies only when speakers (the count) is not set")
        }
        let detector = options[Option.detector]
        let voice = VoiceDetector.Settings(
            minSilence: options[Option.minSilence], padding: options[Option.padding],
            minSeconds: options[Option.minSeconds], maxSeconds: options[Option.maxSeconds],
            thresholdDB: options[Option.threshold],
            detector: detector == .silero
                ? .silero(model: SileroVAD.resolve(options[Option.vadModel], baseDirectory: options.baseDirectory).file)
                : .energy,
            speechProbability: options[Option.speechProbability], joinPause: options[Option.joinPause])
        if voice.joinPause > 0 && voice.joinPause <= voice.minSilence {
            throw options.error(Option.joinPause, "must be longer than minSilence (\(voice.minSilence) s), or 0")
        }
        if voice.minSeconds >= voice.maxSeconds {
            throw options.error(Option.minSeconds, "must be less than maxSeconds (\(voice.maxSeconds))")
        }
        var configuration = Configuration(mode: mode, seconds: seconds, overlap: overlap, voice: voice)
        if mode == .speakers { configuration.speakers = try speakerSettings(options) }
        return configuration
    }

    /// Mode speakers' settings; an enrolled voice's missing clip fails here (exit 66), naming
    /// the option.
    static func speakerSettings(_ options: StageOptions) throws -> SpeakerSettings {
        let voices = options.urls(Option.voices).map { SpeakerSettings.VoiceClip(name: $0.name, file: $0.url) }
        for voice in voices where !FileManager.default.fileExists(atPath: voice.file.path) {
            throw VoxError(
                .noInput, "\(options.path).\(Option.voices.name).\(voice.name): no such file: \(voice.file.path)")
        }
        return SpeakerSettings(
            speakers: options[Option.speakers], clusterThreshold: options[Option.speakerThreshold],
            match: options[Option.voiceMatch], minTurn: options[Option.minTurn], padding: options[Option.padding],
            overlap: options[Option.overlapSpeech],
            maxSeconds: options[Option.maxSeconds], blockSeconds: options[Option.blockSeconds],
            windowShift: options[Option.windowShift], voices: voices,
            voicesPath: "\(options.path).\(Option.voices.name)",
            models: SpeakerModels.installed())
    }

    public static func outputFormat(_ configuration: Configuration, input: StreamFormat) throws -> StreamFormat {
        if configuration.mode == .speakers,
            input != StreamFormat(sampleRate: SpeakerModels.sampleRate, channels: 1)
        {
            throw PlanError(
                "mode speakers takes 16 kHz mono; add a stage {\"kind\": \"resample\", \"rate\": 16000, "
                    + "\"channels\": 1} before it")
        }
        if configuration.mode == .voice, case .silero = configuration.voice.detector,
            input != StreamFormat(sampleRate: SileroVAD.sampleRate, channels: 1)
        {
            throw PlanError(
                "the silero detector takes 16 kHz mono; add a stage {\"kind\": \"resample\", \"rate\": 16000, "
                    + "\"channels\": 1} before it")
        }
        return input
    }

    /// The Silero model file is part of the item key: another model redoes the items.
    public static func identityFiles(_ configuration: Configuration) -> [URL] {
        if let speakers = configuration.speakers {
            return [speakers.models.segmentation, speakers.models.embedding] + speakers.voices.map(\.file)
        }
        guard configuration.mode == .voice, case .silero(let model) = configuration.voice.detector else { return [] }
        return [model]
    }

    /// With Silero, its model must load: exit 69 naming the file when it is missing.
    public func prepare() async throws {
        if let speakers = configuration.speakers {
            _ = try await speakerEngines(speakers)
            return
        }
        guard configuration.mode == .voice || configuration.speechOnly,
            case .silero(let model) = configuration.voice.detector
        else { return }
        guard FileManager.default.fileExists(atPath: model.path) else {
            throw ChunkError(
                .modelUnavailable,
                "the Silero VAD model is not installed: \(model.path) (run make setup, or name a file with vadModel)")
        }
        _ = try SileroVAD(modelFile: model)
    }

    /// A served request is one turn: the whole clip, up to `maxSeconds`, as one chunk; with the
    /// Silero detector, from the start of the speech it hears to its end, and nothing when it
    /// hears none (the tutor app sends every 8-s interval, a learner thinking in silence too).
    public static func oneTurn(_ configuration: Configuration, maxSeconds: Double) -> Configuration {
        var turn = configuration
        if case .silero = configuration.voice.detector, configuration.mode == .voice { turn.speechOnly = true }
        turn.mode = .whole
        turn.speakers = nil
        turn.seconds = maxSeconds
        turn.overlap = 0
        return turn
    }

    public static func demand(_ configuration: Configuration) -> StreamDemand {
        configuration.mode == .tail ? .tail(configuration.seconds) : .whole
    }

    public let id: String
    public let configuration: Configuration
    let engines: EngineCache
    let blocking: BlockingExecutor
    let rateConversion: (any RateConversion)?

    public init(id: String, configuration: Configuration, context: StageContext) {
        self.id = id
        self.configuration = configuration
        engines = context.engines
        blocking = context.blocking
        rateConversion = context.rateConversion
    }

    public func run(_ input: Inbox<AudioBlock>, _ output: Outbox<AudioChunk>, _ item: ItemContext) async throws {
        if let speakers = configuration.speakers {
            return try await runSpeakers(speakers, input, output, facts: item.facts)
        }
        var cutter: (any Cutter)?
        for try await block in input {
            if cutter == nil { cutter = try makeCutter(block.format) }
            guard let current = cutter else { continue }
            guard block.format == current.format else {
                throw ChunkError(
                    .unsupported, "the stream changed format mid-way (\(current.format) to \(block.format))")
            }
            for chunk in try current.push(block) { try await output.send(chunk) }
        }
        if let cutter { for chunk in cutter.finish() { try await output.send(chunk) } }
    }

    func makeCutter(_ format: AudioFormat) throws -> any Cutter {
        switch configuration.mode {
        case .window: WindowCutter(format: format, seconds: configuration.seconds, overlap: configuration.overlap)
        case .voice: try VoiceCutter(format: format, settings: configuration.voice)
        case .tail: TailCutter(format: format, seconds: configuration.seconds)
        case .whole:
            WholeCutter(
                format: format, seconds: configuration.seconds,
                speech: configuration.speechOnly ? try VoiceCutter(format: format, settings: configuration.voice) : nil)
        case .speakers:
            // Mode speakers has a cutter of its own that awaits its engines (`runSpeakers`).
            throw ChunkError(.unsupported, "mode speakers is cut by runSpeakers")
        }
    }
}

/// Why chunking failed.
public typealias ChunkError = ModuleError<ChunkFailure>

public enum ChunkFailure: FailureCode {
    /// A stream the chunker cannot take (a format change mid-way, one the detector refuses).
    case unsupported
    /// More audio than mode whole takes as one chunk.
    case tooLong
    /// The voice detector's model cannot be loaded.
    case modelUnavailable

    public var category: VoxFailure {
        switch self {
        case .unsupported, .tooLong: .badInput
        case .modelUnavailable: .unavailable
        }
    }
}

/// One item's chunking state: blocks in, finished chunks out.
protocol Cutter: AnyObject {
    var format: AudioFormat { get }
    func push(_ block: AudioBlock) throws -> [AudioChunk]
    func finish() -> [AudioChunk]
}

/// The whole stream as one chunk, up to `seconds`; more fails the item. With a voice cutter
/// (`speech`), the chunk is the stretch from the start of the first speech segment it finds to
/// the end of the last (padded as mode voice pads them: a clip of one utterance gives the chunk
/// mode voice gives), and nothing when it finds none.
final class WholeCutter: Cutter {
    let format: AudioFormat
    private let limit: Int
    private let seconds: Double
    private var samples: [Float] = []
    private var start: Int64?
    private let speech: VoiceCutter?
    /// Where the speech segments found so far start and end (stream seconds).
    private var spoken: (start: Double, end: Double)?

    init(format: AudioFormat, seconds: Double, speech: VoiceCutter? = nil) {
        self.format = format
        self.seconds = seconds
        self.speech = speech
        limit = max(1, Int((seconds * Double(format.sampleRate)).rounded())) * format.channels
    }

    func push(_ block: AudioBlock) throws -> [AudioChunk] {
        if start == nil { start = block.frameOffset }
        guard samples.count + block.samples.count <= limit else {
            throw ChunkError(
                .tooLong,
                "the audio is longer than \(String(format: "%g", seconds)) s, the most mode whole takes as one chunk")
        }
        samples.append(contentsOf: block.samples)
        if let speech { heard(try speech.push(block)) }
        return []
    }

    private func heard(_ segments: [AudioChunk]) {
        for segment in segments {
            spoken = (min(spoken?.start ?? segment.start, segment.start), max(spoken?.end ?? segment.end, segment.end))
        }
    }

    func finish() -> [AudioChunk] {
        if let speech { heard(speech.finish()) }
        let frames = samples.count / format.channels
        guard frames > 0, let start, speech == nil || spoken != nil else { return [] }
        let rate = Double(format.sampleRate)
        var from = 0, to = frames
        if let spoken {
            from = min(frames, max(0, Int((spoken.start * rate).rounded()) - Int(start)))
            to = min(frames, max(from, Int((spoken.end * rate).rounded()) - Int(start)))
        }
        guard to > from else { return [] }
        return [
            AudioChunk(
                format: format, samples: Array(samples[(from * format.channels)..<(to * format.channels)]),
                start: Double(start + Int64(from)) / rate, end: Double(start + Int64(to)) / rate, index: 0,
                cut: .whole)
        ]
    }
}

/// Fixed windows with overlap; the last short window is kept.
final class WindowCutter: Cutter {
    let format: AudioFormat
    private let window: Int
    private let step: Int
    private var buffer: [Float] = []
    /// Frame index (stream time) of `buffer`'s first frame.
    private var bufferStart: Int64 = 0
    private var index = 0
    private var emittedThrough: Int64 = 0

    init(format: AudioFormat, seconds: Double, overlap: Double) {
        self.format = format
        window = max(1, Int((seconds * Double(format.sampleRate)).rounded()))
        step = max(1, window - Int((overlap * Double(format.sampleRate)).rounded()))
    }

    func push(_ block: AudioBlock) -> [AudioChunk] {
        if buffer.isEmpty { bufferStart = block.frameOffset }
        buffer.append(contentsOf: block.samples)
        var out: [AudioChunk] = []
        let ch = format.channels
        while buffer.count / ch >= window {
            out.append(chunk(Array(buffer[0..<window * ch]), start: bufferStart))
            emittedThrough = bufferStart + Int64(window)
            buffer.removeFirst(step * ch)
            bufferStart += Int64(step)
        }
        return out
    }

    func finish() -> [AudioChunk] {
        // Keep the last short window, unless it holds nothing a previous window did not.
        let frames = buffer.count / format.channels
        guard frames > 0, bufferStart + Int64(frames) > emittedThrough else { return [] }
        return [chunk(buffer, start: bufferStart)]
    }

    private func chunk(_ samples: [Float], start: Int64) -> AudioChunk {
        defer { index += 1 }
        let rate = Double(format.sampleRate)
        let frames = samples.count / format.channels
        return AudioChunk(
            format: format, samples: samples, start: Double(start) / rate, end: Double(start + Int64(frames)) / rate,
            index: index, cut: .window)
    }
}

/// The last `seconds` of the stream in a ring buffer allocated once.
final class TailCutter: Cutter {
    let format: AudioFormat
    private(set) var ring: RingBuffer
    private var total: Int64 = 0

    init(format: AudioFormat, seconds: Double) {
        self.format = format
        ring = RingBuffer(capacity: max(1, Int((seconds * Double(format.sampleRate)).rounded())) * format.channels)
    }

    func push(_ block: AudioBlock) -> [AudioChunk] {
        ring.append(block.samples)
        total = block.frameOffset + Int64(block.frames)
        return []
    }

    func finish() -> [AudioChunk] {
        let samples = ring.contents()
        let frames = samples.count / format.channels
        guard frames > 0 else { return [] }
        let rate = Double(format.sampleRate)
        return [
            AudioChunk(
                format: format, samples: samples, start: Double(total - Int64(frames)) / rate,
                end: Double(total) / rate, index: 0, cut: .tail)
        ]
    }
}

/// A fixed-capacity ring of samples: the newest `capacity` are kept.
struct RingBuffer {
    private var storage: [Float]
    private var head = 0
    private(set) var count = 0

    init(capacity: Int) { storage = [Float](repeating: 0, count: capacity) }

    /// The storage's size in samples; constant for the buffer's life.
    var capacity: Int { storage.count }

    mutating func append(_ samples: [Float]) {
        let cap = storage.count
        var source = samples[...]
        if source.count > cap { source = source.suffix(cap) }
        count = min(cap, count + source.count)
        while !source.isEmpty {
            let n = min(cap - head, source.count)
            storage.replaceSubrange(head..<head + n, with: source.prefix(n))
            head = (head + n) % cap
            source = source.dropFirst(n)
        }
    }

    /// The kept samples, oldest first.
    func contents() -> [Float] {
        if count < storage.count { return Array(storage[0..<count]) }
        return Array(storage[head...] + storage[..<head])
    }
}
