import Foundation
import VoxCore

// Goldens and references are files a suite names; `check --update` writes goldens. A suite from
// a pull request must not make `check` read or write anywhere else: each path resolves (links
// followed) inside the suite's folder unless `--allow-outside` says otherwise, and never to a
// device, FIFO, socket or a file under /proc, /sys or /dev (/proc/self/environ would print the
// environment, keys and all), not even with the flag.

extension Suite {
    /// What a suite path is for, as messages name it.
    public enum PathRole: String, Sendable {
        case golden, reference
    }

    /// The golden of expectation `e` for `item`, checked (`checkedPath`).
    public func checkedGolden(_ named: String?, _ e: Expectation, item: String) throws -> URL {
        let url = goldenURL(named, item: item, output: e.output)
        try checkPath(url, role: .golden, expectation: e.index, item: item)
        return url
    }

    /// The reference file of expectation `e` for `item`, checked (`checkedPath`).
    public func checkedReference(_ template: String, _ e: Expectation, item: String) throws -> URL {
        let url = Self.resolve(template, item: item, in: folder)
        try checkPath(url, role: .reference, expectation: e.index, item: item)
        return url
    }

    /// `template` with `{item}` replaced, against `folder`.
    static func resolve(_ template: String, item: String, in folder: URL) -> URL {
        URL(fileURLWithPath: template.replacingOccurrences(of: "{item}", with: item), relativeTo: folder)
            .standardizedFileURL
    }

    /// Throws `VoxError(.invalidSpec)` naming the suite, the expectation, the item and the reason
    /// when `url` is a device, FIFO, socket or folder or lies under /proc, /sys or /dev (links
    /// followed), or, unless `allowOutside`, when it or the file a link there leads to is outside
    /// the suite's folder. A path that does not exist yet (a new golden) passes these checks.
    public func checkPath(_ url: URL, role: PathRole, expectation index: Int, item: String) throws {
        func refuse(_ reason: String) -> VoxError {
            VoxError(.invalidSpec, "\(self.url.path): expect[\(index)] (item \"\(item)\"): \(role.rawValue) \(reason)")
        }
        let never = "goldens and references are regular files, never devices, FIFOs or files under /proc, /sys or /dev"
        let resolved = SuitePath.resolvingLinks(url.path)
        for system in SuitePath.systemFolders
        where SuitePath.isInside(url.path, system) || SuitePath.isInside(resolved, system) {
            throw refuse("\(url.path) is under \(system); \(never)")
        }
        if let kind = SuitePath.kind(of: url.path), kind != .file {
            throw refuse("\(url.path) is \(kind.described); \(never)")
        }
        guard !allowOutside else { return }
        let base = folder.standardizedFileURL.path
        if !SuitePath.isInside(url.path, base) || !SuitePath.isInside(resolved, SuitePath.resolvingLinks(base)) {
            throw refuse("\(url.path) is outside the suite's folder \(base); pass --allow-outside to allow it")
        }
    }

    /// Checks, when the suite is loaded, each golden and reference path whose item is known
    /// then: the path names no `{item}`, or the expectation's item is a name, not a glob. The
    /// rest are checked per item (`Checker.checkPaths`) before anything is read or written.
    func checkFixedPaths() throws {
        for e in expectations {
            let literal = !e.item.contains(where: { "*?[".contains($0) })
            switch e.check {
            case .golden(let file, _), .audio(let file, _):
                if literal || !(file ?? "{item}").contains("{item}") { _ = try checkedGolden(file, e, item: e.item) }
            case .errorRate(.file(let template), _, _):
                if literal || !template.contains("{item}") { _ = try checkedReference(template, e, item: e.item) }
            default:
                continue
            }
        }
    }
}

/// Path checks and a careful reader for the files a suite names.
enum SuitePath {
    /// Folders whose files are the system's, not data: never read or written as a golden or
    /// reference.
    static let systemFolders = ["/proc", "/sys", "/dev"]

    static func isInside(_ path: String, _ folder: String) -> Bool {
        path == folder || path.hasPrefix(folder == "/" ? "/" : folder + "/")
    }

    /// `path` with every link along it followed: the longest part that exists is resolved
    /// (`realpath`) and the rest appended.
    static func resolvingLinks(_ path: String) -> String {
        var existing = path
        var rest: [String] = []
        while !existing.isEmpty, existing != "/" {
            if let real = realpath(existing, nil) {
                defer { free(real) }
                return ([String(cString: real)] + rest.reversed()).joined(separator: "/")
                    .replacingOccurrences(of: "//", with: "/")
            }
            rest.append((existing as NSString).lastPathComponent)
            existing = (existing as NSString).deletingLastPathComponent
        }
        return path
    }

    /// What is at `path`, links followed; nil when nothing is.
    static func kind(of path: String) -> ContainedFile.Kind? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return ContainedFile.Kind(mode: info.st_mode)
    }

    /// The whole regular file at `url`, or nil when there is none. A FIFO or device is refused
    /// without waiting on it (opened non-blocking, checked, then read).
    static func read(_ url: URL) throws -> Data? {
        let fd = open(url.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            throw VoxError(.badInput, "cannot open \(url.path): \(systemReason(code))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            let kind = ContainedFile.Kind(mode: info.st_mode)
            close(fd)
            throw VoxError(.badInput, "\(url.path) is \(kind.described), not a regular file; not read")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        do {
            return try handle.readToEnd() ?? Data()
        } catch {
            throw VoxError(.badInput, "cannot read \(url.path): \(describe(error))")
        }
    }
}
