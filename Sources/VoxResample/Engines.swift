internal import CSampleRate
internal import CSoxr
import VoxCore

/// libsoxr at its high-quality recipe, for stages that convert rates on the side (a WAV
/// writer's `rate`); the executable hands it to them through `StageContext`.
public struct SoxrRateConversion: RateConversion {
    public init() {}

    public func converter(channels: Int, from inputRate: Int, to outputRate: Int) throws -> any RateConverter {
        try SoxrEngine(inputRate: inputRate, outputRate: outputRate, channels: channels, recipe: .high)
    }
}

/// libsoxr, at the given quality recipe.
final class SoxrEngine: RateConverter {
    private let soxr: soxr_t
    private let channels: Int
    private let ratio: Double

    init(inputRate: Int, outputRate: Int, channels: Int, recipe: ResampleStage.Quality) throws {
        var ioSpec = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var quality = soxr_quality_spec(UInt(recipe.soxrRecipe), 0)
        var runtime = soxr_runtime_spec(1)
        var error: soxr_error_t?
        guard
            let soxr = soxr_create(
                Double(inputRate), Double(outputRate), UInt32(channels), &error, &ioSpec, &quality, &runtime),
            error == nil
        else {
            throw ResampleError(.engine, "libsoxr: \(error.map { String(cString: $0) } ?? "cannot create resampler")")
        }
        self.soxr = soxr
        self.channels = channels
        ratio = Double(outputRate) / Double(inputRate)
    }

    deinit { soxr_delete(soxr) }

    func process(_ samples: [Float]) throws -> [Float] {
        let input = finiteSamples(samples)
        let inFrames = input.count / channels
        guard inFrames > 0 else { return [] }
        var output: [Float] = []
        output.reserveCapacity((Int(Double(inFrames) * ratio) + 64) * channels)
        var scratch = [Float](repeating: 0, count: (Int(Double(inFrames) * ratio) + 64) * channels)
        let capacity = scratch.count / channels
        var consumed = 0
        repeat {
            var idone = 0, odone = 0
            try input.withUnsafeBufferPointer { inPtr in
                try scratch.withUnsafeMutableBufferPointer { outPtr in
                    guard let base = inPtr.baseAddress else { return }
                    try check(
                        soxr_process(
                            soxr, base + consumed * channels, inFrames - consumed, &idone, outPtr.baseAddress, capacity,
                            &odone))
                }
            }
            consumed += idone
            output.append(contentsOf: scratch[0..<odone * channels])
            if idone == 0 && odone == 0 { break }
        } while consumed < inFrames
        return output
    }

    func flush() throws -> [Float] {
        var output: [Float] = []
        var scratch = [Float](repeating: 0, count: 8192 * channels)
        while true {
            var odone = 0
            try scratch.withUnsafeMutableBufferPointer { outPtr in
                try check(soxr_process(soxr, nil, 0, nil, outPtr.baseAddress, 8192, &odone))
            }
            if odone == 0 { break }
            output.append(contentsOf: scratch[0..<odone * channels])
        }
        return output
    }

    private func check(_ error: soxr_error_t?) throws {
        if let error { throw ResampleError(.engine, "libsoxr: \(String(cString: error))") }
    }

    static var version: String { String(cString: soxr_version()) }
}

/// libsamplerate, with one of its converters.
final class SampleRateEngine: RateConverter {
    private let state: OpaquePointer
    private let channels: Int
    private let ratio: Double

    init(inputRate: Int, outputRate: Int, channels: Int, converter: ResampleStage.Quality) throws {
        var error: Int32 = 0
        guard let state = src_new(converter.libsamplerateConverter, Int32(channels), &error) else {
            throw ResampleError(.engine, "libsamplerate: \(String(cString: src_strerror(error)))")
        }
        self.state = state
        self.channels = channels
        ratio = Double(outputRate) / Double(inputRate)
    }

    deinit { src_delete(state) }

    func process(_ input: [Float]) throws -> [Float] { try run(finiteSamples(input), endOfInput: false) }

    func flush() throws -> [Float] { try run([], endOfInput: true) }

    private func run(_ input: [Float], endOfInput: Bool) throws -> [Float] {
        let inFrames = input.count / channels
        var output: [Float] = []
        var scratch = [Float](repeating: 0, count: (Int(Double(max(inFrames, 1024)) * ratio) + 256) * channels)
        var consumed = 0
        while true {
            var data = SRC_DATA()
            var produced = 0
            var used = 0
            let capacity = scratch.count / channels
            try input.withUnsafeBufferPointer { inPtr in
                try scratch.withUnsafeMutableBufferPointer { outPtr in
                    data.data_in = inPtr.baseAddress.map { UnsafePointer($0 + consumed * channels) }
                    data.input_frames = inFrames - consumed
                    data.data_out = outPtr.baseAddress
                    data.output_frames = capacity
                    data.end_of_input = endOfInput ? 1 : 0
                    data.src_ratio = ratio
                    let status = src_process(state, &data)
                    if status != 0 {
                        throw ResampleError(.engine, "libsamplerate: \(String(cString: src_strerror(status)))")
                    }
                    produced = Int(data.output_frames_gen)
                    used = Int(data.input_frames_used)
                }
            }
            consumed += used
            output.append(contentsOf: scratch[0..<produced * channels])
            if endOfInput ? produced == 0 : (consumed >= inFrames && produced < capacity) { break }
            if !endOfInput && used == 0 && produced == 0 { break }
        }
        return output
    }

    static var version: String { String(cString: src_get_version()) }
}

extension ResampleStage.Quality {
    var soxrRecipe: Int32 {
        switch self {
        case .quick: Int32(SOXR_QQ)
        case .low: Int32(SOXR_LQ)
        case .medium: Int32(SOXR_MQ)
        case .high: Int32(SOXR_HQ)
        case .veryHigh: Int32(SOXR_VHQ)
        default: Int32(SOXR_HQ)
        }
    }

    var libsamplerateConverter: Int32 {
        switch self {
        case .best: Int32(SRC_SINC_BEST_QUALITY)
        case .medium: Int32(SRC_SINC_MEDIUM_QUALITY)
        case .fastest: Int32(SRC_SINC_FASTEST)
        case .linear: Int32(SRC_LINEAR)
        case .hold: Int32(SRC_ZERO_ORDER_HOLD)
        default: Int32(SRC_SINC_MEDIUM_QUALITY)
        }
    }
}

/// The samples a resampling filter may take: NaN becomes 0 (silence) and ±infinity ±1 (full
/// scale, as an integer file would clip it); other values are kept. One NaN in a filter's
/// window makes every output sample it reaches NaN, and an infinity makes them infinite — a
/// burst of hundreds of full-scale samples once written — where a clipped sample only rings
/// for a few.
func finiteSamples(_ samples: [Float]) -> [Float] {
    guard samples.contains(where: { !$0.isFinite }) else { return samples }
    return samples.map { $0.isNaN ? 0 : $0.isInfinite ? ($0 > 0 ? 1 : -1) : $0 }
}
