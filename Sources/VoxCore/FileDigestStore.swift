import Foundation
import Synchronization

/// SHA-256 digests of large files that do not change between runs (models, runtime libraries),
/// kept across runs in a small JSON file, keyed by path, device, inode, size, modification and
/// status-change times: a file rewritten, replaced or touched gets a new key and is hashed again.
/// A cron run with nothing new then reads no 80 MB model. A store that cannot be read or written
/// (no home folder, read-only) only means files are hashed again.
public final class FileDigestStore: Sendable {
    struct Entry: Codable, Equatable {
        var key: String
        var sha256: String
    }

    private let url: URL?
    /// The digests by path, and whether any was learnt since the store was read or saved.
    private let state: Mutex<(entries: [String: Entry], changed: Bool)>

    /// The store at `url`; nil keeps digests for this process only.
    public init(url: URL?) {
        self.url = url
        let stored = url.flatMap { try? Data(contentsOf: $0) }.flatMap {
            try? JSONDecoder().decode([String: Entry].self, from: $0)
        }
        state = Mutex((stored ?? [:], false))
    }

    /// `$XDG_CACHE_HOME/voxpipe/file-digests.json`, else `~/.cache/voxpipe/file-digests.json`.
    public static func userCache(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL? {
        let base =
            environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? environment["HOME"].flatMap {
                $0.isEmpty ? nil : URL(fileURLWithPath: $0).appendingPathComponent(".cache")
            }
        return base?.appendingPathComponent("voxpipe/file-digests.json")
    }

    /// How a file is now, as a key; nil when it cannot be stat'ed.
    static func identity(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return [
            UInt64(info.st_dev), UInt64(info.st_ino), UInt64(info.st_size), UInt64(info.st_mtim.tv_sec),
            UInt64(info.st_mtim.tv_nsec), UInt64(info.st_ctim.tv_sec), UInt64(info.st_ctim.tv_nsec),
        ].map(String.init).joined(separator: ":")
    }

    /// The file's SHA-256: from the store while the file is as it was, else read and stored.
    public func sha256(of file: URL) throws -> String {
        let path = file.standardizedFileURL.path
        let key = Self.identity(path)
        if let key, let hex = state.withLock({ $0.entries[path].flatMap { $0.key == key ? $0.sha256 : nil } }) {
            return hex
        }
        let hex = try Digest.hexOfFile(at: file).hex
        // Stored only when the file did not change while it was read.
        if let key, Self.identity(path) == key {
            state.withLock { state in
                state.entries[path] = Entry(key: key, sha256: hex)
                state.changed = true
            }
        }
        return hex
    }

    /// Writes the store back when it learnt something (atomically; failures are ignored).
    public func save() {
        guard let url else { return }
        let data: Data? = state.withLock { state in
            guard state.changed else { return nil }
            state.changed = false
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return try? encoder.encode(state.entries)
        }
        guard let data else { return }
        try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try? AtomicFile.write(data, to: url)
    }
}
