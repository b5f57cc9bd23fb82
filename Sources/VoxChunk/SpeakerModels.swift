internal import CSherpaOnnx
import Foundation
import VoxCore
import VoxProcess

/// The two models of speaker diarization that `make setup` converts (scripts/setup-diarization.sh)
/// into `<prefix>/share/voxpipe/diarization/`: pyannote's segmentation 3.0 (who speaks in each
/// 17-ms frame of a 10-s window, up to three at once) and 3D-Speaker's CAM++ speaker embedding
/// (192 numbers per voice). `$VOXPIPE_DIARIZATION_MODELS` (colon-separated) is searched first.
public struct SpeakerModels: Sendable, Equatable {
    public static let segmentationFile = "pyannote-segmentation-3.0.onnx"
    public static let embeddingFile = "3dspeaker-campplus-zh-en-advanced.onnx"
    public static let sampleRate = 16000

    public var segmentation: URL
    public var embedding: URL

    /// The first folder of the search path that holds both files; else the files where `make
    /// setup` puts them, so prepare can name what is missing.
    public static func installed() -> SpeakerModels {
        let folders = installedDataSearchPath(variable: "VOXPIPE_DIARIZATION_MODELS", folder: "diarization")
        let folder =
            folders.first { folder in
                [segmentationFile, embeddingFile].allSatisfy {
                    FileManager.default.fileExists(atPath: folder.appendingPathComponent($0).path)
                }
            } ?? folders.first(where: { $0.path.hasPrefix("/usr/local/") }) ?? folders[0]
        return SpeakerModels(
            segmentation: folder.appendingPathComponent(segmentationFile).standardizedFileURL,
            embedding: folder.appendingPathComponent(embeddingFile).standardizedFileURL)
    }

    /// Throws `ChunkError(.modelUnavailable)` (exit 69) naming the first file that is missing.
    func checkPresent() throws {
        for file in [segmentation, embedding] where !FileManager.default.fileExists(atPath: file.path) {
            throw ChunkError(
                .modelUnavailable,
                "the speaker diarization model is not installed: \(file.path) (run make setup)")
        }
    }
}

/// CAM++ speaker embeddings of stretches of audio: a block's speakers (to tell whether one is
/// a speaker of an earlier block) and enrolled voices. Shared by every item of a run (through
/// the engine cache): computing is a `const` call, and onnxruntime runs a session from several
/// threads at once.
final class SpeakerEmbedder: @unchecked Sendable {
    private let handle: OpaquePointer
    let dimension: Int

    init(model: URL) throws {
        let created: OpaquePointer? = model.path.withCString { path in
            "cpu".withCString { cpu in
                var c = SherpaOnnxSpeakerEmbeddingExtractorConfig()
                c.model = path
                c.num_threads = 1
                c.provider = cpu
                return SherpaOnnxCreateSpeakerEmbeddingExtractor(&c)
            }
        }
        guard let created else {
            throw ChunkError(.modelUnavailable, "sherpa-onnx could not load the speaker embedding model \(model.path)")
        }
        handle = created
        dimension = Int(SherpaOnnxSpeakerEmbeddingExtractorDim(created))
    }

    deinit { SherpaOnnxDestroySpeakerEmbeddingExtractor(handle) }

    /// The most samples embedded at once (10 s): the model's memory grows with its input (a
    /// minute took 130 MB, held by onnxruntime's arena from then on), so a run's peak would
    /// depend on the longest speech it met.
    static let longest = 10 * SpeakerModels.sampleRate

    /// The embedding of `samples` (16 kHz mono), scaled to length 1; nil when there is too little
    /// audio for one. Longer than `longest`: the mean of the embeddings of equal pieces no longer
    /// than that, each weighted by its length.
    func embedding(_ samples: [Float]) -> [Float]? {
        guard samples.count > Self.longest else { return embedding(piece: samples[...]) }
        let pieces = (samples.count + Self.longest - 1) / Self.longest
        var sum = [Float](repeating: 0, count: dimension)
        var found = false
        for k in 0..<pieces {
            let piece = samples[(k * samples.count / pieces)..<((k + 1) * samples.count / pieces)]
            guard let embedding = embedding(piece: piece) else { continue }
            found = true
            for d in sum.indices { sum[d] += embedding[d] * Float(piece.count) }
        }
        return found ? SpeakerEmbedding.normalized(sum) : nil
    }

    private func embedding(piece samples: ArraySlice<Float>) -> [Float]? {
        guard !samples.isEmpty, let count = Int32(exactly: samples.count),
            let stream = SherpaOnnxSpeakerEmbeddingExtractorCreateStream(handle)
        else { return nil }
        defer { SherpaOnnxDestroyOnlineStream(stream) }
        samples.withUnsafeBufferPointer {
            SherpaOnnxOnlineStreamAcceptWaveform(stream, Int32(SpeakerModels.sampleRate), $0.baseAddress, count)
        }
        SherpaOnnxOnlineStreamInputFinished(stream)
        guard SherpaOnnxSpeakerEmbeddingExtractorIsReady(handle, stream) != 0,
            let vector = SherpaOnnxSpeakerEmbeddingExtractorComputeEmbedding(handle, stream)
        else { return nil }
        defer { SherpaOnnxSpeakerEmbeddingExtractorDestroyEmbedding(vector) }
        return SpeakerEmbedding.normalized(Array(UnsafeBufferPointer(start: vector, count: dimension)))
    }
}

/// Arithmetic on embeddings.
enum SpeakerEmbedding {
    /// `v` scaled to length 1 (unchanged when it is all zeros).
    static func normalized(_ v: [Float]) -> [Float] {
        let norm = v.reduce(Float(0)) { $0 + $1 * $1 }.squareRoot()
        return norm > 0 ? v.map { $0 / norm } : v
    }

    /// The cosine similarity of two embeddings (-1…1).
    static func cosine(_ a: [Float], _ b: [Float]) -> Double {
        guard a.count == b.count, !a.isEmpty else { return -1 }
        var dot = 0.0, na = 0.0, nb = 0.0
        for i in a.indices {
            dot += Double(a[i]) * Double(b[i])
            na += Double(a[i]) * Double(a[i])
            nb += Double(b[i]) * Double(b[i])
        }
        return na > 0 && nb > 0 ? dot / (na.squareRoot() * nb.squareRoot()) : -1
    }
}
