import Foundation
import VoxCore

/// `write-message-chunks`: Artifact → Artifact. Splits files another writer produced into parts
/// of at most `bytes` (default 30720, under the 32 KB message limit of real-time messaging
/// services), with an index (count, sizes, SHA-256 of each part and of the whole), for apps that
/// send evidence or replies as chat messages. `voxpipe join INDEX` puts a file back together and
/// checks it. Parts go to `<id>/<name>.NNNN`, the index to `<id>/<name>.index.json`, where name
/// is the file's path in the item folder with `/` as `_`.
public struct WriteMessageChunksStage: Stage {
    public typealias Input = Artifact
    public typealias Output = Artifact

    public struct Configuration: Sendable {
        public var bytes: Int
        public var include: [String]
    }

    public static let kind = "write-message-chunks"
    public static let summary = "Splits written files into message-sized parts with a checksummed index."
    /// Each option, declared once.
    public enum Option {
        public static let bytes = StageOption<Int>(
            "bytes", .integer(256...16_777_216), default: 30720, help: "Largest part in bytes.")
        public static let include = StageOption<String?>(
            "include", .string,
            help: "Only files whose path ends with this (for example evidence.wav); absent: every file.")
    }

    public static let options: [OptionSpec] = [Option.bytes.spec, Option.include.spec]

    public static func configure(_ options: StageOptions) throws -> Configuration {
        Configuration(bytes: options[Option.bytes], include: options[Option.include].map { [$0] } ?? [])
    }

    public static func plannedOutputs(_ configuration: Configuration, id: String, input: PayloadType) -> [String] {
        ["\(id)/ (parts + index)"]
    }

    public let id: String
    public let configuration: Configuration
    let blocking: BlockingExecutor

    public init(id: String, configuration: Configuration, context: StageContext) {
        self.id = id
        self.configuration = configuration
        blocking = context.blocking
    }

    /// The index file's shape.
    public struct Index: Codable, Equatable {
        public struct Part: Codable, Equatable {
            public var file: String
            public var bytes: Int
            public var sha256: String
        }
        public var name: String
        public var bytes: Int64
        public var sha256: String
        public var partBytes: Int
        public var count: Int
        public var parts: [Part]
    }

    public func run(_ input: Inbox<Artifact>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        var folder: URL?
        for try await artifact in input
        where configuration.include.isEmpty || configuration.include.contains(where: artifact.path.hasSuffix) {
            guard let source = item.outputs.currentURL(ofArtifact: artifact.path) else {
                throw WriteError(.unsupported, "cannot find \(artifact.path) among this item's outputs")
            }
            if folder == nil {
                folder = try item.outputs.reserve(name: id)
                if let folder { try ItemOutputs.createFolder(folder) }
            }
            guard let folder else { continue }
            let prefix = item.item.outputName + "/"
            let inner = artifact.path.hasPrefix(prefix) ? String(artifact.path.dropFirst(prefix.count)) : artifact.path
            let name = inner.replacingOccurrences(of: "/", with: "_")
            // Reading the file and writing its parts (each flushed) block: off the cooperative pool.
            try await blocking.run { try split(source, name: name, into: folder) }
        }
        if let folder {
            for artifact in try await item.outputs.artifacts(forDirectory: folder) { try await output.send(artifact) }
        }
    }

    func split(_ source: URL, name: String, into folder: URL) throws {
        let handle = try FileHandle(forReadingFrom: source)
        defer { try? handle.close() }
        let whole = Digest(.sha256)
        var parts: [Index.Part] = []
        var total: Int64 = 0
        var chunks: [Data] = []
        while let data = try handle.read(upToCount: configuration.bytes), !data.isEmpty {
            chunks.append(data)
        }
        let digits = max(4, String(chunks.count).count)
        for (i, data) in chunks.enumerated() {
            let file = "\(name).\(String(repeating: "0", count: digits - String(i + 1).count))\(i + 1)"
            try AtomicFile.writeFile(data, to: folder.appendingPathComponent(file))
            whole.update(data)
            total += Int64(data.count)
            parts.append(Index.Part(file: file, bytes: data.count, sha256: Digest.hex(data)))
        }
        let index = Index(
            name: name, bytes: total, sha256: whole.finalizeHex(), partBytes: configuration.bytes, count: parts.count,
            parts: parts)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try AtomicFile.writeFile(
            try encoder.encode(index) + Data("\n".utf8), to: folder.appendingPathComponent("\(name).index.json"))
    }

    /// Reassembles the file an index describes from the parts beside it; every problem names
    /// its part. Returns the bytes when all parts and the whole match. The index's `name` and
    /// every part are file names beside the index (no `/`, `..`, NUL), each part listed once and
    /// a regular file that is not a symbolic link (`ContainedFile`): an index cannot make join
    /// read other files (`../x`, `/dev/zero`, a link out of the folder, a FIFO) or one part over
    /// and over, nor name a file outside its folder to write.
    public static func join(index url: URL) throws -> (index: Index, data: Data) {
        let index: Index
        do {
            index = try JSONDecoder().decode(Index.self, from: Data(contentsOf: url))
        } catch {
            throw WriteError(.unsupported, "\(url.path): not a message-chunk index (\(describe(error)))")
        }
        let folder = url.deletingLastPathComponent()
        var problems: [String] = []
        var data = Data()
        if !ContainedFile.isFileName(index.name) {
            problems.append("name \"\(index.name)\": not a file name beside the index")
        }
        if index.count != index.parts.count {
            problems.append("index: count \(index.count) but \(index.parts.count) parts listed")
        }
        var listed: Set<String> = []
        for part in index.parts {
            guard ContainedFile.isFileName(part.file) else {
                problems.append("\(part.file): not a file name beside the index")
                continue
            }
            guard listed.insert(part.file).inserted else {
                problems.append("\(part.file): listed twice")
                continue
            }
            let bytes: Data
            do {
                bytes = try ContainedFile.read(part.file, in: folder)
            } catch let error as VoxError {
                problems.append("\(part.file): \(error.message)")
                continue
            }
            if bytes.count != part.bytes || Digest.hex(bytes) != part.sha256 {
                problems.append("\(part.file): altered (\(bytes.count) bytes, sha256 does not match the index)")
            }
            data.append(bytes)
        }
        if problems.isEmpty && (Int64(data.count) != index.bytes || Digest.hex(data) != index.sha256) {
            problems.append("\(index.name): the joined parts do not match the index's sha256")
        }
        guard problems.isEmpty else { throw WriteError(.unsupported, problems.joined(separator: "; ")) }
        return (index, data)
    }

    /// Where `voxpipe join` writes the file an index describes: `output` when given, else the
    /// index's `name` beside it (`join` has checked that name is a plain file name).
    public static func joinTarget(index url: URL, name: String, output: URL?) -> URL {
        output ?? url.deletingLastPathComponent().appendingPathComponent(name)
    }
}
