import Foundation

/// Turns the command line's INPUT paths into items: files as given, folders searched
/// recursively for audio files, and each item's output folder name decided from the whole
/// listing so that two inputs never share one.
public enum InputListing {
    /// Extensions picked up when searching folders. Files named explicitly are always taken.
    public static let audioExtensions: Set<String> = [
        "wav", "wave", "flac", "ogg", "oga", "opus", "mp3", "aif", "aiff", "aifc", "caf", "w64", "rf64",
        "au", "snd", "m4a", "mp4", "aac", "webm", "mka", "wma", "amr", "3gp",
    ]

    /// The items, and the folders under the inputs that were passed over as voxpipe's own outputs.
    public struct Listing: Sendable {
        public var items: [InputFile]
        public var skippedFolders: [URL]
        /// Entries under INPUT folders that could not be read (a folder without permission, a
        /// loop of symbolic links, a dangling link), each with why.
        public var unread: [Unread] = []
    }

    /// An entry under an INPUT folder that was not searched or listed, and why.
    public struct Unread: Sendable, Equatable {
        public var url: URL
        public var reason: String

        public init(url: URL, reason: String) {
            self.url = url
            self.reason = reason
        }
    }

    public static func collect(
        _ paths: [String], extensions: Set<String> = audioExtensions, fileManager: FileManager = .default
    ) throws -> [InputFile] {
        try list(paths, outputDirectory: nil, extensions: extensions, fileManager: fileManager).items
    }

    /// Lists the inputs. A folder under an input that is the run's output folder, or holds a
    /// voxpipe lock or item manifest (another run's outputs), is not searched: a cron job whose
    /// output folder lies inside its input folder must not take its own outputs as new work.
    /// Folders are searched for files with one of `extensions` (what the plan's first stage reads).
    public static func list(
        _ paths: [String], outputDirectory: URL?, extensions: Set<String> = audioExtensions,
        fileManager: FileManager = .default
    ) throws -> Listing {
        var found: [(url: URL, relative: String)] = []
        var skipped: [URL] = []
        var unread: [Unread] = []
        var seen = Set<String>()
        for path in paths {
            // stat follows symbolic links, as sox and ffmpeg do; a loop of them is named as such.
            var info = stat()
            guard stat(path, &info) == 0 else {
                let code = errno
                throw VoxError(.noInput, "\(path): \(code == ENOENT ? "no such file or folder" : systemReason(code))")
            }
            let url = URL(fileURLWithPath: path).standardizedFileURL
            if info.st_mode & S_IFMT == S_IFDIR {
                let walk = try files(
                    under: url, extensions: extensions, outputDirectory: outputDirectory?.standardizedFileURL,
                    fileManager: fileManager)
                skipped += walk.skipped
                unread += walk.unread
                for (file, relative) in walk.files where seen.insert(file.path).inserted {
                    found.append((file, relative))
                }
            } else if seen.insert(url.path).inserted {
                found.append((url, url.lastPathComponent))
            }
        }
        return Listing(items: try assignOutputNames(found), skippedFolders: skipped, unread: unread)
    }

    /// Whether a folder is voxpipe's: the output folder, or one holding its lock or a manifest.
    static func isVoxpipeOutput(_ folder: URL, outputDirectory: URL?, fileManager: FileManager) -> Bool {
        if let outputDirectory, folder.standardizedFileURL.path == outputDirectory.path { return true }
        return fileManager.fileExists(atPath: folder.appendingPathComponent(".voxpipe.lock").path)
            || fileManager.fileExists(atPath: folder.appendingPathComponent(Ledger.manifestName).path)
    }

    /// The files under `root` with one of `extensions`, searched depth first. Symbolic links to
    /// files and folders are followed; a folder reached a second time (a link back up, or a
    /// second link to it) is not searched again. Hidden entries are passed over.
    static func files(
        under root: URL, extensions: Set<String>, outputDirectory: URL?, fileManager: FileManager
    ) throws -> (files: [(URL, String)], skipped: [URL], unread: [Unread]) {
        struct FileID: Hashable {
            var device: UInt64
            var inode: UInt64
        }
        var info = stat()
        guard stat(root.path, &info) == 0 else {
            throw VoxError(.noInput, "\(root.path): cannot list folder: \(systemReason(errno))")
        }
        // Every folder searched, by device and inode, with the path it was first reached by.
        var searched = [FileID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)): root.path]
        var files: [(URL, String)] = []
        var skipped: [URL] = []
        var unread: [Unread] = []
        var folders: [(url: URL, relative: String)] = [(root, "")]
        while let (folder, relative) = folders.popLast() {
            let names: [String]
            switch entries(of: folder.path) {
            case .success(let found):
                names = found
            case .failure(let error):
                let reason = systemReason(error.code)
                if folder == root { throw VoxError(.noInput, "\(root.path): cannot list folder: \(reason)") }
                unread.append(Unread(url: folder, reason: reason))
                continue
            }
            for name in names.sorted().reversed() where !name.hasPrefix(".") {
                let url = folder.appendingPathComponent(name)
                let path = relative.isEmpty ? name : relative + "/" + name
                guard stat(url.path, &info) == 0 else {
                    unread.append(Unread(url: url, reason: systemReason(errno)))
                    continue
                }
                switch info.st_mode & S_IFMT {
                case S_IFDIR:
                    let id = FileID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
                    if let first = searched[id] {
                        let loop = url.path.hasPrefix(first + "/")
                        unread.append(
                            Unread(
                                url: url,
                                reason: loop
                                    ? "symbolic link loop (leads back to \(first))" : "already searched as \(first)"))
                        continue
                    }
                    searched[id] = url.path
                    if isVoxpipeOutput(url, outputDirectory: outputDirectory, fileManager: fileManager) {
                        skipped.append(url.standardizedFileURL)
                        continue
                    }
                    folders.append((url, path))
                case S_IFREG where extensions.contains(url.pathExtension.lowercased()):
                    files.append((url.standardizedFileURL, path))
                case let type where extensions.contains(url.pathExtension.lowercased()):
                    // Named like audio, but a FIFO (reading it would wait for a writer) or a device.
                    unread.append(Unread(url: url, reason: "not a regular file (\(fileTypeName(type) ?? "regular"))"))
                default:
                    continue
                }
            }
        }
        // `X.json` beside `X.<ext>` is X's sidecar, not an input of its own (where JSON is read).
        let stems = Set(
            files.filter { $0.0.pathExtension.lowercased() != "json" }.map { $0.0.deletingPathExtension().path })
        files.removeAll {
            $0.0.pathExtension.lowercased() == "json" && stems.contains($0.0.deletingPathExtension().path)
        }
        return (files, skipped, unread)
    }

    struct ListError: Error { var code: Int32 }

    /// The names in a folder (not `.` and `..`), or the `errno` that says why it cannot be listed
    /// (Foundation's error for a folder without permission carries no system reason).
    static func entries(of path: String) -> Result<[String], ListError> {
        guard let dir = opendir(path) else { return .failure(ListError(code: errno)) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return .success(names)
    }

    /// What a file of this type (`st_mode & S_IFMT`) is called in a message; nil for a regular file.
    public static func fileTypeName(_ type: mode_t) -> String? {
        switch type {
        case S_IFREG: nil
        case S_IFDIR: "folder"
        case S_IFIFO: "FIFO"
        case S_IFCHR: "character device"
        case S_IFBLK: "block device"
        case S_IFSOCK: "socket"
        case S_IFLNK: "symbolic link"
        default: "unknown type"
        }
    }

    /// Output folder names: the relative path without extension; where two inputs would share
    /// one (`a.wav`, `a.flac`), both keep their extension. Sorted by relative path.
    static func assignOutputNames(_ files: [(url: URL, relative: String)]) throws -> [InputFile] {
        func stem(_ relative: String) -> String {
            let ext = (relative as NSString).pathExtension
            return ext.isEmpty ? relative : String(relative.dropLast(ext.count + 1))
        }
        var byStem: [String: Int] = [:]
        for file in files { byStem[stem(file.relative), default: 0] += 1 }
        var items = files.map { file in
            InputFile(
                url: file.url, relativePath: file.relative,
                outputName: byStem[stem(file.relative)]! > 1 ? file.relative : stem(file.relative))
        }
        items.sort {
            $0.relativePath == $1.relativePath ? $0.url.path < $1.url.path : $0.relativePath < $1.relativePath
        }
        var owner: [String: InputFile] = [:]
        for item in items {
            if let other = owner[item.outputName] {
                throw VoxError(
                    .usage,
                    "\(other.url.path) and \(item.url.path) would both write to '\(item.outputName)/'; pass their "
                        + "common parent folder as INPUT instead"
                )
            }
            owner[item.outputName] = item
        }
        return items
    }
}
