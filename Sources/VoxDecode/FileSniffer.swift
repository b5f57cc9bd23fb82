import Foundation

/// Says what is wrong with a file no decoder would read, from its first bytes, in a user's
/// terms (too short, text, no audio format starts like this, a known container that is damaged
/// or unsupported) rather than in the words of whichever library guessed last. `voxpipe serve`
/// sniffs uploads with it too, rather than trust the MIME type a client sends.
public enum FileSniffer {
    /// Audio containers by their signature: (offset, bytes, name).
    static let signatures: [(Int, [UInt8], String)] = [
        (0, Array("RIFF".utf8), "WAV"), (0, Array("RF64".utf8), "RF64"), (0, Array("riff".utf8), "W64"),
        (0, Array("fLaC".utf8), "FLAC"), (0, Array("OggS".utf8), "Ogg"), (0, Array("ID3".utf8), "MP3"),
        (0, Array("FORM".utf8), "AIFF"), (0, Array("caff".utf8), "CAF"), (0, Array(".snd".utf8), "AU"),
        (4, Array("ftyp".utf8), "MP4/M4A"), (0, [0x1A, 0x45, 0xDF, 0xA3], "Matroska/WebM"),
        (0, Array("#!AMR".utf8), "AMR"),
        (0, [0x30, 0x26, 0xB2, 0x75], "ASF/WMA"),
    ]

    /// The smallest file that could hold an audio header.
    public static let minimumBytes = 12

    /// Why `url` is not audio a decoder could read; nil if its first bytes look like a known
    /// audio format (then it is damaged or unsupported, which the caller says with the decoder's
    /// detail).
    static func diagnose(_ url: URL) -> String? {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return "cannot be opened for reading" }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: 512)) ?? Data())
        if head.count < minimumBytes {
            return "too short to be audio (\(head.count) byte\(head.count == 1 ? "" : "s"))"
        }
        if format(of: head) != nil { return nil }
        let printable = head.filter {
            (0x20...0x7E).contains($0) || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 || $0 >= 0x80
        }
        if printable.count == head.count, String(bytes: head, encoding: .utf8) != nil {
            return "not an audio file: it holds text"
        }
        return "not an audio file: no audio format starts like this"
    }

    /// The container a file's first bytes announce, if any (an MPEG audio frame counts as MP3).
    public static func format(of head: [UInt8]) -> String? {
        for (offset, bytes, name) in signatures
        where head.count >= offset + bytes.count && Array(head[offset..<offset + bytes.count]) == bytes {
            return name
        }
        if head.count >= 2, head[0] == 0xFF, head[1] & 0xE0 == 0xE0 { return "MP3" }
        return nil
    }
}
