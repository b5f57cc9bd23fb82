import Foundation
import VoxCore

/// Transcript file formats, in the shapes whisper's CLI writes them, and NIST RTTM for speaker
/// turns. Where chunks carry a speaker (`chunk` mode `speakers`), SRT lines start with it, WebVTT
/// cues are voice spans and JSON segments have a `speaker`; otherwise the files are as before.
public enum TranscriptFormat: String, Sendable, CaseIterable, OptionValue {
    case txt, srt, vtt, tsv, json
    /// NIST RTTM: one `SPEAKER` line per speaker turn (empty when no chunk carries a speaker).
    case rttm

    /// One timed line of a transcript file: a chunk's transcript, or one of its segments.
    public struct Cue: Sendable {
        public var start: Double
        public var end: Double
        public var text: String
        public var words: [Word]
        public var speaker: String?
    }

    /// The cues of transcripts in time order: each transcript's segments where it has them
    /// (each word goes with the segment it starts in), else the transcript over its chunk.
    public static func cues(_ transcripts: [Transcript]) -> [Cue] {
        transcripts.flatMap { t -> [Cue] in
            guard !t.segments.isEmpty else {
                return [
                    Cue(start: t.chunk.start, end: t.chunk.end, text: t.text, words: t.words, speaker: t.chunk.speaker)
                ]
            }
            var cues = t.segments.map {
                Cue(start: $0.start, end: $0.end, text: $0.text, words: [], speaker: t.chunk.speaker)
            }
            for word in t.words {
                let k = cues.lastIndex { $0.start <= word.start } ?? 0
                cues[k].words.append(word)
            }
            return cues
        }
    }

    /// The file's text for transcripts in time order (empty transcripts already left out).
    /// `file` names the recording in RTTM lines.
    public func render(_ transcripts: [Transcript], file: String = "audio") -> String {
        let cues = Self.cues(transcripts)
        switch self {
        case .txt:
            return transcripts.map { $0.text + "\n" }.joined()
        case .srt:
            return cues.enumerated().map { i, s in
                "\(i + 1)\n\(Self.timestamp(s.start, separator: ",")) --> "
                    + "\(Self.timestamp(s.end, separator: ","))\n\(s.speaker.map { "\($0): " } ?? "")\(s.text)\n\n"
            }.joined()
        case .vtt:
            return "WEBVTT\n\n"
                + cues.map { s in
                    "\(Self.timestamp(s.start, separator: ".")) --> "
                        + "\(Self.timestamp(s.end, separator: "."))\n"
                        + "\(s.speaker.map { "<v \($0)>" } ?? "")\(s.text)\n\n"
                }.joined()
        case .tsv:
            return "start\tend\ttext\n"
                + cues.map { s in
                    let text = s.text.replacingOccurrences(of: "\t", with: " ")
                    return "\(Self.milliseconds(s.start))\t\(Self.milliseconds(s.end))\t\(text)\n"
                }.joined()
        case .json:
            return Self.json(transcripts, cues: cues)
        case .rttm:
            return Self.rttm(transcripts.map(\.chunk), file: file)
        }
    }

    /// NIST RTTM lines for the chunks that carry a speaker, consecutive chunks of one speaker that
    /// touch as one turn; names with spaces as underscores (fields are space-separated).
    static func rttm(_ chunks: [AudioChunk], file: String) -> String {
        func field(_ s: String) -> String {
            let joined = s.split(whereSeparator: \.isWhitespace).joined(separator: "_")
            return joined.isEmpty ? "<NA>" : joined
        }
        var turns: [(start: Double, end: Double, speaker: String)] = []
        for chunk in chunks {
            guard let speaker = chunk.speaker else { continue }
            if let last = turns.last, last.speaker == speaker, chunk.start - last.end < 0.001 {
                turns[turns.count - 1].end = max(last.end, chunk.end)
            } else {
                turns.append((chunk.start, chunk.end, speaker))
            }
        }
        let name = field(file)
        return turns.map {
            "SPEAKER \(name) 1 \(String(format: "%.3f %.3f", $0.start, $0.end - $0.start)) <NA> <NA> "
                + "\(field($0.speaker)) <NA> <NA>\n"
        }.joined()
    }

    /// `HH:MM:SS,mmm` (SRT) or `HH:MM:SS.mmm` (WebVTT).
    static func timestamp(_ seconds: Double, separator: String) -> String {
        let ms = milliseconds(seconds)
        return String(
            format: "%02d:%02d:%02d%@%03d", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, separator, ms % 1000)
    }

    static func milliseconds(_ seconds: Double) -> Int { max(0, Int((seconds * 1000).rounded())) }

    struct JSONWord: Encodable {
        var word: String
        var start: Double
        var end: Double
        var probability: Double?
    }
    struct JSONSegment: Encodable {
        var id: Int
        var start: Double
        var end: Double
        var text: String
        var words: [JSONWord]
        var speaker: String?
    }
    struct JSONDocument: Encodable {
        var text: String
        var language: String?
        var provider: String?
        var model: String?
        var segments: [JSONSegment]
    }

    static func json(_ transcripts: [Transcript], cues: [Cue]) -> String {
        func r(_ x: Double) -> Double { (x * 1000).rounded() / 1000 }
        let document = JSONDocument(
            text: transcripts.map(\.text).joined(separator: " "),
            language: transcripts.first?.language, provider: transcripts.first?.provider,
            model: transcripts.first?.model,
            segments: cues.enumerated().map { i, s in
                JSONSegment(
                    id: i, start: r(s.start), end: r(s.end), text: s.text,
                    words: s.words.map {
                        JSONWord(
                            word: $0.text, start: r($0.start), end: r($0.end),
                            probability: $0.confidence.map { (($0 * 10000).rounded()) / 10000 })
                    }, speaker: s.speaker)
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(document)) ?? Data("{}".utf8), as: UTF8.self) + "\n"
    }
}
