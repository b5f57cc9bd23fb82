import VoxCore

/// `resample`: AudioBlock → AudioBlock. Changes the sample rate (8 kHz–192 kHz) with libsoxr (the
/// default: fastest and cleanest measured) or libsamplerate, and the channel count (1: average
/// down-mix, done before resampling so it costs half). Streams block by block and flushes what
/// the engine holds at end of input; blocks pass through untouched when nothing changes.
public struct ResampleStage: Stage {
    public typealias Input = AudioBlock
    public typealias Output = AudioBlock

    /// The converter: libsoxr's recipes or libsamplerate's converters.
    public enum Engine: String, Sendable, CaseIterable, OptionValue { case soxr, libsamplerate }

    /// Quality names: soxr's (quick … very-high) and libsamplerate's (best … hold; sinc-best,
    /// sinc-medium, sinc-fastest are its full names). "medium" means either engine's medium.
    public enum Quality: String, Sendable, CaseIterable, OptionValue {
        case quick, low, medium, high, veryHigh = "very-high"
        case best, fastest, linear, hold
        case sincBest = "sinc-best", sincMedium = "sinc-medium", sincFastest = "sinc-fastest"

        var normalized: Quality {
            switch self {
            case .sincBest: .best
            case .sincMedium: .medium
            case .sincFastest: .fastest
            default: self
            }
        }

        func fits(_ engine: Engine) -> Bool {
            switch (self, engine) {
            case (.sincBest, .libsamplerate), (.sincMedium, .libsamplerate), (.sincFastest, .libsamplerate): true
            case (.medium, _): true
            case (.quick, .soxr), (.low, .soxr), (.high, .soxr), (.veryHigh, .soxr): true
            case (.best, .libsamplerate), (.fastest, .libsamplerate), (.linear, .libsamplerate),
                (.hold, .libsamplerate):
                true
            default: false
            }
        }
    }

    public struct Configuration: Sendable {
        /// Target rate; nil keeps the input's.
        public var rate: Int?
        /// Target channel count; nil keeps the input's.
        public var channels: Int?
        public var engine: Engine
        public var quality: Quality
    }

    public static let kind = "resample"
    public static let summary = "Changes sample rate (libsoxr or libsamplerate) and channel count, streaming."
    /// Each option, declared once.
    public enum Option {
        public static let rate = StageOption<Int?>(
            "rate", .integer(8000...192_000),
            help: "Target sample rate in Hz (16000, 48000, …); absent keeps the input's.")
        public static let channels = StageOption<Channels>(
            "channels", .integerOrChoice(1...2, ["keep"]), default: .keep,
            help: "1 averages all channels to mono (before resampling); 2 makes stereo; keep leaves them.")
        public static let engine = StageOption<Engine>(
            "engine", default: .soxr, help: "soxr (default, fastest and cleanest) or libsamplerate.")
        /// No default of its own: it depends on the engine.
        public static let quality = StageOption<Quality?>(
            "quality", .choice(Quality.allCases.map(\.rawValue)),
            help:
                "soxr: quick | low | medium | high (default) | very-high; libsamplerate: best | medium (default) | "
                + "fastest | linear | hold.")
    }

    /// `channels`: a count, or the input's (`keep`).
    public enum Channels: Sendable, Equatable, OptionValue {
        case keep
        case count(Int)

        public init?(json: JSONValue) {
            if json.stringValue == "keep" {
                self = .keep
            } else if let count = json.numberValue.flatMap({ Int(exactly: $0) }) {
                self = .count(count)
            } else {
                return nil
            }
        }

        public var json: JSONValue? {
            switch self {
            case .keep: .string("keep")
            case .count(let count): .number(Double(count))
            }
        }
    }

    public static let options: [OptionSpec] = [
        Option.rate.spec, Option.channels.spec, Option.engine.spec, Option.quality.spec,
    ]

    public static func configure(_ options: StageOptions) throws -> Configuration {
        let engine = options[Option.engine]
        let quality: Quality
        if let q = options[Option.quality] {
            guard q.fits(engine) else {
                let names = Quality.allCases.filter { $0.fits(engine) }.map(\.rawValue).joined(separator: " | ")
                throw options.error(
                    Option.quality,
                    "\"\(q.rawValue)\" is not a quality of engine \(engine.rawValue) (it takes \(names))")
            }
            quality = q.normalized
        } else {
            quality = engine == .soxr ? .high : .medium
        }
        let channels: Int? =
            switch options[Option.channels] {
            case .keep: nil
            case .count(let count): count
            }
        return Configuration(rate: options[Option.rate], channels: channels, engine: engine, quality: quality)
    }

    public static func demand(_ configuration: Configuration) -> StreamDemand { .passThrough }

    /// The resampling libraries' versions, for provenance records.
    /// The engine, its quality (defaults filled in) and the library's version, for evidence.
    public static func provenance(_ configuration: Configuration) -> [String: JSONValue]? {
        var facts: [String: JSONValue] = [
            "engine": .string(configuration.engine.rawValue),
            "quality": .string(configuration.quality.rawValue),
            "library": .string(configuration.engine == .soxr ? SoxrEngine.version : SampleRateEngine.version),
            "channels": configuration.channels.map { .number(Double($0)) } ?? "keep",
        ]
        if let rate = configuration.rate { facts["rate"] = .number(Double(rate)) }
        return facts
    }

    /// The `.resampling` role, with the format it gives: how evidence finds the run's resamplers.
    public static func declarations(_ configuration: Configuration) -> StageDeclarations {
        StageDeclarations().declaring(
            .resampling, StreamFormat(sampleRate: configuration.rate, channels: configuration.channels))
    }

    public static var libraryVersions: [String: String] {
        ["libsoxr": SoxrEngine.version, "libsamplerate": SampleRateEngine.version]
    }

    public static func outputFormat(_ configuration: Configuration, input: StreamFormat) throws -> StreamFormat {
        StreamFormat(
            sampleRate: configuration.rate ?? input.sampleRate, channels: configuration.channels ?? input.channels)
    }

    public let id: String
    public let configuration: Configuration

    public init(id: String, configuration: Configuration, context: StageContext) {
        self.id = id
        self.configuration = configuration
    }

    public func run(_ input: Inbox<AudioBlock>, _ output: Outbox<AudioBlock>, _ item: ItemContext) async throws {
        var converter: Converter?
        for try await block in input {
            if converter == nil {
                converter = try Converter(
                    input: block.format, configuration: configuration, firstFrame: block.frameOffset)
            }
            guard let converter else { continue }
            guard block.format == converter.input else {
                throw ResampleError(
                    .unsupported, "the stream changed format mid-way (\(converter.input) to \(block.format))")
            }
            if let out = try converter.convert(block) { try await output.send(out) }
        }
        if let converter, let tail = try converter.finish() { try await output.send(tail) }
    }
}

/// One item's conversion: mixing, then the engine; counts output frames for block offsets.
final class Converter {
    let input: AudioFormat
    let output: AudioFormat
    private let engine: (any RateConverter)?
    private var produced: Int64 = 0
    private var sentAny = false

    init(input: AudioFormat, configuration: ResampleStage.Configuration, firstFrame: Int64 = 0) throws {
        self.input = input
        // A stream that starts later (a decoder that seeked to a whole second) keeps its place.
        produced = firstFrame * Int64(configuration.rate ?? input.sampleRate) / Int64(input.sampleRate)
        let channels = configuration.channels ?? input.channels
        if channels == 2 && input.channels > 2 {
            throw ResampleError(.unsupported, "cannot map \(input.channels) channels to stereo; use channels 1 or keep")
        }
        output = AudioFormat(sampleRate: configuration.rate ?? input.sampleRate, channels: channels)
        if output.sampleRate == input.sampleRate {
            engine = nil
        } else if configuration.engine == .soxr {
            engine = try SoxrEngine(
                inputRate: input.sampleRate, outputRate: output.sampleRate, channels: channels,
                recipe: configuration.quality)
        } else {
            engine = try SampleRateEngine(
                inputRate: input.sampleRate, outputRate: output.sampleRate, channels: channels,
                converter: configuration.quality)
        }
    }

    /// Whether blocks go through untouched.
    var isPassThrough: Bool { engine == nil && input.channels == output.channels }

    func convert(_ block: AudioBlock) throws -> AudioBlock? {
        if isPassThrough { return block }
        let mixed = Mixer.mix(block.samples, from: input.channels, to: output.channels)
        let samples = try engine?.process(mixed) ?? mixed
        return emit(samples, force: block.samples.isEmpty)
    }

    func finish() throws -> AudioBlock? {
        guard let engine else { return nil }
        return emit(try engine.flush(), force: false)
    }

    private func emit(_ samples: [Float], force: Bool) -> AudioBlock? {
        // An empty block still goes out first so downstream learns the format of an empty stream.
        guard !samples.isEmpty || (force && !sentAny) else { return nil }
        let block = AudioBlock(format: output, samples: samples, frameOffset: produced)
        produced += Int64(block.frames)
        sentAny = true
        return block
    }
}

/// Channel mixing on interleaved Float32.
enum Mixer {
    static func mix(_ samples: [Float], from inChannels: Int, to outChannels: Int) -> [Float] {
        if inChannels == outChannels { return samples }
        let frames = samples.count / inChannels
        if outChannels == 1 {
            var out = [Float](repeating: 0, count: frames)
            let scale = 1 / Float(inChannels)
            samples.withUnsafeBufferPointer { src in
                out.withUnsafeMutableBufferPointer { dst in
                    if inChannels == 2 {
                        // The common case, unrolled.
                        for f in 0..<frames { dst[f] = (src[2 &* f] + src[2 &* f &+ 1]) * 0.5 }
                    } else {
                        for f in 0..<frames {
                            var sum: Float = 0
                            let base = f &* inChannels
                            for c in 0..<inChannels { sum += src[base &+ c] }
                            dst[f] = sum * scale
                        }
                    }
                }
            }
            return out
        }
        // Mono to stereo: the same signal on both sides.
        var out = [Float](repeating: 0, count: frames * outChannels)
        for f in 0..<frames { for c in 0..<outChannels { out[f * outChannels + c] = samples[f] } }
        return out
    }
}
