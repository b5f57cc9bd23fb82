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
        var seen = Set<String>()
        for path in paths {
            var isDirectory: ObjCBool = false
            guard fileManager.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw VoxError(.noInput, "\(path): no such file or folder")
            }
            let url = URL(fileURLWithPath: path).standardizedFileURL
            if isDirectory.boolValue {
                let (files, passedOver) = try files(
                    under: url, extensions: extensions, outputDirectory: outputDirectory?.standardizedFileURL,
                    fileManager: fileManager)
                skipped += passedOver
                for (file, relative) in files where seen.insert(file.path).inserted {
                    found.append((file, relative))
                }
            } else if seen.insert(url.path).inserted {
                found.append((url, url.lastPathComponent))
            }
        }
        return Listing(items: try assignOutputNames(found), skippedFolders: skipped)
    }

    /// Whether a folder is voxpipe's: the output folder, or one holding its lock or a manifest.
    static func isVoxpipeOutput(_ folder: URL, outputDirectory: URL?, fileManager: FileManager) -> Bool {
        if let outputDirectory, folder.standardizedFileURL.path == outputDirectory.path { return true }
        return fileManager.fileExists(atPath: folder.appendingPathComponent(".voxpipe.lock").path)
            || fileManager.fileExists(atPath: folder.appendingPathComponent(Ledger.manifestName).path)
    }

    static func files(
        under root: URL, extensions: Set<String>, outputDirectory: URL?, fileManager: FileManager
    ) throws -> (files: [(URL, String)], skipped: [URL]) {
        guard
            let enumerator = fileManager.enumerator(
                at: root, includingPropertiesForKeys: [.isRegularFileKey, .isDirectoryKey],
                options: [.skipsHiddenFiles])
        else {
            throw VoxError(.noInput, "\(root.path): cannot list folder")
        }
        var files: [(URL, String)] = []
        var skipped: [URL] = []
        let base = root.path.hasSuffix("/") ? root.path : root.path + "/"
        for case let url as URL in enumerator {
            if (try? url.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) == true {
                if isVoxpipeOutput(url, outputDirectory: outputDirectory, fileManager: fileManager) {
                    enumerator.skipDescendants()
                    skipped.append(url.standardizedFileURL)
                }
                continue
            }
            guard extensions.contains(url.pathExtension.lowercased()),
                (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true
            else { continue }
            let path = url.standardizedFileURL.path
            let relative = path.hasPrefix(base) ? String(path.dropFirst(base.count)) : url.lastPathComponent
            files.append((url.standardizedFileURL, relative))
        }
        // `X.json` beside `X.<ext>` is X's sidecar, not an input of its own (where JSON is read).
        let stems = Set(
            files.filter { $0.0.pathExtension.lowercased() != "json" }.map { $0.0.deletingPathExtension().path })
        files.removeAll {
            $0.0.pathExtension.lowercased() == "json" && stems.contains($0.0.deletingPathExtension().path)
        }
        return (files, skipped)
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
