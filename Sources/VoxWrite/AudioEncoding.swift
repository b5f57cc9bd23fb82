internal import CSndFile
import Foundation
import VoxCore
import VoxProcess

/// The file formats `write-audio` (and `voxpipe serve`) write: libsndfile encodes all but AAC,
/// which ffmpeg encodes from a temporary WAV.
public enum AudioFileFormat: String, Sendable, CaseIterable, OptionValue {
    case wav, flac, mp3, ogg, opus, m4a

    /// The file extension.
    public var ext: String { self == .opus ? "opus" : rawValue }

    /// The MIME type a client is sent.
    public var mimeType: String {
        switch self {
        case .wav: "audio/wav"
        case .flac: "audio/flac"
        case .mp3: "audio/mpeg"
        case .ogg: "audio/ogg"
        case .opus: "audio/ogg; codecs=opus"
        case .m4a: "audio/mp4"
        }
    }

    /// Whether `encoding` (the PCM sample size) applies: the lossless formats.
    var isLossless: Bool { self == .wav || self == .flac }

    /// The sample rates the codec takes; nil: any.
    var sampleRates: [Int]? {
        switch self {
        case .wav, .flac: nil
        // Opus runs at these rates only; LAME's MPEG-1/2/2.5 rates.
        case .opus: [8000, 12000, 16000, 24000, 48000]
        case .mp3: [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000]
        // AAC in MP4: ffmpeg's encoder takes the usual rates up to 96 kHz.
        case .m4a: [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000]
        case .ogg: nil
        }
    }

    /// The rate to write audio of rate `rate` at: itself when the codec takes it, else 48 kHz.
    public func writableRate(_ rate: Int) -> Int {
        guard let rates = sampleRates, !rates.contains(rate) else { return rate }
        return 48000
    }

    var sndfileFormat: Int32? {
        switch self {
        case .wav: Int32(SF_FORMAT_WAV)
        case .flac: Int32(SF_FORMAT_FLAC)
        case .mp3: Int32(SF_FORMAT_MPEG) | Int32(SF_FORMAT_MPEG_LAYER_III)
        case .ogg: Int32(SF_FORMAT_OGG) | Int32(SF_FORMAT_VORBIS)
        case .opus: Int32(SF_FORMAT_OGG) | Int32(SF_FORMAT_OPUS)
        case .m4a: nil
        }
    }
}

/// Bit-rate modes libsndfile's MP3 and Opus encoders offer.
public enum BitrateMode: String, Sendable, CaseIterable, OptionValue {
    case constant, average, variable

    var sndfile: Int32 {
        switch self {
        case .constant: Int32(SF_BITRATE_MODE_CONSTANT)
        case .average: Int32(SF_BITRATE_MODE_AVERAGE)
        case .variable: Int32(SF_BITRATE_MODE_VARIABLE)
        }
    }
}

/// How audio is encoded into a file: the format and its settings.
public struct AudioEncoding: Sendable, Equatable {
    public var format: AudioFileFormat
    /// Sample size of wav and flac.
    public var sampleEncoding: WAVEncoding
    /// mp3, ogg, opus: 0 (smallest) … 1 (best), libsndfile's compression level turned round;
    /// flac: how hard to compress (1 hardest). Nil keeps the library's default.
    public var quality: Double?
    /// mp3 and opus: constant, average or variable bit rate.
    public var bitrateMode: BitrateMode?
    /// m4a: AAC bit rate in kbit/s.
    public var bitrate: Int

    public init(
        format: AudioFileFormat, sampleEncoding: WAVEncoding = .pcm16, quality: Double? = nil,
        bitrateMode: BitrateMode? = nil, bitrate: Int = 96
    ) {
        self.format = format
        self.sampleEncoding = sampleEncoding
        self.quality = quality
        self.bitrateMode = bitrateMode
        self.bitrate = bitrate
    }

    /// Writes `samples` (interleaved, `format`) as one file at `url`; for a server's one-off
    /// answer. The caller picks a rate the codec takes (`AudioFileFormat.writableRate`).
    public func write(_ samples: [Float], format: AudioFormat, to url: URL) throws {
        let writer = try AudioFileWriter(url: url, format: format, encoding: self)
        try writer.write(samples)
        try writer.close()
    }
}

/// How audio becomes files: the encoding, the rate written and the converter that brings audio
/// to it. One definition for `write-audio` (each chunk, each stream) and for `voxpipe serve`
/// (each spoken reply), so a served reply is the file a batch run writes.
public struct AudioOutput: Sendable {
    public var encoding: AudioEncoding
    /// The rate written; nil keeps the audio's, or 48 kHz when the codec cannot take it.
    public var rate: Int?
    public var rateConversion: (any RateConversion)?

    public init(encoding: AudioEncoding, rate: Int? = nil, rateConversion: (any RateConversion)?) {
        self.encoding = encoding
        self.rate = rate
        self.rateConversion = rateConversion
    }

    /// The format files of audio in `format` are written in.
    public func format(for format: AudioFormat) -> AudioFormat {
        AudioFormat(sampleRate: rate ?? encoding.format.writableRate(format.sampleRate), channels: format.channels)
    }

    /// A converter from `format` to the rate written, or nil when none is needed.
    public func converter(for format: AudioFormat) throws -> (any RateConverter)? {
        let rate = self.format(for: format).sampleRate
        guard rate != format.sampleRate else { return nil }
        guard let rateConversion else {
            throw WriteError(
                .noRateConverter,
                "audio at \(format.sampleRate) Hz must be converted to \(rate) Hz but no rate converter was provided")
        }
        return try rateConversion.converter(channels: format.channels, from: format.sampleRate, to: rate)
    }

    /// Writes `chunk` as one file at `url`.
    public func write(_ chunk: AudioChunk, to url: URL) throws {
        try encoding.write(
            try converter(for: chunk.format)?.convertAll(chunk.samples) ?? chunk.samples,
            format: format(for: chunk.format), to: url)
    }

    /// A file at `url` that audio in `format` streams into.
    func open(_ url: URL, for format: AudioFormat) throws -> OpenAudioFile {
        OpenAudioFile(
            writer: try AudioFileWriter(url: url, format: self.format(for: format), encoding: encoding), url: url,
            input: format, converter: try converter(for: format))
    }
}

/// A file being written as its audio streams in: an item's stream of blocks, or the parts of one
/// chunk index (speech made sentence by sentence).
struct OpenAudioFile {
    var writer: AudioFileWriter
    var url: URL
    var input: AudioFormat
    var converter: (any RateConverter)?

    func write(_ samples: [Float], format: AudioFormat) throws {
        guard format == input else {
            throw WriteError(.unsupported, "the stream changed format mid-way (\(input) to \(format))")
        }
        try writer.write(try converter?.process(samples) ?? samples)
    }

    func finish() throws -> URL {
        if let tail = try converter?.flush() { try writer.write(tail) }
        try writer.close()
        return url
    }
}

/// An audio file being written: through libsndfile, or for m4a a temporary WAV that ffmpeg
/// encodes to AAC at `close()`.
final class AudioFileWriter {
    let url: URL
    let format: AudioFormat
    let encoding: AudioEncoding
    private let pcm: SndFileWriter
    /// The WAV ffmpeg reads, for m4a.
    private let intermediate: URL?

    init(url: URL, format: AudioFormat, encoding: AudioEncoding) throws {
        self.url = url
        self.format = format
        self.encoding = encoding
        if let rates = encoding.format.sampleRates, !rates.contains(format.sampleRate) {
            throw WriteError(
                .unsupported,
                "\(encoding.format.rawValue) cannot be written at \(format.sampleRate) Hz (it takes "
                    + "\(rates.map(String.init).joined(separator: ", ")) Hz)")
        }
        if encoding.format == .m4a {
            guard ExternalTool.find("ffmpeg") != nil else {
                throw WriteError(.unsupported, "writing m4a (AAC) needs ffmpeg on PATH")
            }
            // Beside the file, named after it: a run's temporary name, which a later run clears.
            let temp = url.deletingLastPathComponent().appendingPathComponent(
                (url.lastPathComponent.hasPrefix(".") ? "" : ".") + url.lastPathComponent + ".pcm.wav")
            intermediate = temp
            pcm = try SndFileWriter(url: temp, format: format, major: Int32(SF_FORMAT_WAV), encoding: .float32)
        } else {
            intermediate = nil
            pcm = try SndFileWriter(
                url: url, format: format, major: encoding.format.sndfileFormat ?? Int32(SF_FORMAT_WAV),
                encoding: encoding.format.isLossless ? encoding.sampleEncoding : nil,
                name: encoding.format.rawValue)
            pcm.configure(quality: encoding.quality, bitrateMode: encoding.bitrateMode)
        }
    }

    deinit { if let intermediate { try? FileManager.default.removeItem(at: intermediate) } }

    func write(_ samples: [Float]) throws { try pcm.write(samples) }

    func close() throws {
        try pcm.close()
        guard let intermediate, let ffmpeg = ExternalTool.find("ffmpeg") else { return }
        defer { try? FileManager.default.removeItem(at: intermediate) }
        // Bit-exact flags keep ffmpeg's version and the time out of the file: equal audio, equal bytes.
        let result = try ExternalTool.capture(
            ffmpeg,
            [
                "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", intermediate.path,
                "-c:a", "aac", "-b:a", "\(encoding.bitrate)k", "-map_metadata", "-1",
                "-fflags", "+bitexact", "-flags:a", "+bitexact", "-f", "ipod", url.path,
            ])
        guard result.status == 0 else {
            try? FileManager.default.removeItem(at: url)
            throw WriteError(
                .writeFailed,
                "ffmpeg could not encode \(url.lastPathComponent) as AAC: "
                    + ExternalTool.lastLine(result.stderr, path: intermediate.path, fallback: "exit \(result.status)"))
        }
    }
}
