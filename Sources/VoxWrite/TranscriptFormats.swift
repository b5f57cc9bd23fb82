import Foundation
import VoxCore

/// Transcript file formats, in the shapes whisper's CLI writes them.
public enum TranscriptFormat: String, Sendable, CaseIterable {
    case txt, srt, vtt, tsv, json

    /// The file's text for segments in time order (empty transcripts already left out).
    func render(_ segments: [Transcript]) -> String {
        switch self {
        case .txt:
            return segments.map { $0.text + "\n" }.joined()
        case .srt:
            return segments.enumerated().map { i, s in
                "\(i + 1)\n\(Self.timestamp(s.chunk.start, separator: ",")) --> \(Self.timestamp(s.chunk.end, separator: ","))\n\(s.text)\n\n"
            }.joined()
        case .vtt:
            return "WEBVTT\n\n" + segments.map { s in
                "\(Self.timestamp(s.chunk.start, separator: ".")) --> \(Self.timestamp(s.chunk.end, separator: "."))\n\(s.text)\n\n"
            }.joined()
        case .tsv:
            return "start\tend\ttext\n" + segments.map { s in
                "\(Self.milliseconds(s.chunk.start))\t\(Self.milliseconds(s.chunk.end))\t\(s.text.replacingOccurrences(of: "\t", with: " "))\n"
            }.joined()
        case .json:
            return Self.json(segments)
        }
    }

    /// `HH:MM:SS,mmm` (SRT) or `HH:MM:SS.mmm` (WebVTT).
    static func timestamp(_ seconds: Double, separator: String) -> String {
        let ms = milliseconds(seconds)
        return String(format: "%02d:%02d:%02d%@%03d", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, separator, ms % 1000)
    }

    static func milliseconds(_ seconds: Double) -> Int { max(0, Int((seconds * 1000).rounded())) }

    struct JSONWord: Encodable { var word: String; var start: Double; var end: Double; var probability: Double? }
    struct JSONSegment: Encodable { var id: Int; var start: Double; var end: Double; var text: String; var words: [JSONWord] }
    struct JSONDocument: Encodable { var text: String; var language: String?; var provider: String?; var model: String?; var segments: [JSONSegment] }

    static func json(_ segments: [Transcript]) -> String {
        func r(_ x: Double) -> Double { (x * 1000).rounded() / 1000 }
        let document = JSONDocument(
            text: segments.map(\.text).joined(separator: " "),
            language: segments.first?.language, provider: segments.first?.provider, model: segments.first?.model,
            segments: segments.enumerated().map { i, s in
                JSONSegment(id: i, start: r(s.chunk.start), end: r(s.chunk.end), text: s.text,
                            words: s.words.map { JSONWord(word: $0.text, start: r($0.start), end: r($0.end), probability: $0.confidence.map { (($0 * 10000).rounded()) / 10000 }) })
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(document)) ?? Data("{}".utf8), as: UTF8.self) + "\n"
    }
}
