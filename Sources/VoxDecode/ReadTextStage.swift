import Foundation
import VoxCore
import VoxFieldService
import VoxModeration

/// `read-text`: InputFile → Transcript. Text in place of audio, so reply, synthesize and agent
/// pipelines run (and are checked) without speech recognition in front of them:
/// - `.txt`: one utterance per non-empty line, each a turn (`#` starts a comment line);
/// - `.json`: a whisper-style transcript (`{"text", "language", "segments": [{"start", "end",
///   "text", "words"?}]}`, as `write-transcript` and OpenAI's verbose_json write it), one turn per
///   segment with its times, or the whole `text` as one turn when there are no segments.
/// Turns without times are numbered 1 s apart. At end of input there is nothing to flush.
public struct ReadTextStage: Stage {
    public typealias Input = InputFile
    public typealias Output = Transcript

    public struct Configuration: Sendable {
        /// The language the turns are in, when the file does not say.
        public var language: String?
        /// The longest file read, in bytes (a guard against a wrong input).
        public var maxBytes: Int
    }

    public static let kind = "read-text"
    public static let summary =
        "Reads text inputs (.txt, one utterance a line; whisper-style .json) as transcripts, for pipelines without "
        + "audio."
    /// Each option, declared once.
    public enum Option {
        public static let language = StageOption<String?>(
            "language", .string, help: "Language of the text (de, en, …), when a .json does not give one.")
        public static let maxBytes = StageOption<Int>(
            "maxBytes", .integer(1...1_073_741_824), default: 16_777_216,
            help: "Larger files fail (a guard against a wrong input).")
    }

    public static let options: [OptionSpec] = [Option.language.spec, Option.maxBytes.spec]
    public static let inputExtensions: Set<String> = ["txt", "json"]

    /// The sidecar `X.json` beside a `X.txt` input (a voice session's type, language, device).
    public static let factsGiven = ItemFact.list(.session)

    public static func configure(_ options: StageOptions) throws -> Configuration {
        Configuration(language: options[Option.language], maxBytes: options[Option.maxBytes])
    }

    public let configuration: Configuration

    public init(id: String, configuration: Configuration, context: StageContext) { self.configuration = configuration }

    public func run(_ input: Inbox<InputFile>, _ output: Outbox<Transcript>, _ item: ItemContext) async throws {
        for try await file in input {
            if file.sidecarURL.standardizedFileURL != file.url.standardizedFileURL {
                item.facts[.session] =
                    try ReportSidecar.load(for: file, policy: .optional, logger: item.logger)
                    .map { SessionSidecar(fields: $0.fields) }
            }
            for transcript in try read(file) { try await output.send(transcript) }
        }
    }

    /// The file's turns, in order.
    func read(_ file: InputFile) throws -> [Transcript] {
        let size = (try? FileManager.default.attributesOfItem(atPath: file.url.path)[.size] as? NSNumber)?.intValue ?? 0
        guard size <= configuration.maxBytes else {
            throw DecodeError(.outOfBounds, "text input of \(size) bytes is over maxBytes \(configuration.maxBytes)")
        }
        guard let data = FileManager.default.contents(atPath: file.url.path) else {
            throw DecodeError(.unreadable, "cannot read the file")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw DecodeError(.unreadable, "not UTF-8 text") }
        switch file.url.pathExtension.lowercased() {
        case "json": return try turns(json: data)
        default: return lines(text)
        }
    }

    func lines(_ text: String) -> [Transcript] {
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        return lines.enumerated().map { i, line in
            turn(i, text: line, start: Double(i), end: Double(i + 1), words: [], language: configuration.language)
        }
    }

    func turns(json data: Data) throws -> [Transcript] {
        guard let object = (try? JSONValue.parse(data))?.objectValue else {
            throw DecodeError(
                .unreadable, "not a JSON object (a whisper-style transcript has \"text\" and \"segments\")")
        }
        let language = object["language"]?.stringValue ?? configuration.language
        let segments = object["segments"]?.arrayValue ?? []
        if segments.isEmpty {
            guard let text = object["text"]?.stringValue else {
                throw DecodeError(.unreadable, "no \"text\" and no \"segments\"")
            }
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            return trimmed.isEmpty ? [] : [turn(0, text: trimmed, start: 0, end: 1, words: [], language: language)]
        }
        var out: [Transcript] = []
        for (i, value) in segments.enumerated() {
            guard let segment = value.objectValue, let text = segment["text"]?.stringValue else {
                throw DecodeError(.unreadable, "segments[\(i)]: expected an object with \"text\"")
            }
            let start = segment["start"]?.numberValue ?? Double(i)
            let end = max(start, segment["end"]?.numberValue ?? start + 1)
            guard start.isFinite, end.isFinite, start >= 0 else {
                throw DecodeError(.outOfBounds, "segments[\(i)]: start and end must be times in seconds")
            }
            let words: [Word] = (segment["words"]?.arrayValue ?? []).compactMap { w in
                guard let o = w.objectValue, let word = o["word"]?.stringValue, let s = o["start"]?.numberValue,
                    let e = o["end"]?.numberValue
                else { return nil }
                return Word(
                    text: word.trimmingCharacters(in: .whitespaces), start: s, end: e,
                    confidence: o["probability"]?.numberValue)
            }
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if !trimmed.isEmpty {
                out.append(turn(out.count, text: trimmed, start: start, end: end, words: words, language: language))
            }
        }
        return out
    }

    func turn(_ index: Int, text: String, start: Double, end: Double, words: [Word], language: String?) -> Transcript {
        let chunk = AudioChunk(
            format: AudioFormat(sampleRate: 16000, channels: 1), samples: [], start: start, end: end, index: index,
            cut: .text)
        return Transcript(chunk: chunk, text: text, words: words, language: language, provider: "text", model: nil)
    }
}
