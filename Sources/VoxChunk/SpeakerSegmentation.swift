internal import CSherpaOnnx
import Foundation

/// pyannote segmentation 3.0 run by onnxruntime directly (the library sherpa-onnx ships): who of
/// up to three local speakers talks in each 17-ms frame of a 10-s window. One session, shared by
/// every item of a run (through the engine cache): onnxruntime runs a session from several
/// threads at once, and each run is on one thread, so a window gives the same frames whatever
/// else runs.
final class SpeakerSegmentation: @unchecked Sendable {
    /// Samples in a window (10 s at 16 kHz), and the model's frame hop and receptive field.
    static let window = 160_000
    static let frameShift = 270
    static let frameSize = 991
    static let localSpeakers = 3
    /// The powerset classes' speakers: none, each alone, each pair.
    static let classes: [[UInt8]] = [
        [0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1],
    ]

    private let api: UnsafePointer<UnsafeRawPointer?>
    private let env: OpaquePointer
    private let session: OpaquePointer
    private let memory: OpaquePointer

    init(model: URL) throws {
        func failure(_ status: OpaquePointer?, _ api: UnsafePointer<UnsafeRawPointer?>) -> ChunkError {
            ChunkError(
                .modelUnavailable,
                "onnxruntime could not load the segmentation model \(model.path): \(Self.message(status, api))")
        }
        guard let api = vox_ort_api() else {
            throw ChunkError(.modelUnavailable, "the onnxruntime library does not offer its C API")
        }
        self.api = api
        var env: OpaquePointer?
        if let status = vox_ort_create_env(api, "voxpipe", &env) { throw failure(status, api) }
        guard let env else { throw failure(nil, api) }
        var options: OpaquePointer?
        if let status = vox_ort_create_options(api, 1, &options) {
            vox_ort_release_env(api, env)
            throw failure(status, api)
        }
        defer { if let options { vox_ort_release_options(api, options) } }
        var session: OpaquePointer?
        if let status = vox_ort_create_session(api, env, model.path, options, &session) {
            vox_ort_release_env(api, env)
            throw failure(status, api)
        }
        var memory: OpaquePointer?
        if let status = vox_ort_cpu_memory(api, &memory) {
            if let session { vox_ort_release_session(api, session) }
            vox_ort_release_env(api, env)
            throw failure(status, api)
        }
        guard let session, let memory else { throw failure(nil, api) }
        self.env = env
        self.session = session
        self.memory = memory
    }

    deinit {
        vox_ort_release_memory(api, memory)
        vox_ort_release_session(api, session)
        vox_ort_release_env(api, env)
    }

    /// Windows the model runs at once: its LSTMs then multiply matrices by matrices, not by one
    /// vector (a window takes about a third less time). A window's frames do not depend on the
    /// batch it is in or its place there (`SpeakerSegmentationTests`), so the batch changes the
    /// speed, never the turns.
    static let batch = 4

    /// The frames of each window in `samples` (a whole number of windows, one after the other),
    /// each `frames × 3`, row by row: for each local speaker, whether it talks (the most likely
    /// powerset class has it) and how likely it talks (the classes' probabilities that have it,
    /// summed).
    func activity(_ samples: UnsafeMutableBufferPointer<Float>) throws -> [(bits: [UInt8], likelihood: [Float])] {
        precondition(samples.count > 0 && samples.count % Self.window == 0)
        let count = samples.count / Self.window
        var shape: [Int64] = [Int64(count), 1, Int64(Self.window)]
        var input: OpaquePointer?
        if let status = vox_ort_float_tensor(api, memory, samples.baseAddress, samples.count, &shape, 3, &input) {
            throw runFailure(status)
        }
        guard let input else { throw runFailure(nil) }
        defer { vox_ort_release_value(api, input) }
        var output: OpaquePointer?
        if let status = vox_ort_run(api, session, "x", input, "y", &output) { throw runFailure(status) }
        guard let output else { throw runFailure(nil) }
        defer { vox_ort_release_value(api, output) }
        var dims = [Int64](repeating: 0, count: 3)
        var rank = 0
        if let status = vox_ort_shape(api, output, &dims, 3, &rank) { throw runFailure(status) }
        var data: UnsafeMutablePointer<Float>?
        if let status = vox_ort_data(api, output, &data) { throw runFailure(status) }
        let classes = Self.classes.count
        guard rank == 3, dims[0] == Int64(count), dims[2] == Int64(classes), let data else { throw runFailure(nil) }
        let frames = Int(dims[1])
        return (0..<count).map { Self.frames(data + $0 * frames * classes, frames: frames) }
    }

    /// One window's bits and likelihoods from the model's `frames × 7` powerset scores.
    private static func frames(_ data: UnsafeMutablePointer<Float>, frames: Int) -> (bits: [UInt8], likelihood: [Float])
    {
        let classes = Self.classes.count
        var bits = [UInt8](repeating: 0, count: frames * Self.localSpeakers)
        var likelihood = [Float](repeating: 0, count: frames * Self.localSpeakers)
        var p = [Float](repeating: 0, count: classes)
        for f in 0..<frames {
            var best = 0
            for c in 1..<classes where data[f * classes + c] > data[f * classes + best] { best = c }
            var sum: Float = 0
            for c in 0..<classes {
                p[c] = Foundation.exp(data[f * classes + c] - data[f * classes + best])
                sum += p[c]
            }
            for s in 0..<Self.localSpeakers {
                bits[f * Self.localSpeakers + s] = Self.classes[best][s]
                var l: Float = 0
                for c in 0..<classes where Self.classes[c][s] != 0 { l += p[c] }
                likelihood[f * Self.localSpeakers + s] = l / sum
            }
        }
        return (bits, likelihood)
    }

    private func runFailure(_ status: OpaquePointer?) -> ChunkError {
        ChunkError(.unsupported, "the speaker segmentation failed on this audio: \(Self.message(status, api))")
    }

    /// A failed call's message (the status is released); empty without one.
    private static func message(_ status: OpaquePointer?, _ api: UnsafePointer<UnsafeRawPointer?>) -> String {
        guard let status else { return "" }
        var message = [CChar](repeating: 0, count: 512)
        vox_ort_message(api, status, &message, message.count)
        return String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
