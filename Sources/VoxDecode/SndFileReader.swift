internal import CSndFile
import Foundation
import VoxCore

/// A file opened for reading with libsndfile; read in blocks of frames as Float32.
final class SndFileReader {
    private let handle: OpaquePointer
    let format: AudioFormat
    /// Frames the header declares.
    let frames: Int64
    let formatName: String
    let seekable: Bool
    /// Whether seeking lands on the exact frame asked (uncompressed and FLAC containers; not
    /// MP3, Ogg or Opus, whose seeks are approximate).
    let seeksExactly: Bool

    /// Opens `url`; throws `SndFileOpenError` carrying libsndfile's own error code and text.
    init(url: URL) throws {
        var info = SF_INFO()
        guard let handle = sf_open(url.path, Int32(SFM_READ), &info) else {
            throw SndFileOpenError(code: sf_error(nil), message: String(cString: sf_strerror(nil)))
        }
        self.handle = handle
        format = AudioFormat(sampleRate: Int(info.samplerate), channels: Int(info.channels))
        frames = info.frames
        seekable = info.seekable != 0
        let major = info.format & Int32(SF_FORMAT_TYPEMASK)
        let exact: [Int32] = [
            SF_FORMAT_WAV, SF_FORMAT_WAVEX, SF_FORMAT_W64, SF_FORMAT_RF64, SF_FORMAT_AIFF, SF_FORMAT_CAF, SF_FORMAT_AU,
            SF_FORMAT_FLAC,
        ].map { Int32($0) }
        seeksExactly = seekable && exact.contains(major)
        var formatInfo = SF_FORMAT_INFO()
        formatInfo.format = info.format & Int32(SF_FORMAT_TYPEMASK)
        if sf_command(nil, Int32(SFC_GET_FORMAT_MAJOR), &formatInfo, Int32(MemoryLayout<SF_FORMAT_INFO>.size)) == 0,
            let name = formatInfo.name
        {
            formatName = String(cString: name)
        } else {
            formatName = "unknown"
        }
    }

    deinit { sf_close(handle) }

    /// Reads up to `maxFrames` frames into a new interleaved buffer; an empty buffer at the end.
    func read(maxFrames: Int) throws -> [Float] {
        let channels = format.channels
        var buffer = [Float](repeating: 0, count: maxFrames * channels)
        let got = buffer.withUnsafeMutableBufferPointer {
            sf_readf_float(handle, $0.baseAddress, sf_count_t(maxFrames))
        }
        let status = sf_error(handle)
        if status != 0 && got <= 0 {
            throw DecodeError(.readFailed, "read failed: \(String(cString: sf_strerror(handle)))")
        }
        if got < maxFrames { buffer.removeSubrange(Int(got) * channels..<buffer.count) }
        return buffer
    }

    /// Moves to `frame`; returns false where the format cannot seek.
    func seek(toFrame frame: Int64) -> Bool {
        seekable && sf_seek(handle, sf_count_t(frame), SEEK_SET) == frame
    }

    /// libsndfile's version string ("libsndfile-1.2.0").
    static var version: String { String(cString: sf_version_string()) }
}

struct SndFileOpenError: Error {
    var code: Int32
    var message: String
}

/// A whole audio file read at once with libsndfile, for comparisons (goldens) rather than
/// streaming: its format and interleaved samples.
public enum AudioFileContents {
    /// The file's length in seconds as its header states it, reading no audio: libsndfile's
    /// header, else an MP4/M4A file's boxes (`MP4Header`); nil when neither states one.
    public static func duration(_ url: URL) -> Double? {
        guard let reader = try? SndFileReader(url: url) else { return MP4Header.seconds(url) }
        guard reader.frames > 0, reader.format.sampleRate > 0 else { return nil }
        return Double(reader.frames) / Double(reader.format.sampleRate)
    }

    /// Reads `url`; files over `maxFrames` frames fail rather than fill memory.
    public static func read(
        _ url: URL, maxFrames: Int64 = 48000 * 3600
    ) throws -> (format: AudioFormat, samples: [Float]) {
        let reader: SndFileReader
        do {
            reader = try SndFileReader(url: url)
        } catch let error as SndFileOpenError {
            throw DecodeError(
                .unreadable, "\(url.lastPathComponent): not an audio file libsndfile reads (\(error.message))")
        }
        guard reader.frames <= maxFrames else {
            throw DecodeError(.outOfBounds, "\(url.lastPathComponent): \(reader.frames) frames, over \(maxFrames)")
        }
        var samples: [Float] = []
        while true {
            let block = try reader.read(maxFrames: 65536)
            if block.isEmpty { break }
            samples += block
        }
        return (reader.format, samples)
    }
}
