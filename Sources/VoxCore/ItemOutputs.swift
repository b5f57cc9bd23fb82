import Foundation
import Synchronization

/// Where one item's outputs go. Writers reserve a temporary file beside each final path and
/// write it whole; the runner renames them all into place only when the item succeeds, and
/// removes them when it fails, so no reader ever sees half a file and a failed item never
/// replaces good outputs of an earlier run.
public final class ItemOutputs: Sendable {
    /// The run's output directory.
    public let root: URL
    /// The item's folder, relative to `root`.
    public let folderName: String
    /// Files reserved (temporary and final names), the final paths taken, and the temporary
    /// paths written (or described) since.
    private let state = Mutex<(pending: [(temp: URL, final: URL)], finals: Set<String>, written: Set<String>)>(
        ([], [], []))

    /// Marks temporary files, so a later run can find and remove those a killed run left.
    public static let temporaryMarker = ".voxpipe-tmp-"

    /// Where the artifacts' flushes and hashes run.
    let blocking = BlockingExecutor()

    public init(root: URL, folderName: String) {
        self.root = root
        self.folderName = folderName
    }

    public var folder: URL { root.appendingPathComponent(folderName, isDirectory: true) }

    /// The output file name DESIGN.md gives a stage's output: `<stage id>[-NNNN].<ext>`, with
    /// NNNN counting from 0001.
    public static func fileName(stageID: String, index: Int?, ext: String) -> String {
        let number = index.map { String(format: "-%04d", $0 + 1) } ?? ""
        return "\(stageID)\(number).\(ext)"
    }

    /// Reserves the output `<stage id>[-NNNN].<ext>` and returns the temporary path to write it
    /// to. Creates the item folder when needed.
    public func reserve(stageID: String, index: Int? = nil, ext: String) throws -> URL {
        try reserve(name: Self.fileName(stageID: stageID, index: index, ext: ext))
    }

    /// Reserves an output by file (or folder) name inside the item folder.
    public func reserve(name: String) throws -> URL {
        let final = folder.appendingPathComponent(name)
        let temp = folder.appendingPathComponent(
            ".\(name)\(Self.temporaryMarker)\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try state.withLock { state in
            guard state.finals.insert(final.path).inserted else {
                throw VoxError(.internal, "two outputs of one item would both be written to \(relativePath(final))")
            }
            state.pending.append((temp, final))
        }
        try Self.createFolder(folder)
        return temp
    }

    /// Creates a folder and the folders above it. The error names the folder and keeps the
    /// system's reason ("File exists" where a file is in the way, "Permission denied"); a full
    /// or read-only disk is `outputFull`.
    public static func createFolder(_ url: URL) throws {
        // The missing folders, deepest first; then each is made from the top down.
        var missing: [String] = []
        var path = url.standardizedFileURL.path
        while let code = makeFolder(path) {
            let parent = (path as NSString).deletingLastPathComponent
            guard code == ENOENT, parent != path, !parent.isEmpty else {
                throw VoxError(.writing(errno: code), "cannot create folder \(path): \(systemReason(code))")
            }
            missing.append(path)
            path = parent
        }
        for folder in missing.reversed() {
            if let code = makeFolder(folder) {
                throw VoxError(.writing(errno: code), "cannot create folder \(folder): \(systemReason(code))")
            }
        }
    }

    /// Makes one folder; nil when it is there now, else the `errno` (EEXIST: a file is in the way).
    private static func makeFolder(_ path: String) -> Int32? {
        if mkdir(path, 0o755) == 0 { return nil }
        let code = errno
        var info = stat()
        if code == EEXIST && stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR { return nil }
        return code
    }

    /// `url` as a user knows it: each temporary name in it (`.audio.wav.voxpipe-tmp-…`, or
    /// `AtomicFile`'s) replaced by the name the file or folder gets when the item is committed.
    public static func finalPath(of url: URL) -> String {
        url.path.split(separator: "/", omittingEmptySubsequences: false).map { part -> Substring in
            if part.hasPrefix("."), let marker = part.range(of: temporaryMarker) {
                return part[part.index(after: part.startIndex)..<marker.lowerBound]
            }
            if part.hasPrefix(AtomicFile.prefix) {
                // `.voxpipe-atomic-<pid>-<random>-<name>`
                return part.dropFirst(AtomicFile.prefix.count).split(separator: "-", maxSplits: 2).last ?? part
            }
            return part
        }.joined(separator: "/")
    }

    /// Describes a finished temporary file as the artifact it will become: its final path
    /// (relative to the output directory), size and SHA-256. Flushes it to disk first. The flush
    /// and the hash run on the blocking executor.
    public func artifact(for temp: URL) async throws -> Artifact {
        let final = try reserved(temp)
        return try await blocking.run { try Self.describe(temp, as: self.relativePath(final)) }
    }

    /// Writes `data` whole as the reserved temporary file `temp` (its error names the file and
    /// keeps the system's reason and category) and describes it as `artifact(for:)` does; the
    /// writing, flushing and hashing run on the blocking executor.
    public func write(_ data: Data, to temp: URL) async throws -> Artifact {
        let final = try reserved(temp)
        return try await blocking.run {
            try AtomicFile.writeFile(data, to: temp)
            return try Self.describe(temp, as: self.relativePath(final))
        }
    }

    /// Writes each file whole into the reserved temporary folder `temp` (made if need be) and
    /// describes every file under it as `artifacts(forDirectory:)` does, on the blocking executor.
    public func write(_ files: [(name: String, data: Data)], inFolder temp: URL) async throws -> [Artifact] {
        let final = try reserved(temp)
        return try await blocking.run {
            try Self.createFolder(temp)
            for file in files { try AtomicFile.writeFile(file.data, to: temp.appendingPathComponent(file.name)) }
            return try self.artifacts(in: temp, at: final, digests: nil)
        }
    }

    /// The final path of the reserved temporary file or folder `temp`, which is now written: the
    /// commit must find it.
    private func reserved(_ temp: URL) throws -> URL {
        let final = state.withLock { state -> URL? in
            guard let final = state.pending.first(where: { $0.temp == temp })?.final else { return nil }
            state.written.insert(temp.path)
            return final
        }
        guard let final else { throw VoxError(.internal, "\(temp.path) was not reserved") }
        return final
    }

    /// A finished file as the artifact at `path`: flushed to disk, then hashed.
    private static func describe(_ temp: URL, as path: String) throws -> Artifact {
        let fd = open(temp.path, O_RDONLY)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
        let (hex, bytes) = try Digest.hexOfFile(at: temp)
        return Artifact(path: path, bytes: bytes, sha256: hex)
    }

    /// Every file under a finished temporary folder (an evidence bag) as artifacts at their
    /// final paths, sorted. The hashes run on the blocking executor.
    public func artifacts(forDirectory temp: URL, digests: DigestCache? = nil) async throws -> [Artifact] {
        let final = try reserved(temp)
        return try await blocking.run { try self.artifacts(in: temp, at: final, digests: digests) }
    }

    private func artifacts(in temp: URL, at final: URL, digests: DigestCache?) throws -> [Artifact] {
        guard let enumerator = FileManager.default.enumerator(at: temp, includingPropertiesForKeys: [.isRegularFileKey])
        else { return [] }
        let base = temp.standardizedFileURL.path + "/"
        var out: [Artifact] = []
        for case let url as URL in enumerator
        where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
            let inner = String(url.standardizedFileURL.path.dropFirst(base.count))
            let (hex, bytes) = try digests?.hexOfFile(at: url) ?? Digest.hexOfFile(at: url)
            out.append(Artifact(path: relativePath(final.appendingPathComponent(inner)), bytes: bytes, sha256: hex))
        }
        return out.sorted { $0.path < $1.path }
    }

    /// Where an artifact of this item is now: under its temporary name until the item is
    /// committed. Nil for a path this item did not reserve.
    public func currentURL(ofArtifact path: String) -> URL? {
        let target = root.appendingPathComponent(path).standardizedFileURL.path
        return state.withLock { state in
            for (temp, final) in state.pending {
                let finalPath = final.standardizedFileURL.path
                if target == finalPath { return temp }
                if target.hasPrefix(finalPath + "/") {
                    return temp.appendingPathComponent(String(target.dropFirst(finalPath.count + 1)))
                }
            }
            return nil
        }
    }

    func relativePath(_ url: URL) -> String {
        let base = root.standardizedFileURL.path
        let path = url.standardizedFileURL.path
        return path.hasPrefix(base + "/") ? String(path.dropFirst(base.count + 1)) : path
    }

    /// Renames every reserved file into place; called by the runner when the item succeeded (and
    /// by the stage harness, as the runner would). A written file that is gone (something else
    /// removed it) fails the commit rather than leave an item done without it, and a folder in
    /// the way is replaced only when it holds no item's manifest (another item's folder).
    public func commit() throws {
        let (moves, written) = state.withLock { ($0.pending, $0.written) }
        for (temp, final) in moves {
            guard FileManager.default.fileExists(atPath: temp.path) else {
                // Reserved and never written: nothing to move.
                guard !written.contains(temp.path) else {
                    throw VoxError(.cannotCreate, "\(final.path) vanished before it was moved into place")
                }
                continue
            }
            if rename(temp.path, final.path) != 0 {
                // A folder (an evidence bag) replaces an older one of the same name; never another
                // item's folder.
                if errno == ENOTEMPTY || errno == EEXIST || errno == EISDIR {
                    guard !Self.holdsItemManifest(final) else {
                        throw VoxError(
                            .cannotCreate, "cannot move \(final.path) into place: another item's output folder is there"
                        )
                    }
                    try? FileManager.default.removeItem(at: final)
                    if rename(temp.path, final.path) == 0 { continue }
                }
                let code = errno
                throw VoxError(.writing(errno: code), "cannot move \(final.path) into place: \(systemReason(code))")
            }
        }
        let fd = open(folder.path, O_RDONLY)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
        state.withLock {
            $0.pending.removeAll()
            $0.written.removeAll()
        }
    }

    /// Whether an item manifest lies anywhere in `folder`.
    static func holdsItemManifest(_ folder: URL) -> Bool {
        guard let enumerator = FileManager.default.enumerator(atPath: folder.path) else { return false }
        for case let path as String in enumerator where (path as NSString).lastPathComponent == Ledger.manifestName {
            return true
        }
        return false
    }

    /// Removes every reserved temporary file; called when the item failed or was abandoned.
    public func discard() {
        let moves = state.withLock { $0.pending }
        for (temp, _) in moves { try? FileManager.default.removeItem(at: temp) }
        state.withLock {
            $0.pending.removeAll()
            $0.written.removeAll()
        }
        // Leave no empty folder behind for an item that wrote nothing.
        rmdir(folder.path)
    }
}
