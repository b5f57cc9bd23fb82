import Foundation

/// Where installed model files are looked up by short name: `$VOXPIPE_MODELS` (colon-separated),
/// then the folders `make setup` installs into. Shared by every stage that loads a model file.
public enum ModelFolders {
    public static var searchPath: [URL] { installedDataSearchPath(variable: "VOXPIPE_MODELS", folder: "models") }

    /// The first `<folder>/<name>/<file>` that exists on the search path.
    public static func find(_ name: String, file: String) -> URL? {
        searchPath.lazy.map { $0.appendingPathComponent(name, isDirectory: true).appendingPathComponent(file) }
            .first { FileManager.default.fileExists(atPath: $0.path) }?.standardizedFileURL
    }
}
