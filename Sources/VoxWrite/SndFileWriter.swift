internal import CSndFile
import Foundation
import VoxCore

/// A WAV file being written with libsndfile. Float samples are clipped, not wrapped, into the
/// integer encodings, and no PEAK chunk is added, so equal audio gives equal bytes.
final class SndFileWriter {
    private var handle: OpaquePointer?
    let url: URL
    let format: AudioFormat

    init(url: URL, format: AudioFormat, encoding: WAVEncoding) throws {
        var info = SF_INFO()
        info.samplerate = Int32(format.sampleRate)
        info.channels = Int32(format.channels)
        info.format = Int32(SF_FORMAT_WAV) | encoding.subtype
        guard sf_format_check(&info) != 0 else {
            throw WriteError(.unsupported, "libsndfile cannot write WAV \(encoding.rawValue) at \(format)")
        }
        guard let handle = sf_open(url.path, Int32(SFM_WRITE), &info) else {
            throw WriteError(
                .cannotCreate, "cannot create \(url.lastPathComponent): \(String(cString: sf_strerror(nil)))")
        }
        self.handle = handle
        self.url = url
        self.format = format
        sf_command(handle, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        sf_command(handle, Int32(SFC_SET_ADD_PEAK_CHUNK), nil, Int32(SF_FALSE))
    }

    deinit { if let handle { sf_close(handle) } }

    func write(_ samples: [Float]) throws {
        guard let handle else { throw WriteError(.writeFailed, "\(url.lastPathComponent) is already closed") }
        let frames = samples.count / format.channels
        guard frames > 0 else { return }
        let written = samples.withUnsafeBufferPointer { sf_writef_float(handle, $0.baseAddress, sf_count_t(frames)) }
        guard written == frames else {
            throw WriteError(
                .writeFailed, "writing \(url.lastPathComponent) failed: \(String(cString: sf_strerror(handle)))")
        }
    }

    func close() throws {
        guard let handle else { return }
        self.handle = nil
        let status = sf_close(handle)
        guard status == 0 else {
            throw WriteError(
                .writeFailed, "closing \(url.lastPathComponent) failed: \(String(cString: sf_error_number(status)))")
        }
    }
}

/// Sample encodings a WAV writer offers.
public enum WAVEncoding: String, Sendable, CaseIterable {
    case pcm16, pcm24, float32

    var subtype: Int32 {
        switch self {
        case .pcm16: Int32(SF_FORMAT_PCM_16)
        case .pcm24: Int32(SF_FORMAT_PCM_24)
        case .float32: Int32(SF_FORMAT_FLOAT)
        }
    }
}
