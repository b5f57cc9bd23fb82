import Foundation
import Synchronization

/// Every secret a process has in use (API keys from environment variables, key files and serve's
/// clients), and the one place text passes through on its way out: stderr, logs, reports, JUnit,
/// metrics, HTTP recordings, transcripts and replies are redacted here before they are written.
///
/// Whoever loads a key registers it (`HTTPSettings.apiKey(secrets:)`, serve's client keys); whoever
/// writes text calls `redact`. A key is replaced in its plain form and in the forms JSON and XML
/// escaping give it. Text gets `[redacted]`; bytes that are not text (not UTF-8, or holding a NUL:
/// an audio body, even a silent one) get a run of `*` as long as the key, so a container's sizes
/// and offsets still hold.
///
/// Thread-safe. Registered keys stay until they are unregistered as often as they were registered
/// (serve forgets a client's key with the request or session that brought it).
public final class Secrets: Sendable {
    /// The keys, and every form of every key to replace, longest first (a key holding another
    /// goes whole).
    private let state = Mutex<(keys: Set<String>, forms: [String], uses: [String: Int])>(([], [], [:]))

    public init() {}

    /// The text `[redacted]` stands for a key in.
    public static let replacement = "[redacted]"

    /// Refuses a key that holds a control character (CR, LF, NUL, …): sent in a header, it would
    /// end that header and start another. `source` names where the key came from (an environment
    /// variable, a file) and is what the error names; the key itself never is.
    public static func check(_ key: String, source: String) throws {
        if key.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw VoxError(
                .invalidSpec,
                "the API key in \(source) holds a control character (CR, LF, NUL, …); refusing it: a key is one line "
                    + "of printable characters")
        }
    }

    /// Adds a key to redact from now on. Empty keys are ignored.
    public func register(_ key: String) {
        guard !key.isEmpty else { return }
        state.withLock { state in
            state.uses[key, default: 0] += 1
            guard state.keys.insert(key).inserted else { return }
            var all = Set(state.forms)
            all.formUnion(Self.forms(of: key))
            state.forms = all.sorted { $0.utf8.count != $1.utf8.count ? $0.utf8.count > $1.utf8.count : $0 < $1 }
        }
    }

    /// Stops redacting a key registered once (a key registered n times needs n calls): serve's
    /// client keys live as long as the request or session that brought them.
    public func unregister(_ key: String) {
        guard !key.isEmpty else { return }
        state.withLock { state in
            guard let count = state.uses[key] else { return }
            if count > 1 {
                state.uses[key] = count - 1
                return
            }
            state.uses[key] = nil
            state.keys.remove(key)
            state.forms = Self.sortedForms(state.keys)
        }
    }

    /// Whether no key is registered (nothing to redact).
    public var isEmpty: Bool { state.withLock { $0.forms.isEmpty } }

    /// The text with every registered key replaced by `[redacted]`.
    public func redact(_ text: String) -> String {
        let forms = state.withLock { $0.forms }
        var out = text
        for form in forms where out.contains(form) {
            out = out.replacingOccurrences(of: form, with: Self.replacement)
        }
        return out
    }

    /// The bytes with every registered key replaced: as text when they are UTF-8 without a NUL,
    /// else each occurrence overwritten with `*` (same length).
    public func redact(_ data: Data) -> Data {
        let forms = state.withLock { $0.forms }
        guard !forms.isEmpty else { return data }
        if !data.contains(0), let text = String(data: data, encoding: .utf8) {
            let clean = redact(text)
            return clean == text ? data : Data(clean.utf8)
        }
        var out = data
        for form in forms {
            let needle = Data(form.utf8)
            var start = out.startIndex
            while let found = out.range(of: needle, in: start..<out.endIndex) {
                out.replaceSubrange(found, with: Data(repeating: UInt8(ascii: "*"), count: needle.count))
                start = found.upperBound
            }
        }
        return out
    }

    /// Every form of every key, longest first.
    static func sortedForms(_ keys: Set<String>) -> [String] {
        Set(keys.flatMap(forms(of:))).sorted {
            $0.utf8.count != $1.utf8.count ? $0.utf8.count > $1.utf8.count : $0 < $1
        }
    }

    /// The key as it is, and as JSON and XML escaping write it.
    static func forms(of key: String) -> Set<String> {
        var forms: Set<String> = [key]
        if let json = try? JSONSerialization.data(withJSONObject: [key], options: [.fragmentsAllowed]),
            let text = String(data: json, encoding: .utf8), text.count >= 4
        {
            // ["…"] → …
            forms.insert(String(text.dropFirst(2).dropLast(2)))
        }
        forms.insert(key.replacingOccurrences(of: "/", with: "\\/"))
        forms.insert(xmlEscaped(key))
        return forms.filter { !$0.isEmpty }
    }
}
