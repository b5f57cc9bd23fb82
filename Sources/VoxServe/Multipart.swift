import Foundation

/// multipart/form-data (RFC 7578, in RFC 2046's multipart syntax) as OpenAI's SDKs (httpx), curl -F
/// and browsers send it: a body in, its parts out (field name, file name, content type, bytes).
///
///     [preamble CRLF] --B pad CRLF part { CRLF --B pad CRLF part } CRLF --B-- pad [CRLF epilogue]
///     part = headers CRLF CRLF data  |  CRLF data      (pad: spaces and tabs)
///
/// A body from outside is data, not trusted: one this does not read is nil, never a crash. The
/// work is linear in the body's size (each byte is looked at a bounded number of times) and
/// bounded per part (`maxParts`, `maxHeaderBytes`), so a hostile body costs what its size does.
public enum Multipart {
    /// One part of a form: a field, or a file when it has a file name.
    public struct Part: Equatable, Sendable {
        /// The form field's name (Content-Disposition's `name`).
        public var name: String
        /// The uploaded file's name (Content-Disposition's `filename`), when the part is a file.
        public var filename: String?
        /// The part's Content-Type, when it states one (`audio/wav`).
        public var contentType: String?
        /// The part's bytes: everything between its headers' blank line and the next delimiter.
        public var data: Data
    }

    /// The most parts a body may have, skipped ones included (an OpenAI transcription form has about ten).
    public static let maxParts = 64
    /// The most bytes a part's headers may take, the CRLFs ending them included.
    public static let maxHeaderBytes = 8 * 1024
    /// RFC 2046: a boundary is 1 to 70 characters.
    public static let maxBoundaryLength = 70

    /// The boundary a multipart Content-Type names: `boundary=B` or `boundary="B"`, the parameter's
    /// name in any case. Nil when it names none or two, or one RFC 2046 does not allow (1 to 70 of
    /// its characters — letters, digits, `'()+_,-./:=?` and spaces — not ending in a space).
    public static func boundary(_ contentType: String) -> String? {
        guard let (_, parameters) = HeaderValue.split(contentType) else { return nil }
        let boundaries = parameters.filter { $0.name == "boundary" }
        guard boundaries.count == 1, let value = boundaries.first?.value, isValid(boundary: value) else { return nil }
        return value
    }

    /// The boundary characters that are not letters or digits (RFC 2046's `bchars`).
    static let punctuation = Set("'()+_,-./:=? ".utf8)

    /// Whether RFC 2046 allows `boundary` (its `bchars`, 1 to 70, the last not a space).
    static func isValid(boundary: String) -> Bool {
        let bytes = Array(boundary.utf8)
        guard (1...maxBoundaryLength).contains(bytes.count), bytes.last != UInt8(ascii: " ") else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "A")...UInt8(ascii: "Z"):
                true
            default: punctuation.contains(byte)
            }
        }
    }

    /// The form-data parts of a multipart body with that boundary, in order. A preamble before the
    /// first delimiter and an epilogue after the last are ignored, and so is a part with no
    /// Content-Disposition `form-data` naming it. Nil when the body is not multipart with that
    /// boundary: no first or no final delimiter, a part's headers without their blank line within
    /// `maxHeaderBytes` or not `Name: value` lines, a header stated twice, more than `maxParts` parts.
    public static func parse(_ body: Data, boundary: String) -> [Part]? {
        guard isValid(boundary: boundary) else { return nil }
        return body.withUnsafeBytes { bytes -> [Part]? in
            let scanner = Scanner(bytes: bytes, dashBoundary: Array("--\(boundary)".utf8))
            guard var delimiter = scanner.firstDelimiter() else { return nil }
            var parts: [Part] = []
            var count = 0
            while case .open(let partStart) = delimiter {
                count += 1
                guard count <= maxParts, let (headers, dataStart) = scanner.headers(from: partStart),
                    let fields = PartHeaders(Array(bytes[headers])),
                    let (dataEnd, next) = scanner.nextDelimiter(from: dataStart)
                else { return nil }
                if let name = fields.name {
                    let data = body[(body.startIndex + dataStart)..<(body.startIndex + dataEnd)]
                    parts.append(
                        Part(name: name, filename: fields.filename, contentType: fields.contentType, data: Data(data)))
                }
                delimiter = next
            }
            return parts
        }
    }

    /// What a delimiter line opens: a part (at the offset after the line's CRLF) or the end.
    enum Delimiter: Equatable {
        case open(partStart: Int)
        case close
    }

    /// Finds delimiter lines and header blocks in a body's bytes, by offset.
    struct Scanner {
        static let cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")

        let bytes: UnsafeRawBufferPointer
        /// `--` and the boundary.
        let dashBoundary: [UInt8]
        /// A delimiter: CRLF, `--` and the boundary. Its only CR is its first byte (a valid
        /// boundary has none), which is what keeps `nextDelimiter` linear.
        let delimiter: [UInt8]

        init(bytes: UnsafeRawBufferPointer, dashBoundary: [UInt8]) {
            self.bytes = bytes
            self.dashBoundary = dashBoundary
            delimiter = [Self.cr, Self.lf] + dashBoundary
        }

        /// Whether `pattern` is at `offset`.
        func has(_ pattern: [UInt8], at offset: Int) -> Bool {
            guard offset >= 0, bytes.count - offset >= pattern.count else { return false }
            return pattern.indices.allSatisfy { bytes[offset + $0] == pattern[$0] }
        }

        /// The first delimiter: `--B` opening the body, else the first after a preamble.
        func firstDelimiter() -> Delimiter? {
            if has(dashBoundary, at: 0), let line = line(after: dashBoundary.count) { return line }
            return nextDelimiter(from: 0)?.line
        }

        /// What the rest of a line after `--B` makes it: `--` then padding to CRLF or the body's
        /// end closes; padding then CRLF opens a part; anything else is no delimiter (the bytes
        /// are a part's data).
        func line(after start: Int) -> Delimiter? {
            var at = start
            let closes = has(Array("--".utf8), at: at)
            if closes { at += 2 }
            while at < bytes.count, bytes[at] == UInt8(ascii: " ") || bytes[at] == UInt8(ascii: "\t") { at += 1 }
            if closes && at == bytes.count { return .close }
            guard has([Self.cr, Self.lf], at: at) else { return nil }
            return closes ? .close : .open(partStart: at + 2)
        }

        /// The first delimiter line at or after `start`: where the data before it ends (its CRLF)
        /// and what it opens. Nil when there is none.
        func nextDelimiter(from start: Int) -> (end: Int, line: Delimiter)? {
            var at = max(start, 0)
            while bytes.count - at >= delimiter.count {
                guard bytes[at] == Self.cr else {
                    at += 1
                    continue
                }
                var matched = 1
                while matched < delimiter.count, bytes[at + matched] == delimiter[matched] { matched += 1 }
                if matched == delimiter.count, let line = line(after: at + matched) { return (at, line) }
                // No delimiter starts inside the bytes just matched (none of them is a CR): go on
                // from the first that did not match, so each byte is looked at at most twice.
                at += matched
            }
            return nil
        }

        /// A part's header block from `start` (the bytes before its blank line) and where its
        /// data starts. Nil when the blank line is not within `maxHeaderBytes`, or a delimiter
        /// comes first (the part has no blank line, and the next part's headers are not its own).
        func headers(from start: Int) -> (block: Range<Int>, dataStart: Int)? {
            if has([Self.cr, Self.lf], at: start) { return (start..<start, start + 2) }
            let end = min(bytes.count, start + maxHeaderBytes)
            var at = start
            while end - at >= 4 {
                if bytes[at] == Self.cr {
                    if has([Self.cr, Self.lf, Self.cr, Self.lf], at: at) { return (start..<at, at + 4) }
                    if has(delimiter, at: at) { return nil }
                }
                at += 1
            }
            return nil
        }
    }
}

/// The headers of one part that form-data reads: Content-Disposition's name and file name, and
/// Content-Type; other headers (Content-Transfer-Encoding and such) are passed over.
struct PartHeaders {
    /// Nil when the part does not say it is form-data with a name: it is skipped.
    var name: String?
    var filename: String?
    var contentType: String?

    /// From a header block: `Name: value` lines joined by CRLF, each name a token (RFC 9110) read
    /// in any case. Nil when a line is not such a header (a folded line is not: it starts with a
    /// space), or Content-Disposition or Content-Type comes twice.
    init?(_ block: [UInt8]) {
        var disposition: String?
        var contentType: String?
        var start = 0
        while start < block.count {
            var end = start
            while end < block.count,
                !(block[end] == Multipart.Scanner.cr && end + 1 < block.count
                    && block[end + 1] == Multipart.Scanner.lf)
            { end += 1 }
            let line = block[start..<end]
            start = end + 2
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
                line[..<colon].allSatisfy(HeaderValue.isTokenByte)
            else { return nil }
            let value = HeaderValue.trimmed(line[(colon + 1)...])
            switch HeaderValue.lowercased(line[..<colon]) {
            case "content-disposition":
                guard disposition == nil else { return nil }
                disposition = value
            case "content-type":
                guard contentType == nil else { return nil }
                contentType = value
            default: continue
            }
        }
        self.contentType = contentType
        guard let disposition, let (type, parameters) = HeaderValue.split(disposition), type == "form-data" else {
            return
        }
        name = parameters.first { $0.name == "name" }?.value
        filename = parameters.first { $0.name == "filename" }?.value
    }
}

/// A header value with parameters (`type; name=token; name="quoted \"string\""`, RFC 9110 §5.6.6).
enum HeaderValue {
    static let semicolon = UInt8(ascii: ";"), equals = UInt8(ascii: "="), quote = UInt8(ascii: "\"")

    /// The value before its first `;`, trimmed and in lower case, and its parameters in order,
    /// names in lower case; a quoted value may hold `;`, and `\` escapes its next byte. Nil when a
    /// parameter has no `=` or no name, or a quoted value no closing quote or bytes after it.
    static func split(_ header: String) -> (value: String, parameters: [(name: String, value: String)])? {
        let bytes = Array(header.utf8)
        var at = bytes.firstIndex(of: semicolon) ?? bytes.endIndex
        let value = lowercased(trimmed(bytes[..<at]).utf8)
        var parameters: [(name: String, value: String)] = []
        func skipSpaces() { while at < bytes.endIndex, isSpace(bytes[at]) { at += 1 } }
        // At each turn `at` is on a `;` or at the end.
        while at < bytes.endIndex {
            at += 1
            skipSpaces()
            if at == bytes.endIndex { break }
            if bytes[at] == semicolon { continue }
            let nameStart = at
            while at < bytes.endIndex, bytes[at] != equals, bytes[at] != semicolon { at += 1 }
            guard at < bytes.endIndex, bytes[at] == equals else { return nil }
            let name = lowercased(trimmed(bytes[nameStart..<at]).utf8)
            guard !name.isEmpty else { return nil }
            at += 1
            skipSpaces()
            if at < bytes.endIndex, bytes[at] == quote {
                var quoted: [UInt8] = []
                var closed = false
                at += 1
                while at < bytes.endIndex, !closed {
                    if bytes[at] == UInt8(ascii: "\\"), at + 1 < bytes.endIndex {
                        quoted.append(bytes[at + 1])
                        at += 2
                    } else {
                        closed = bytes[at] == quote
                        if !closed { quoted.append(bytes[at]) }
                        at += 1
                    }
                }
                skipSpaces()
                guard closed, at == bytes.endIndex || bytes[at] == semicolon else { return nil }
                parameters.append((name, String(decoding: quoted, as: UTF8.self)))
            } else {
                let valueStart = at
                while at < bytes.endIndex, bytes[at] != semicolon { at += 1 }
                parameters.append((name, trimmed(bytes[valueStart..<at])))
            }
        }
        return (value, parameters)
    }

    static func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

    /// The bytes as text without the spaces and tabs around them.
    static func trimmed(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.drop(while: isSpace).reversed().drop(while: isSpace).reversed(), as: UTF8.self)
    }

    /// ASCII letters in lower case, every other byte as it is (so no other letter becomes ASCII).
    static func lowercased(_ bytes: some Sequence<UInt8>) -> String {
        String(decoding: bytes.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// The bytes of an RFC 9110 token (a header's name) that are not letters or digits.
    static let tokenPunctuation = Set("!#$%&'*+-.^_`|~".utf8)

    /// A byte of an RFC 9110 token.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        default: tokenPunctuation.contains(byte)
        }
    }
}
