import Foundation

/// What an MP4/M4A file's header says about its first sound track, read from its boxes
/// (`moov/trak/mdia/mdhd`) without decoding: the length serve checks against `--max-clip`, and
/// that ffmpeg's decoding uses in place of a separate ffprobe run.
public enum MP4Header {
    /// The larger a `moov` box may be before it is not read (a header of minutes of audio takes
    /// kilobytes; hours, a few megabytes).
    static let maxHeaderBytes = 64 << 20

    /// The first sound track's length in seconds; nil when the file is not MP4, has no sound
    /// track, states no length, or its boxes do not hold together.
    public static func seconds(_ url: URL) -> Double? {
        guard let file = try? FileHandle(forReadingFrom: url) else { return nil }
        defer { try? file.close() }
        guard let end = try? file.seekToEnd(), end >= 8 else { return nil }
        var offset: UInt64 = 0
        var first = true
        while offset + 8 <= end {
            guard (try? file.seek(toOffset: offset)) != nil,
                let head = try? file.read(upToCount: 16), head.count >= 8
            else { return nil }
            let box = Box(header: [UInt8](head), available: end - offset)
            guard let box else { return nil }
            // An MP4 file opens with its `ftyp` box; anything else is another format.
            if first && box.type != "ftyp" { return nil }
            first = false
            if box.type == "moov" {
                guard box.size - UInt64(box.headerBytes) <= UInt64(maxHeaderBytes),
                    (try? file.seek(toOffset: offset + UInt64(box.headerBytes))) != nil,
                    let body = try? file.read(upToCount: Int(box.size) - box.headerBytes),
                    body.count == Int(box.size) - box.headerBytes
                else { return nil }
                return seconds(moov: [UInt8](body))
            }
            offset += box.size
        }
        return nil
    }

    /// The first sound track's length, from the body of a `moov` box: what its edit list presents
    /// (`edts/elst`, in the movie's timescale from `mvhd`; an AAC track's media also holds the
    /// encoder's priming samples, which the edit list leaves out), else its media's length (`mdhd`).
    static func seconds(moov: [UInt8]) -> Double? {
        let boxes = children(of: moov[...])
        let movieTimescale = boxes.first { $0.type == "mvhd" }.flatMap { timescale(fullBox: $0.body) }
        for trak in boxes where trak.type == "trak" {
            let trakBoxes = children(of: trak.body)
            guard let mdia = trakBoxes.first(where: { $0.type == "mdia" }) else { continue }
            let mediaBoxes = children(of: mdia.body)
            // hdlr: version and flags (4), pre_defined (4), handler type (4).
            guard let hdlr = mediaBoxes.first(where: { $0.type == "hdlr" }), hdlr.body.count >= 12,
                fourCC(hdlr.body, at: 8) == "soun",
                let mdhd = mediaBoxes.first(where: { $0.type == "mdhd" })
            else { continue }
            if let movieTimescale,
                let edts = trakBoxes.first(where: { $0.type == "edts" }),
                let elst = children(of: edts.body).first(where: { $0.type == "elst" }),
                let presented = presentedUnits(elst: elst.body), presented > 0
            {
                return Double(presented) / Double(movieTimescale)
            }
            return seconds(mdhd: mdhd.body)
        }
        return nil
    }

    /// mvhd's timescale: after version and flags, two times of 32 bits (version 0) or 64 (version 1).
    static func timescale(fullBox body: ArraySlice<UInt8>) -> UInt64? {
        guard let version = body.first, version <= 1 else { return nil }
        let at = version == 0 ? 12 : 20
        guard body.count >= at + 4 else { return nil }
        let value = integer(body, at: at, bytes: 4)
        return value > 0 ? value : nil
    }

    /// The summed durations of an edit list's edits that show media (an empty edit's media time
    /// is -1), in the movie's timescale; nil when the list does not hold together.
    static func presentedUnits(elst body: ArraySlice<UInt8>) -> UInt64? {
        guard let version = body.first, version <= 1, body.count >= 8 else { return nil }
        let count = integer(body, at: 4, bytes: 4)
        let width = version == 0 ? 4 : 8, entryBytes = 2 * width + 4
        guard count <= UInt64((body.count - 8) / entryBytes) else { return nil }
        var total: UInt64 = 0
        for entry in 0..<Int(count) {
            let at = 8 + entry * entryBytes
            let duration = integer(body, at: at, bytes: width)
            let mediaTime = integer(body, at: at + width, bytes: width)
            let empty = mediaTime == (version == 0 ? UInt64(UInt32.max) : UInt64.max)
            guard !empty else { continue }
            let (sum, overflow) = total.addingReportingOverflow(duration)
            guard !overflow else { return nil }
            total = sum
        }
        return total
    }

    /// mdhd: version 0 holds 32-bit times, timescale and duration; version 1, 64-bit ones.
    /// A duration of all ones means "unknown" (a fragmented file), as does a zero timescale.
    static func seconds(mdhd body: ArraySlice<UInt8>) -> Double? {
        guard let version = body.first else { return nil }
        let timescale: UInt64
        let duration: UInt64
        switch version {
        case 0:
            guard body.count >= 20 else { return nil }
            timescale = integer(body, at: 12, bytes: 4)
            duration = integer(body, at: 16, bytes: 4)
            guard duration != UInt64(UInt32.max) else { return nil }
        case 1:
            guard body.count >= 32 else { return nil }
            timescale = integer(body, at: 20, bytes: 4)
            duration = integer(body, at: 24, bytes: 8)
            guard duration != UInt64.max else { return nil }
        default:
            return nil
        }
        guard timescale > 0, duration > 0 else { return nil }
        return Double(duration) / Double(timescale)
    }

    /// One box's header: its type and its whole size, header included.
    struct Box {
        var type: String
        var size: UInt64
        var headerBytes: Int

        /// From the first 8 (or 16, for a 64-bit size) bytes; a size of 0 runs to the end of
        /// what is `available`. Nil when the size is smaller than the header or runs past it.
        init?(header: [UInt8], available: UInt64) {
            guard header.count >= 8 else { return nil }
            let small = integer(header[...], at: 0, bytes: 4)
            type = fourCC(header[...], at: 4)
            switch small {
            case 0:
                size = available
                headerBytes = 8
            case 1:
                guard header.count >= 16 else { return nil }
                size = integer(header[...], at: 8, bytes: 8)
                headerBytes = 16
            default:
                size = small
                headerBytes = 8
            }
            guard size >= UInt64(headerBytes), size <= available else { return nil }
        }
    }

    /// The boxes inside a box's body, in order; stops at the first that does not fit.
    static func children(of body: ArraySlice<UInt8>) -> [(type: String, body: ArraySlice<UInt8>)] {
        var boxes: [(type: String, body: ArraySlice<UInt8>)] = []
        var at = body.startIndex
        while body.endIndex - at >= 8 {
            let header = Array(body[at..<min(at + 16, body.endIndex)])
            guard let box = Box(header: header, available: UInt64(body.endIndex - at)) else { break }
            boxes.append((box.type, body[(at + box.headerBytes)..<(at + Int(box.size))]))
            at += Int(box.size)
        }
        return boxes
    }

    static func integer(_ bytes: ArraySlice<UInt8>, at offset: Int, bytes count: Int) -> UInt64 {
        let start = bytes.startIndex + offset
        return bytes[start..<(start + count)].reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func fourCC(_ bytes: ArraySlice<UInt8>, at offset: Int) -> String {
        let start = bytes.startIndex + offset
        return String(decoding: bytes[start..<(start + 4)], as: UTF8.self)
    }
}
