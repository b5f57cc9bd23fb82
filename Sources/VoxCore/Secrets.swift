import Foundation
import Synchronization

/// Every secret a process has in use (API keys from environment variables, key files and serve's
/// clients), and the one place text passes through on its way out: stderr, logs, reports, JUnit,
/// metrics, HTTP recordings, transcripts and replies are redacted here before they are written.
///
/// Whoever loads a key registers it (`HTTPSettings.apiKey(secrets:)`, serve's client keys); whoever
/// writes text calls `redact`. A key is replaced in its plain form, in the forms JSON and XML
/// escaping give it, and in its common encodings: base64 (standard and URL-safe, with or without
/// padding, and inside a longer base64 text at any byte offset, as in `Basic` credentials), hex
/// (lower and upper case), HTML character references (`&#NN;`, `&#xNN;`, for the whole key) and,
/// for an `sk-` key, the key without that prefix. An encoded or shortened form shorter than
/// 8 bytes is left alone (a test key `sk-right` does not redact the word "right"). Text gets
/// `[redacted]`; bytes that are not text (not UTF-8, or holding a NUL: an audio body, even a
/// silent one) get a run of `*` as long as the form, so a container's sizes and offsets still hold.
///
/// Redaction is one pass over the bytes whatever the number of keys: the forms are indexed by
/// their first bytes, so only forms starting with the bytes at hand are compared.
///
/// Thread-safe. Registered keys stay until they are unregistered as often as they were registered
/// (serve forgets a client's key with the request or session that brought it).
public final class Secrets: Sendable {
    /// The keys and the index of every form of every key.
    private let state = Mutex<FormIndex>(FormIndex())

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
        state.withLock { index in
            index.uses[key, default: 0] += 1
            guard index.uses[key] == 1 else { return }
            let forms = Self.forms(of: key).map { Array($0.utf8) }
            index.formsOf[key] = forms
            for form in forms { index.retain(form) }
        }
    }

    /// Stops redacting a key registered once (a key registered n times needs n calls): serve's
    /// client keys live as long as the request or session that brought them. A form another key
    /// still has (a key that is another without its `sk-`) stays.
    public func unregister(_ key: String) {
        guard !key.isEmpty else { return }
        state.withLock { index in
            guard let count = index.uses[key] else { return }
            if count > 1 {
                index.uses[key] = count - 1
                return
            }
            index.uses[key] = nil
            for form in index.formsOf.removeValue(forKey: key) ?? [] { index.release(form) }
        }
    }

    /// Whether no key is registered (nothing to redact).
    public var isEmpty: Bool { state.withLock { $0.isEmpty } }

    /// The text with every registered key replaced by `[redacted]`.
    public func redact(_ text: String) -> String {
        let index = state.withLock { $0 }
        guard !index.isEmpty else { return text }
        let matches =
            text.utf8.withContiguousStorageIfAvailable { index.matches(in: $0) }
            ?? Array(text.utf8).withUnsafeBufferPointer { index.matches(in: $0) }
        guard !matches.isEmpty else { return text }
        let bytes = Array(text.utf8)
        return String(decoding: Self.replacing(matches, in: bytes, with: Array(Self.replacement.utf8)), as: UTF8.self)
    }

    /// The bytes with every registered key replaced: as text when they are UTF-8 without a NUL,
    /// else each occurrence overwritten with `*` (same length).
    public func redact(_ data: Data) -> Data {
        let index = state.withLock { $0 }
        guard !index.isEmpty else { return data }
        let bytes = [UInt8](data)
        let matches = bytes.withUnsafeBufferPointer { index.matches(in: $0) }
        guard !matches.isEmpty else { return data }
        if !bytes.contains(0), String(validating: bytes, as: UTF8.self) != nil {
            return Data(Self.replacing(matches, in: bytes, with: Array(Self.replacement.utf8)))
        }
        var out = bytes
        for match in matches {
            out.replaceSubrange(match, with: repeatElement(UInt8(ascii: "*"), count: match.count))
        }
        return Data(out)
    }

    /// `bytes` with each of the (ascending, disjoint) ranges replaced by `replacement`.
    static func replacing(_ ranges: [Range<Int>], in bytes: [UInt8], with replacement: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var copied = 0
        for range in ranges {
            out += bytes[copied..<range.lowerBound]
            out += replacement
            copied = range.upperBound
        }
        out += bytes[copied...]
        return out
    }

    /// The least length of a form other than the key as it is and as JSON and XML write it.
    static let shortestEncodedForm = 8

    /// The key as it is, as JSON and XML escaping write it, and in its common encodings (see the
    /// type's summary).
    static func forms(of key: String) -> Set<String> {
        var forms = escapedForms(of: key)
        var encoded: Set<String> = []
        if key.hasPrefix("sk-") { encoded.formUnion(escapedForms(of: String(key.dropFirst(3)))) }
        let bytes = Array(key.utf8)
        encoded.formUnion(base64Forms(of: bytes))
        encoded.insert(bytes.map { String(format: "%02x", $0) }.joined())
        encoded.insert(bytes.map { String(format: "%02X", $0) }.joined())
        let scalars = key.unicodeScalars.map(\.value)
        encoded.insert(scalars.map { "&#\($0);" }.joined())
        encoded.insert(scalars.map { "&#x" + String($0, radix: 16) + ";" }.joined())
        encoded.insert(scalars.map { "&#x" + String($0, radix: 16, uppercase: true) + ";" }.joined())
        forms.formUnion(encoded.filter { $0.utf8.count >= shortestEncodedForm })
        return forms.filter { !$0.isEmpty }
    }

    /// The key as it is, and as JSON and XML escaping write it.
    static func escapedForms(of key: String) -> Set<String> {
        var forms: Set<String> = [key]
        if let json = try? JSONSerialization.data(withJSONObject: [key], options: [.fragmentsAllowed]),
            let text = String(data: json, encoding: .utf8), text.count >= 4
        {
            // ["…"] → …
            forms.insert(String(text.dropFirst(2).dropLast(2)))
        }
        forms.insert(key.replacingOccurrences(of: "/", with: "\\/"))
        forms.insert(xmlEscaped(key))
        return forms
    }

    /// The key's bytes in base64, standard and URL-safe: whole (with and without padding), and the
    /// characters that stand for the key's bytes alone when it starts 0, 1 or 2 bytes into a
    /// longer text (the characters it shares with its neighbours vary with them, so are left out).
    static func base64Forms(of bytes: [UInt8]) -> Set<String> {
        guard !bytes.isEmpty else { return [] }
        var standard: Set<String> = []
        let whole = Data(bytes).base64EncodedString()
        standard.insert(whole)
        standard.insert(String(whole.prefix { $0 != "=" }))
        for offset in 0..<3 {
            let text = Array(Data(repeatElement(0, count: offset) + bytes).base64EncodedString().utf8)
            // Character i stands for bits 6i..<6i+6; the key's bits are 8·offset..<8·(offset+count).
            let first = (8 * offset + 5) / 6
            let end = (8 * (offset + bytes.count)) / 6
            if first < end { standard.insert(String(decoding: text[first..<end], as: UTF8.self)) }
        }
        let urlSafe = standard.map {
            $0.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        }
        return standard.union(urlSafe)
    }
}

/// Every form of every key, indexed for one pass over a text: by the form's first 16 bytes
/// (forms that long or longer: keys sharing a prefix such as `sk-proj-` still land in buckets of
/// their own) or first 4 bytes (forms of 4 to 15 bytes), with a bitmap of the first two bytes to
/// pass over most places without a lookup; shorter forms (a short key) are compared at each place.
struct FormIndex: Sendable {
    /// The first 16 bytes of a form or of the text at a place.
    struct Anchor: Hashable, Sendable {
        var high: UInt64
        var low: UInt64
    }

    static let anchorLength = 16

    /// How many times each key is registered.
    var uses: [String: Int] = [:]
    /// Each registered key's forms.
    var formsOf: [String: [[UInt8]]] = [:]
    /// How many registered keys have each form in the index.
    var formUses: [[UInt8]: Int] = [:]
    /// Forms of 16 bytes or more by their first 16 bytes, longest first in each bucket.
    var long: [Anchor: [[UInt8]]] = [:]
    /// Forms of 4 to 15 bytes by their first four bytes, longest first in each bucket.
    var medium: [UInt32: [[UInt8]]] = [:]
    /// One bit per two-byte start of a form in `long` or `medium`.
    var starts = [UInt64](repeating: 0, count: 1024)
    /// Forms shorter than four bytes, longest first.
    var short: [[UInt8]] = []

    var isEmpty: Bool { long.isEmpty && medium.isEmpty && short.isEmpty }

    static func head(_ p: UnsafeBufferPointer<UInt8>, _ i: Int) -> UInt32 {
        UInt32(p[i]) << 24 | UInt32(p[i + 1]) << 16 | UInt32(p[i + 2]) << 8 | UInt32(p[i + 3])
    }

    static func anchor(_ p: UnsafeBufferPointer<UInt8>, _ i: Int) -> Anchor {
        let raw = UnsafeRawPointer(p.baseAddress! + i)
        return Anchor(
            high: raw.loadUnaligned(as: UInt64.self), low: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
    }

    /// Adds `form` to `bucket`, keeping it longest first; false when it was there.
    static func add(_ form: [UInt8], to bucket: inout [[UInt8]]) -> Bool {
        guard !bucket.contains(form) else { return false }
        bucket.insert(form, at: bucket.firstIndex { $0.count < form.count } ?? bucket.count)
        return true
    }

    /// One more key has `form`: indexed if it is new.
    mutating func retain(_ form: [UInt8]) {
        formUses[form, default: 0] += 1
        if formUses[form] == 1 { insert(form) }
    }

    /// One key less has `form`: out of the index when none has it. (Its bit in `starts` may stay:
    /// the bitmap only spares lookups.)
    mutating func release(_ form: [UInt8]) {
        guard let count = formUses[form] else { return }
        guard count == 1 else {
            formUses[form] = count - 1
            return
        }
        formUses[form] = nil
        func drop(from bucket: inout [[UInt8]]?) {
            bucket?.removeAll { $0 == form }
            if bucket?.isEmpty == true { bucket = nil }
        }
        if form.count < 4 {
            short.removeAll { $0 == form }
        } else if form.count >= Self.anchorLength {
            let anchor = form.withUnsafeBufferPointer { Self.anchor($0, 0) }
            drop(from: &long[anchor])
        } else {
            let head = form.withUnsafeBufferPointer { Self.head($0, 0) }
            drop(from: &medium[head])
        }
    }

    mutating func insert(_ form: [UInt8]) {
        if form.count < 4 {
            _ = Self.add(form, to: &short)
            return
        }
        let added = form.withUnsafeBufferPointer { f in
            form.count >= Self.anchorLength
                ? Self.add(form, to: &long[Self.anchor(f, 0), default: []])
                : Self.add(form, to: &medium[Self.head(f, 0), default: []])
        }
        guard added else { return }
        let start = Int(form[0]) << 8 | Int(form[1])
        starts[start >> 6] |= 1 << UInt64(start & 63)
    }

    /// The ranges of forms found in `text`, leftmost first, the longest form at each place, none
    /// overlapping.
    func matches(in text: UnsafeBufferPointer<UInt8>) -> [Range<Int>] {
        var found: [Range<Int>] = []
        let n = text.count
        var i = 0
        while i < n {
            var length = 0
            if i + 4 <= n {
                let start = Int(text[i]) << 8 | Int(text[i + 1])
                if starts[start >> 6] & (1 << UInt64(start & 63)) != 0 {
                    if i + Self.anchorLength <= n, let bucket = long[Self.anchor(text, i)] {
                        length = bucket.first { Self.equal($0, text, at: i) }?.count ?? 0
                    }
                    if length == 0, let bucket = medium[Self.head(text, i)] {
                        length = bucket.first { Self.equal($0, text, at: i) }?.count ?? 0
                    }
                }
            }
            if length == 0, !short.isEmpty {
                length = short.first { Self.equal($0, text, at: i) }?.count ?? 0
            }
            if length > 0 {
                found.append(i..<i + length)
                i += length
            } else {
                i += 1
            }
        }
        return found
    }

    static func equal(_ form: [UInt8], _ text: UnsafeBufferPointer<UInt8>, at i: Int) -> Bool {
        guard i + form.count <= text.count else { return false }
        return form.withUnsafeBufferPointer { f in memcmp(f.baseAddress!, text.baseAddress! + i, f.count) == 0 }
    }
}
