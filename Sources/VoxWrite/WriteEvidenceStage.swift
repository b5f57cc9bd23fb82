import Foundation
import VoxCore
import VoxModeration

/// `write-evidence`: AudioChunk (+ Transcript) → Artifact. Builds one BagIt 1.0 bag (RFC 8493) per
/// item or track from its tail window, deterministic for the same input and spec: bagit.txt,
/// bag-info.txt, manifests and tag manifest, and the payload laid out by `EvidenceBag`
/// (evidence.wav, original, transcript.json, report.json).
///
/// The bag is built under a temporary name and moved into place whole with the item.
public struct WriteEvidenceStage: Stage {
    public enum Input: StageInput {
        case chunk(AudioChunk)
        case transcript(Transcript)

        public static let accepted: [PayloadType] = [.audioChunk, .transcript]

        public init?(payload: any Payload) {
            // A transcript carries its chunk too; take it as a transcript.
            if let t = payload.carried(Transcript.self) {
                self = .transcript(t)
            } else if let c = payload.carried(AudioChunk.self) {
                self = .chunk(c)
            } else {
                return nil
            }
        }
    }

    public typealias Output = Artifact

    public struct Configuration: Sendable {
        public var organization: String?
        public var includeOriginal: Bool
    }

    public static let kind = "write-evidence"
    public static let summary =
        "Writes a BagIt evidence bundle per item/track: 48 kHz mono WAV of the window, original, report, hashes."
    /// Each option, declared once.
    public enum Option {
        public static let organization = StageOption<String?>(
            "organization", .string, help: "Source-Organization in bag-info.txt.")
        public static let original = StageOption<Bool>(
            "original", .boolean, default: true, help: "Keep the untouched upload as data/original.<ext>.")
    }

    public static let options: [OptionSpec] = [Option.organization.spec, Option.original.spec]

    public static func configure(_ options: StageOptions) throws -> Configuration {
        Configuration(organization: options[Option.organization], includeOriginal: options[Option.original])
    }

    /// The source's format and length and the report go into report.json and bag-info.txt.
    public static let factsUsed = ItemFact.list(.sourceFormat, .audioSeconds, .moderationReport)

    public static let evidenceFormat = StreamFormat(sampleRate: 48000, channels: 1)

    public static func outputFormat(_ configuration: Configuration, input: StreamFormat) throws -> StreamFormat {
        guard input == evidenceFormat else {
            throw PlanError(
                "evidence is 48 kHz mono; add a stage {\"kind\": \"resample\", \"rate\": 48000, \"channels\": 1} "
                    + "before the chunk stage (and list the audio first in \"from\")"
            )
        }
        return input
    }

    public static func plannedOutputs(_ configuration: Configuration, id: String, input: PayloadType) -> [String] {
        ["\(id)/ (BagIt bag)"]
    }

    public let id: String
    public let configuration: Configuration
    /// How the run was made: spec, software versions, what each stage declared.
    let provenance: Provenance
    let digests: DigestCache
    /// Where the bag is written and hashed: off the cooperative pool.
    let blocking: BlockingExecutor
    /// Redacts every key in use from what this writer writes.
    let secrets: Secrets

    public init(id: String, configuration: Configuration, context: StageContext) {
        self.id = id
        secrets = context.secrets
        self.configuration = configuration
        provenance = context.provenance
        digests = context.digests
        blocking = context.blocking
    }

    public func run(_ input: Inbox<Input>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        var window: AudioChunk?
        var transcripts: [Transcript] = []
        for try await value in input {
            switch value {
            case .chunk(let chunk):
                guard window == nil else {
                    throw WriteError(
                        .unsupported,
                        "write-evidence takes one window per item or track; feed it from a chunk stage in mode tail")
                }
                guard chunk.format == AudioFormat(sampleRate: 48000, channels: 1) else {
                    throw WriteError(.unsupported, "evidence must be 48 kHz mono, got \(chunk.format)")
                }
                window = chunk
            case .transcript(let t):
                if !t.text.isEmpty { transcripts.append(t) }
            }
        }
        guard var window else {
            throw WriteError(.unsupported, "no audio reached write-evidence (is the input empty?)")
        }
        if let reported = item.item.reportWindow { window = Self.trim(window, to: reported) }
        let bag = try item.outputs.reserve(name: id)
        let (trimmed, sorted) = (window, transcripts.sorted { $0.chunk.start < $1.chunk.start })
        // Copying and hashing the upload (or waiting for its prefetch) blocks: off the cooperative pool.
        try await blocking.run { try build(bag: bag, window: trimmed, transcripts: sorted, item: item) }
        let artifacts = try await item.outputs.artifacts(forDirectory: bag, digests: digests)
        for artifact in artifacts {
            try await output.send(artifact)
        }
    }

    func build(bag: URL, window: AudioChunk, transcripts: [Transcript], item: ItemContext) throws {
        let layout = EvidenceBag(root: bag)
        try ItemOutputs.createFolder(layout.data)
        let evidence = layout.evidence
        let writer = try SndFileWriter(url: evidence, format: window.format, encoding: .pcm16)
        try writer.write(window.samples)
        try writer.close()

        let source = item.item
        let ext = source.url.pathExtension.lowercased()
        var sourceSHA: String?
        var sourceBytes: Int64 = 0
        if configuration.includeOriginal {
            // One read of the upload gives the copy and both of its digests.
            do {
                let copy = try digests.copy(source.url, to: layout.original(extension: ext))
                (sourceSHA, sourceBytes) = (copy.sha256, copy.bytes)
                digests.remember(source.url, .sha256, hex: copy.sha256)
            } catch {
                let full = (error as? any CategorizedError)?.category == .outputFull
                throw WriteError(
                    full ? .outputFull : .writeFailed, "cannot copy the upload into the bag: \(describe(error))")
            }
        }
        if !transcripts.isEmpty {
            try AtomicFile.writeFile(
                Data(secrets.redact(TranscriptFormat.json.render(transcripts)).utf8), to: layout.transcript)
        }
        if sourceSHA == nil { (sourceSHA, sourceBytes) = try digests.hexOfFile(at: source.url) }
        let report = reportJSON(
            window: window, item: item, sourceSHA: sourceSHA ?? "", sourceBytes: sourceBytes,
            pcmSHA: try Self.pcmSHA256(evidence), pcmFrames: window.frames)
        try AtomicFile.writeFile(report.prettyData() + Data("\n".utf8), to: layout.report)

        var info: [(String, String)] = [
            ("Bag-Software-Agent", "voxpipe \(provenance.software["voxpipe"] ?? "")"),
            ("Bagging-Date", baggingDate(item)),
        ]
        if let ids = item.item.reportWindow?.reportIDs {
            info.append(("External-Identifier", ids.joined(separator: ", ")))
        } else if let reportID = item.facts[.moderationReport]?.reportID {
            info.append(("External-Identifier", reportID))
        }
        if let organization = configuration.organization { info.append(("Source-Organization", organization)) }
        try BagIt.finish(bag: bag, info: info, digests: digests)
    }

    /// The date the evidence is about, so the bag is the same whenever it is built: the report's
    /// reported-at day, else the upload's modification day (UTC).
    func baggingDate(_ item: ItemContext) -> String {
        if let at = item.facts[.moderationReport]?.reportedAt, at.count >= 10,
            at.prefix(10).allSatisfy({ $0.isNumber || $0 == "-" })
        {
            return String(at.prefix(10))
        }
        let modified =
            (try? FileManager.default.attributesOfItem(atPath: item.item.url.path)[.modificationDate] as? Date)
            ?? Date(timeIntervalSince1970: 0)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter.string(from: modified)
    }

    func reportJSON(
        window: AudioChunk, item: ItemContext, sourceSHA: String, sourceBytes: Int64, pcmSHA: String, pcmFrames: Int
    ) -> JSONValue {
        func r(_ x: Double) -> JSONValue { .number((x * 1_000_000).rounded() / 1_000_000) }
        let facts = item.facts
        var source: [String: JSONValue] = [
            "file": .string(item.item.relativePath), "bytes": .number(Double(sourceBytes)),
            "sha256": .string(sourceSHA),
        ]
        if let format = facts[.sourceFormat] {
            source["sampleRate"] = .number(Double(format.sampleRate))
            source["channels"] = .number(Double(format.channels))
        }
        if let seconds = facts[.audioSeconds] { source["durationSeconds"] = r(seconds) }
        let track: JSONValue =
            item.item.seat.map { t in
                .object([
                    "channel": .number(Double(t.channel)), "name": .string(t.name),
                    "user": t.user.map(JSONValue.string) ?? .null,
                ])
            } ?? .null
        return [
            "report": facts[.moderationReport].map { .object($0.fields) } ?? .null,
            "track": track,
            "source": .object(source),
            "window": windowJSON(window, reported: item.item.reportWindow, r: r),
            "evidence": [
                "file": .string(EvidenceBag.evidencePath), "sampleRate": 48000, "channels": 1,
                "encoding": "PCM 16-bit little-endian",
                "frames": .number(Double(pcmFrames)), "pcmSHA256": .string(pcmSHA),
            ],
            "resampler": .array(provenance.records(declaring: .resampling)),
            "provenance": .array(provenance.records),
            "software": .object(provenance.software.mapValues(JSONValue.string)),
            "spec": [
                "sha256": provenance.specFingerprint.map(JSONValue.string) ?? .null,
                "stages": provenance.spec?.objectValue?["stages"] ?? .null,
            ],
        ]
    }

    /// The window's span; for a report window also what was asked, the shortfall at the
    /// recording's start, and the report ids it holds.
    func windowJSON(_ window: AudioChunk, reported: ReportWindow?, r: (Double) -> JSONValue) -> JSONValue {
        var o: [String: JSONValue] = [
            "start": r(window.start), "end": r(window.end), "seconds": r(window.end - window.start),
        ]
        if let reported {
            o["reportIds"] = .array(reported.reportIDs.map(JSONValue.string))
            o["requestedSeconds"] = r(reported.seconds)
            o["shortfallSeconds"] = r(reported.shortfall)
            o["reportedMoment"] = r(reported.end)
        }
        return .object(o)
    }

    /// The part of a chunk inside a report window (the decoder starts a little early so filters settle).
    static func trim(_ chunk: AudioChunk, to window: ReportWindow) -> AudioChunk {
        let rate = Double(chunk.format.sampleRate), channels = chunk.format.channels
        let first = max(0, min(chunk.frames, Int(((window.start - chunk.start) * rate).rounded())))
        let last = max(first, min(chunk.frames, Int(((window.end - chunk.start) * rate).rounded())))
        guard first > 0 || last < chunk.frames else { return chunk }
        var trimmed = chunk
        trimmed.samples = Array(chunk.samples[first * channels..<last * channels])
        trimmed.start = chunk.start + Double(first) / rate
        trimmed.end = trimmed.start + Double(last - first) / rate
        return trimmed
    }

    /// SHA-256 of the WAV's sample data (its data chunk), so the audio can be checked apart
    /// from its header.
    static func pcmSHA256(_ wav: URL) throws -> String {
        let bytes = try Data(contentsOf: wav)
        var offset = 12
        while offset + 8 <= bytes.count {
            let id = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            let size =
                Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6]) << 16 | Int(
                    bytes[offset + 7]) << 24
            if id == "data" { return Digest.hex(bytes[(offset + 8)..<min(bytes.count, offset + 8 + size)]) }
            offset += 8 + size + (size & 1)
        }
        throw WriteError(.writeFailed, "evidence.wav has no data chunk")
    }
}
