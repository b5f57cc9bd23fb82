internal import CSndFile
import Foundation
import VoxCore

/// A file being written with libsndfile. Float samples are clipped, not wrapped, into the
/// integer encodings, and no PEAK chunk is added, so equal audio gives equal bytes.
final class SndFileWriter {
    private var handle: OpaquePointer?
    let url: URL
    let format: AudioFormat

    /// `major` is a libsndfile major format (with its codec for the compressed ones); `encoding`
    /// the PCM subtype of WAV and FLAC, nil for codecs that set their own.
    init(url: URL, format: AudioFormat, major: Int32, encoding: WAVEncoding?, name: String = "WAV") throws {
        var info = SF_INFO()
        info.samplerate = Int32(format.sampleRate)
        info.channels = Int32(format.channels)
        info.format = major | (encoding?.subtype ?? 0)
        guard sf_format_check(&info) != 0 else {
            let detail = encoding.map { " \($0.rawValue)" } ?? ""
            throw WriteError(.unsupported, "libsndfile cannot write \(name)\(detail) at \(format)")
        }
        guard let handle = sf_open(url.path, Int32(SFM_WRITE), &info) else {
            throw Self.failure("cannot create", url, handle: nil, errno: errno, else: .cannotCreate)
        }
        self.handle = handle
        self.url = url
        self.format = format
        sf_command(handle, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        sf_command(handle, Int32(SFC_SET_ADD_PEAK_CHUNK), nil, Int32(SF_FALSE))
    }

    /// A WAV file.
    convenience init(url: URL, format: AudioFormat, encoding: WAVEncoding) throws {
        try self.init(url: url, format: format, major: Int32(SF_FORMAT_WAV), encoding: encoding)
    }

    deinit { if let handle { sf_close(handle) } }

    /// Sets the codec's quality (libsndfile's compression level is 1 - quality) and bit-rate
    /// mode, before the first write; codecs without them ignore them.
    func configure(quality: Double?, bitrateMode: BitrateMode?) {
        guard let handle else { return }
        if var mode = bitrateMode?.sndfile {
            sf_command(handle, Int32(SFC_SET_BITRATE_MODE), &mode, Int32(MemoryLayout<Int32>.size))
        }
        if let quality {
            var level = 1 - min(1, max(0, quality))
            sf_command(handle, Int32(SFC_SET_COMPRESSION_LEVEL), &level, Int32(MemoryLayout<Double>.size))
        }
    }

    func write(_ samples: [Float]) throws {
        guard let handle else { throw WriteError(.writeFailed, "\(url.lastPathComponent) is already closed") }
        let frames = samples.count / format.channels
        guard frames > 0 else { return }
        let written = samples.withUnsafeBufferPointer { sf_writef_float(handle, $0.baseAddress, sf_count_t(frames)) }
        guard written == frames else {
            throw Self.failure("cannot write", url, handle: handle, errno: errno, else: .writeFailed)
        }
    }

    /// Writes the header's final sizes and closes the file.
    func close() throws {
        guard let handle else { return }
        self.handle = nil
        let status = sf_close(handle)
        guard status == 0 else {
            throw WriteError(
                .writeFailed,
                "cannot write \(ItemOutputs.finalPath(of: url)): \(String(cString: sf_error_number(status)))")
        }
    }

    /// A libsndfile failure on `url`: the system's reason when the library says it was a system
    /// error, or when the system says the disk is full (an encoder such as FLAC's reports its
    /// own failure over the system's), else the library's text. `code` is `errno` read right
    /// after the failed call.
    static func failure(
        _ action: String, _ url: URL, handle: OpaquePointer?, errno code: Int32, else other: WriteFailure
    ) -> WriteError {
        let name = ItemOutputs.finalPath(of: url)
        let library = String(cString: sf_strerror(handle))
        let full = VoxFailure.writing(errno: code) == .outputFull
        if sf_error(handle) == Int32(SF_ERR_SYSTEM) && code != 0 || full {
            return WriteError(full ? .outputFull : other, "\(action) \(name): \(systemReason(code))")
        }
        return WriteError(other, "\(action) \(name): \(library)")
    }
}

/// Sample encodings the WAV and FLAC writers offer.
public enum WAVEncoding: String, Sendable, CaseIterable, OptionValue {
    case pcm16, pcm24, float32

    var subtype: Int32 {
        switch self {
        case .pcm16: Int32(SF_FORMAT_PCM_16)
        case .pcm24: Int32(SF_FORMAT_PCM_24)
        case .float32: Int32(SF_FORMAT_FLOAT)
        }
    }
}
