import Foundation

/// The shared libraries this process has mapped, for item keys: a runtime rebuilt or upgraded
/// (another version, compiler or instruction set) redoes the items it made.
public enum LoadedLibraries {
    /// The mapped files whose names start with one of `prefixes` (`libwhisper.so`), sorted. Call
    /// it after the library has been used once, so the loader has mapped it.
    public static func files(named prefixes: [String]) -> [URL] {
        // The files the dynamic loader mapped for this process (dladdr is not visible to Swift on Linux).
        guard let maps = procFile("/proc/self/maps") else { return [] }
        var files = Set<String>()
        for line in maps.split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/") else { continue }
            let path = String(line[slash...])
            let name = (path as NSString).lastPathComponent
            if prefixes.contains(where: { name.hasPrefix($0) }) { files.insert(path) }
        }
        return files.sorted().map { URL(fileURLWithPath: $0) }
    }

    /// A /proc file read to its end (they report size 0, and a read sized by that stops at a page).
    public static func procFile(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        return (try? handle.readToEnd()).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// Where installed data (Whisper models, Piper voices) is looked up by short name: the folders in
/// the environment variable `variable` (colon-separated), then `<prefix>/share/voxpipe/<folder>`
/// for the prefixes `make setup` installs into (/usr/local, then /usr).
public func installedDataSearchPath(variable: String, folder: String) -> [URL] {
    let env = ProcessInfo.processInfo.environment[variable].map { $0.split(separator: ":").map(String.init) } ?? []
    return (env + ["/usr/local/share/voxpipe/\(folder)", "/usr/share/voxpipe/\(folder)"]).map {
        URL(fileURLWithPath: $0, isDirectory: true)
    }
}
