import Foundation

/// The exclusive claim of a run on its output folder (flock; the kernel drops it when the
/// process dies). An unsharded run locks the folder exclusively; a sharded run shares the
/// folder lock with other shards and locks its own shard exclusively, so different shards run
/// side by side and two attempts at one shard do not.
public final class OutputLock: Sendable {
    /// The lock files held open (closing one releases its lock).
    private let descriptors: [Int32]

    public init(outputDirectory: URL, shard: Shard?) throws {
        let folderLock = outputDirectory.appendingPathComponent(".voxpipe.lock")
        var held = [try Self.take(folderLock, exclusive: shard == nil, outputDirectory: outputDirectory)]
        if let shard {
            do {
                held.append(
                    try Self.take(
                        outputDirectory.appendingPathComponent(".voxpipe-shard-\(shard.index)-of-\(shard.count).lock"),
                        exclusive: true, outputDirectory: outputDirectory))
            } catch {
                for fd in held { close(fd) }
                throw error
            }
        }
        descriptors = held
    }

    /// Opens and locks `url`; returns its descriptor.
    private static func take(_ url: URL, exclusive: Bool, outputDirectory: URL) throws -> Int32 {
        let fd = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw VoxError(
                .cannotCreate,
                "output folder \(outputDirectory.path) is not writable (cannot create \(url.lastPathComponent): "
                    + "\(String(cString: strerror(errno))))"
            )
        }
        guard flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0 else {
            close(fd)
            let holder =
                (try? String(contentsOf: url, encoding: .utf8)).map {
                    $0.trimmingCharacters(in: .whitespacesAndNewlines)
                } ?? ""
            throw VoxError(
                .locked,
                "another voxpipe run is using \(outputDirectory.path)\(holder.isEmpty ? "" : " (\(holder))"); try "
                    + "again later"
            )
        }
        // What an earlier holder wrote is stale now: a shared holder clears it, so a run refused
        // later names no dead process.
        ftruncate(fd, 0)
        if exclusive {
            let text = "pid \(getpid())\n"
            _ = text.withCString { write(fd, $0, strlen($0)) }
        }
        return fd
    }

    deinit { for fd in descriptors { close(fd) } }
}
