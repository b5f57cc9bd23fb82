import Foundation

/// What a finished item left: written last, atomically, in the item's output folder. A rerun
/// skips the item when the key still matches and every artifact is intact.
public struct ItemManifest: Codable, Sendable, Equatable {
    /// A file and what it was when recorded. `modified` (ns since 1970) and `bytes` give a quick
    /// check; `sha256` is the content.
    public struct FileRecord: Codable, Sendable, Equatable {
        public var path: String
        public var bytes: Int64
        public var sha256: String
        public var modified: Int64
    }

    public var manifestVersion = 1
    /// SHA-256 of the input's SHA-256, the spec fingerprint (canonical spec, referenced files,
    /// voxpipe's version).
    public var key: String
    public var voxpipeVersion: String
    public var spec: String
    public var input: FileRecord
    public var artifacts: [FileRecord]
    public var started: String
    public var finished: String
    public var seconds: Double
    public var audioSeconds: Double?
    /// When `voxpipe prune` removed the item's outputs (ISO 8601). A pruned item whose input and
    /// spec are unchanged is not redone: its outputs were removed on purpose.
    public var pruned: String?
    /// What stages noticed without failing the item (a truncated file); absent when nothing.
    public var warnings: [ItemWarning]? = nil
    /// Each speaker's talk time and turns (`SpeakerTalk`), when a speaker chunker labelled the
    /// item's chunks: what the report line of a skipped item gives again.
    public var speakers: [SpeakerTalk]? = nil
}

/// Decides, per item, whether a run must redo it, and records finished items.
public struct Ledger: Sendable {
    public static let manifestName = "voxpipe.manifest.json"

    public let outputDirectory: URL
    /// SHA-256 of the canonical spec, the files it references, and voxpipe's version.
    public let fingerprint: String
    public let version: String
    /// Digests shared with the stages of the run.
    public let digests: DigestCache

    public init(outputDirectory: URL, fingerprint: String, version: String, digests: DigestCache = DigestCache()) {
        self.outputDirectory = outputDirectory
        self.fingerprint = fingerprint
        self.version = version
        self.digests = digests
    }

    /// The spec fingerprint: canonical spec bytes, each referenced regular file's SHA-256 (rules,
    /// models; folders by name only) and the tool version. Computed once per run; `digests`
    /// spares rereading files unchanged since an earlier run.
    public static func fingerprint(plan: Plan, version: String, digests: FileDigestStore? = nil) -> String {
        let d = Digest(.sha256)
        d.update(plan.canonicalSpec)
        for url in plan.referencedFiles.sorted(by: { $0.path < $1.path }) {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
            let content =
                exists && !isDirectory.boolValue
                ? ((try? digests?.sha256(of: url) ?? Digest.hexOfFile(at: url).hex) ?? "unreadable")
                : (exists ? "folder" : "missing")
            d.update(Data("\n\(url.path)=\(content)".utf8))
        }
        d.update(Data("\nvoxpipe \(version)".utf8))
        return d.finalizeHex()
    }

    /// Whether an item must run, and why.
    public enum Decision: Sendable, Equatable {
        case skip(ItemManifest)
        case run(reason: String)
    }

    public func manifestURL(for item: InputFile) -> URL {
        outputDirectory.appendingPathComponent(item.outputName, isDirectory: true).appendingPathComponent(
            Self.manifestName)
    }

    public func readManifest(for item: InputFile) -> ItemManifest? {
        guard let data = try? Data(contentsOf: manifestURL(for: item)) else { return nil }
        return try? JSONDecoder().decode(ItemManifest.self, from: data)
    }

    /// Skip when the manifest's key matches this input and spec and every artifact is present
    /// with its recorded size and modification time. Reads no audio: the input is hashed only
    /// when its size or modification time changed since the manifest.
    public func decide(_ item: InputFile) -> Decision {
        guard let manifest = readManifest(for: item) else { return .run(reason: "not done before") }
        guard manifest.spec == fingerprint else { return .run(reason: "spec or voxpipe version changed") }
        guard let input = try? inputRecord(for: item, previous: manifest.input) else {
            return .run(reason: "input unreadable")
        }
        guard input.sha256 == manifest.input.sha256 else { return .run(reason: "input changed") }
        if manifest.pruned != nil { return .skip(manifest) }
        for artifact in manifest.artifacts {
            guard let record = Self.fileStat(outputDirectory.appendingPathComponent(artifact.path)) else {
                return .run(reason: "output missing: \(artifact.path)")
            }
            guard record.bytes == artifact.bytes, record.modified == artifact.modified else {
                return .run(reason: "output changed: \(artifact.path)")
            }
        }
        return .skip(manifest)
    }

    /// The input's record, reusing the previous hash when size and modification time are unchanged.
    public func inputRecord(for item: InputFile, previous: ItemManifest.FileRecord?) throws -> ItemManifest.FileRecord {
        guard let stat = Self.fileStat(item.url) else { throw VoxError(.badInput, "cannot read \(item.url.path)") }
        if let previous, previous.bytes == stat.bytes, previous.modified == stat.modified {
            return ItemManifest.FileRecord(
                path: item.relativePath, bytes: stat.bytes, sha256: previous.sha256, modified: stat.modified)
        }
        let (hex, _) = try digests.hexOfFile(at: item.url)
        return ItemManifest.FileRecord(path: item.relativePath, bytes: stat.bytes, sha256: hex, modified: stat.modified)
    }

    public func key(inputSHA256: String) -> String {
        Digest.hex(Data("\(inputSHA256)\n\(fingerprint)".utf8))
    }

    /// Writes the manifest last, atomically (temporary name, fsync, rename).
    public func record(
        _ item: InputFile, input: ItemManifest.FileRecord, artifacts: [Artifact], started: Date, seconds: Double,
        audioSeconds: Double?, warnings: [ItemWarning] = [], speakers: [SpeakerTalk]? = nil
    ) throws {
        let records = artifacts.map { artifact in
            ItemManifest.FileRecord(
                path: artifact.path, bytes: artifact.bytes, sha256: artifact.sha256,
                modified: Self.fileStat(outputDirectory.appendingPathComponent(artifact.path))?.modified ?? 0)
        }
        let iso = ISO8601DateFormatter()
        let manifest = ItemManifest(
            key: key(inputSHA256: input.sha256), voxpipeVersion: version, spec: fingerprint, input: input,
            artifacts: records,
            started: iso.string(from: started), finished: iso.string(from: Date()), seconds: seconds,
            audioSeconds: audioSeconds, warnings: warnings.isEmpty ? nil : warnings, speakers: speakers)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try AtomicFile.write(try encoder.encode(manifest), to: manifestURL(for: item))
    }

    /// Removes the files an earlier manifest of `item` lists that `current` does not, once the
    /// new outputs are in place: a redo that writes fewer files leaves none of the old ones. Only
    /// regular files inside the item's folder go (a listed path that leads elsewhere or is a link
    /// stays), then the folders they leave empty.
    public func removeOutputs(of earlier: ItemManifest, notIn current: [Artifact], item: InputFile) {
        let keep = Set(current.map(\.path))
        let folder = outputDirectory.appendingPathComponent(item.outputName, isDirectory: true)
            .resolvingSymlinksInPath()
        for record in earlier.artifacts where !keep.contains(record.path) {
            // Resolved: a `..` or a linked folder on the way cannot lead out of the item's folder.
            let url = outputDirectory.appendingPathComponent(record.path).deletingLastPathComponent()
                .resolvingSymlinksInPath().appendingPathComponent((record.path as NSString).lastPathComponent)
            var info = stat()
            guard url.path.hasPrefix(folder.path + "/"), lstat(url.path, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                unlink(url.path) == 0
            else { continue }
            var parent = url.deletingLastPathComponent()
            while parent.path.hasPrefix(folder.path + "/"), rmdir(parent.path) == 0 {
                parent = parent.deletingLastPathComponent()
            }
        }
    }

    /// Removes temporary files a killed run left in an item's folder; returns how many.
    @discardableResult
    public static func removeTemporaries(in folder: URL) -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return 0 }
        var removed = 0
        for name in names where name.contains(ItemOutputs.temporaryMarker) || name.hasPrefix(AtomicFile.prefix) {
            if (try? FileManager.default.removeItem(at: folder.appendingPathComponent(name))) != nil { removed += 1 }
        }
        return removed
    }

    /// Size and modification time (ns, at µs precision) of a regular file, or nil. A symbolic
    /// link is followed: an input given as a link is what it points to.
    static func fileStat(_ url: URL) -> (bytes: Int64, modified: Int64)? {
        var info = stat()
        guard stat(url.path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let seconds = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        return (Int64(info.st_size), Int64((seconds * 1_000_000).rounded()) * 1000)
    }
}

/// Writes whole files or nothing: a temporary name in the same folder, fsync, rename. Plain
/// POSIX writes: Foundation's own atomic writes go through hidden temporaries of their own,
/// which a killed process would leave behind.
public enum AtomicFile {
    static let prefix = ".voxpipe-atomic-"

    public static func write(_ data: Data, to url: URL) throws {
        try ItemOutputs.createFolder(url.deletingLastPathComponent())
        let temp = url.deletingLastPathComponent().appendingPathComponent(
            "\(prefix)\(getpid())-\(UInt32.random(in: 0...UInt32.max))-\(url.lastPathComponent)")
        do {
            try writeFile(data, to: temp)
            guard rename(temp.path, url.path) == 0 else { throw failure("cannot write", url, errno: errno) }
        } catch {
            unlink(temp.path)
            throw error
        }
    }

    /// Writes `data` to a new file at `url` (replacing any), flushed to disk. Errors name the
    /// file by its final name (`ItemOutputs.finalPath`) with the system's reason.
    public static func writeFile(_ data: Data, to url: URL) throws {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("cannot create", url, errno: errno) }
        var closed = false
        defer { if !closed { close(fd) } }
        try data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Foundation.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw failure("cannot write", url, errno: errno)
                }
                offset += n
            }
        }
        // A file system may report a full disk (or an I/O error) only when the data is flushed.
        guard fsync(fd) == 0 || errno == EINVAL else { throw failure("cannot write", url, errno: errno) }
        closed = true
        guard close(fd) == 0 else { throw failure("cannot write", url, errno: errno) }
    }

    /// A failed create, write or rename of `url`, in its category (`VoxFailure.writing`).
    static func failure(_ action: String, _ url: URL, errno code: Int32) -> VoxError {
        VoxError(.writing(errno: code), "\(action) \(ItemOutputs.finalPath(of: url)): \(systemReason(code))")
    }
}
