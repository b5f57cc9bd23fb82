import CSndFile
import Foundation
import Testing
import VoxCore
import VoxTestSupport

@testable import VoxDecode

/// An M4A's length read from its boxes (serve's `--max-clip` check, and ffmpeg's decoding without
/// an ffprobe run), against what ffprobe says.
@Suite struct MP4HeaderTests {
    /// A 5-s tone as M4A, its header at the end (ffmpeg's default) and at the front (faststart).
    static func tones(in dir: URL) throws -> [URL] {
        let wav = dir.appendingPathComponent("tone.wav")
        #expect(
            writeSoundFile(
                wav, format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16), rate: 22050, channels: 1,
                samples: sine(rate: 22050, channels: 1, seconds: 5)))
        let atEnd = dir.appendingPathComponent("end.m4a"), atFront = dir.appendingPathComponent("front.m4a")
        try runTool("ffmpeg", ["-v", "error", "-y", "-i", wav.path, "-c:a", "aac", "-b:a", "48k", atEnd.path])
        try runTool(
            "ffmpeg",
            [
                "-v", "error", "-y", "-i", wav.path, "-c:a", "aac", "-b:a", "48k", "-movflags", "+faststart",
                atFront.path,
            ])
        return [atEnd, atFront]
    }

    @Test(.startsProcess("ffmpeg and ffprobe"))
    func anM4asLengthIsWhatFFprobeSaysWhereverItsHeaderIs() throws {
        let dir = temporaryDirectory()
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Samples/speech-de.m4a")
        for url in try Self.tones(in: dir) + [sample] {
            let seconds = try #require(MP4Header.seconds(url), "\(url.lastPathComponent)")
            // Within a hundredth: AAC's 1024 priming samples (46 ms at 22.05 kHz) are not counted.
            #expect(abs(seconds - (try probedDuration(url).seconds)) < 0.01, "\(url.lastPathComponent): \(seconds)")
            #expect(AudioFileContents.duration(url) == seconds)
        }
        // Not MP4: nil (libsndfile's formats keep their own header's length).
        let wav = dir.appendingPathComponent("tone.wav")
        #expect(MP4Header.seconds(wav) == nil)
        #expect(abs((AudioFileContents.duration(wav) ?? 0) - 5) < 0.001)
    }

    /// Every prefix of an M4A whose header comes first, and the file with bytes flipped inside its
    /// header: no crash, and a length only where the header is whole (then the right one).
    @Test(.startsProcess("ffmpeg"))
    func aTruncatedOrDamagedHeaderGivesNoLengthOrTheRightOne() throws {
        let url = try Self.tones(in: temporaryDirectory())[1]
        let bytes = try Data(contentsOf: url)
        let whole = try #require(MP4Header.seconds(url))
        let cut = temporaryDirectory().appendingPathComponent("cut.m4a")
        for length in stride(from: 0, to: min(bytes.count, 4096), by: 7) {
            try bytes.prefix(length).write(to: cut)
            let seconds = MP4Header.seconds(cut)
            #expect(seconds == nil || seconds == whole, "\(length) bytes: \(String(describing: seconds))")
        }
        var generator = SplitMix(seed: 23)
        for _ in 0..<300 {
            var damaged = bytes
            for _ in 0..<4 { damaged[Int(generator.next() % 1024)] = UInt8(truncatingIfNeeded: generator.next()) }
            try damaged.write(to: cut)
            _ = MP4Header.seconds(cut)
        }
    }

    /// A 64-bit box size and a version-1 mdhd (long recordings), built by hand: 2 h at 48 kHz.
    @Test func sixtyFourBitSizesAndAVersionOneMdhdAreRead() throws {
        func box(_ type: String, _ body: Data, large: Bool = false) -> Data {
            large
                ? be(1, 4) + Data(type.utf8) + be(16 + body.count, 8) + body
                : be(8 + body.count, 4) + Data(type.utf8) + body
        }
        let mdhd = box("mdhd", be(1 << 24, 4) + be(0, 16) + be(48000, 4) + be(7200 * 48000, 8) + be(0, 4))
        let hdlr = box("hdlr", be(0, 8) + Data("soun".utf8) + be(0, 12) + Data([0]))
        let moov = box("moov", box("trak", box("mdia", hdlr + mdhd)), large: true)
        let file = box("ftyp", Data("M4A ".utf8) + be(0, 4)) + box("mdat", Data(count: 100)) + moov
        let url = temporaryDirectory().appendingPathComponent("long.m4a")
        try file.write(to: url)
        #expect(MP4Header.seconds(url) == 7200)
        // A video track before the sound track is passed over; an unknown length (all ones) is nil.
        let vide = box("trak", box("mdia", box("hdlr", be(0, 8) + Data("vide".utf8) + be(0, 12)) + mdhd))
        try (box("ftyp", Data("M4A ".utf8)) + box("moov", vide + box("trak", box("mdia", hdlr + mdhd)))).write(to: url)
        #expect(MP4Header.seconds(url) == 7200)
        // An edit list presents 5 s (movie timescale 1000) of media holding 1024 priming samples
        // more; an empty edit (media time -1) before it shows no media.
        let mvhd = box("mvhd", be(0, 12) + be(1000, 4) + be(5000, 4) + Data(count: 80))
        let aac = box("mdhd", be(0, 12) + be(16000, 4) + be(81024, 4) + be(0, 4))
        let elst = box(
            "elst",
            be(0, 4) + be(2, 4) + be(250, 4) + be(-1, 4) + be(1 << 16, 4) + be(5000, 4) + be(1024, 4)
                + be(1 << 16, 4))
        let edited = box("trak", box("edts", elst) + box("mdia", hdlr + aac))
        try (box("ftyp", Data("M4A ".utf8)) + box("moov", mvhd + edited)).write(to: url)
        #expect(MP4Header.seconds(url) == 5)
        try (box("ftyp", Data("M4A ".utf8)) + box("moov", box("trak", box("mdia", hdlr + aac)))).write(to: url)
        #expect(MP4Header.seconds(url) == 81024.0 / 16000)
        let unknown = box("mdhd", be(0, 12) + be(48000, 4) + be(0xFFFF_FFFF, 4) + be(0, 4))
        try (box("ftyp", Data("M4A ".utf8)) + box("moov", box("trak", box("mdia", hdlr + unknown)))).write(to: url)
        #expect(MP4Header.seconds(url) == nil)
    }

    func be(_ value: Int, _ bytes: Int) -> Data {
        Data((0..<bytes).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * $0)) })
    }
}
