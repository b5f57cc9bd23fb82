import Foundation

/// Files named by data from outside (a message-chunk index's parts, a bag's manifests, a
/// sidecar) read only from inside the folder they belong to: the name is a relative path with no
/// `..`, no component along the way may be a symbolic link, and what is opened must be a regular
/// file (a FIFO would block a reader for ever, a device never ends). Each step is opened relative
/// to the one before (`openat` with `O_NOFOLLOW`), so a link swapped in between a check and the
/// read is refused too.
public enum ContainedFile {
    /// What a walk found at a path: its type as `lstat` gives it (links are not followed).
    public enum Kind: Sendable, Equatable {
        case file, directory, symlink, fifo, socket, device, other

        /// The kind of a `stat`'s `st_mode`.
        public init(mode: mode_t) {
            switch mode & S_IFMT {
            case S_IFREG: self = .file
            case S_IFDIR: self = .directory
            case S_IFLNK: self = .symlink
            case S_IFIFO: self = .fifo
            case S_IFSOCK: self = .socket
            case S_IFCHR, S_IFBLK: self = .device
            default: self = .other
            }
        }

        /// `a symbolic link`, `a FIFO`, … for messages.
        public var described: String {
            switch self {
            case .file: "a regular file"
            case .directory: "a folder"
            case .symlink: "a symbolic link"
            case .fifo: "a FIFO"
            case .socket: "a socket"
            case .device: "a device"
            case .other: "not a regular file"
            }
        }
    }

    /// Whether a path from outside names something inside its folder: relative, not empty, no
    /// `.` or `..` component, no NUL. (Links are the opener's to refuse.)
    public static func isContained(_ path: String) -> Bool {
        guard !path.isEmpty, !path.hasPrefix("/"), !path.contains("\0") else { return false }
        return !path.split(separator: "/", omittingEmptySubsequences: false).contains {
            $0 == ".." || $0 == "." || $0.isEmpty
        }
    }

    /// Whether a name from outside is one file name: contained and without a `/`.
    public static func isFileName(_ name: String) -> Bool { isContained(name) && !name.contains("/") }

    /// Opens `path` (relative to `folder`) for reading. Throws `VoxError(.badInput)` whose
    /// message is the reason alone (`a symbolic link; not followed`), for the caller to put
    /// after the name it shows.
    public static func open(_ path: String, in folder: URL) throws -> FileHandle {
        guard isContained(path) else { throw VoxError(.badInput, "outside its folder; not read") }
        var directory = Foundation.open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else {
            throw VoxError(.badInput, "cannot open its folder: \(String(cString: strerror(errno)))")
        }
        let components = path.split(separator: "/").map(String.init)
        for component in components.dropLast() {
            let next = openat(directory, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            var error = errno
            // Linux says ENOTDIR, not ELOOP, for a link opened as a folder without following it.
            var status = stat()
            if next < 0, fstatat(directory, component, &status, AT_SYMLINK_NOFOLLOW) == 0,
                Kind(mode: status.st_mode) == .symlink
            {
                error = ELOOP
            }
            close(directory)
            guard next >= 0 else { throw refusal(errno: error, component: component) }
            directory = next
        }
        let last = components.last ?? path
        let fd = openat(directory, last, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        let error = errno
        defer { close(directory) }
        guard fd >= 0 else { throw refusal(errno: error, component: nil) }
        var status = stat()
        guard fstat(fd, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            let kind = Kind(mode: status.st_mode)
            close(fd)
            throw VoxError(.badInput, "\(kind.described), not a regular file; not read")
        }
        // Reads of a regular file never block; the flag only kept a FIFO from blocking the open.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    /// The whole file at `path` inside `folder` (see `open`).
    public static func read(_ path: String, in folder: URL) throws -> Data {
        let handle = try open(path, in: folder)
        defer { try? handle.close() }
        do {
            return try handle.readToEnd() ?? Data()
        } catch {
            throw VoxError(.badInput, "cannot read: \(describe(error))")
        }
    }

    /// Every entry below `folder` (not the folder itself), as sorted paths relative to it with
    /// what `lstat` says each is. Links are listed, never followed; folders are descended.
    public static func walk(_ folder: URL) -> [(path: String, kind: Kind)] {
        var out: [(path: String, kind: Kind)] = []
        var pending = [""]
        while let relative = pending.popLast() {
            let base = relative.isEmpty ? folder.path : folder.path + "/" + relative
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: base) else { continue }
            for name in names {
                let path = relative.isEmpty ? name : relative + "/" + name
                var status = stat()
                let kind = lstat(base + "/" + name, &status) == 0 ? Kind(mode: status.st_mode) : .other
                out.append((path, kind))
                if kind == .directory { pending.append(path) }
            }
        }
        return out.sorted { $0.path < $1.path }
    }

    static func refusal(errno error: Int32, component: String?) -> VoxError {
        switch error {
        case ENOENT: return VoxError(.badInput, "missing")
        case ELOOP:
            return VoxError(.badInput, "\(component.map { "\($0) is " } ?? "")a symbolic link; not followed")
        case ENOTDIR:
            return VoxError(.badInput, "\(component.map { "\($0) is " } ?? "")not a folder")
        default:
            return VoxError(.badInput, "cannot open: \(String(cString: strerror(error)))")
        }
    }
}
