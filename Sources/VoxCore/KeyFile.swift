import Foundation

/// A key file as voxpipe reads one (`apiKeyFile` of an HTTP provider, `serve --api-key-file`):
/// one key a line; blank lines and lines starting with `#` (comments) are not keys; the blank
/// space around a key is not part of it.
public enum KeyFile {
    /// The keys of a key file's text, in order.
    public static func keys(_ text: String) -> [String] {
        text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    /// The keys of the file at `path`: a `VoxError` naming it when it cannot be read or holds none
    /// (an empty file must not silently mean "no key").
    public static func read(_ path: String, failure: VoxFailure = .unavailable) throws -> [String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw VoxError(failure, "cannot read the API key file \(path)")
        }
        let keys = keys(text)
        guard !keys.isEmpty else {
            throw VoxError(failure, "the API key file \(path) holds no key (only blank or # comment lines)")
        }
        return keys
    }
}
