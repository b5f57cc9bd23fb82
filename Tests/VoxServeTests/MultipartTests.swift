import Foundation
import Testing

@testable import VoxServe

/// The multipart/form-data reader alone: bodies as clients send them (byte for byte as curl 7.88's
/// `-F` and the OpenAI Python SDK's httpx sent them to a listener), and bodies no client sends.
@Suite struct MultipartTests {
    typealias Part = Multipart.Part

    /// A file's bytes that look like the syntax around them: CRLFs, `--`, a blank line, lines
    /// starting with the boundary but going on (so no delimiter), NUL, bytes that are not UTF-8,
    /// and a CR last, just before the delimiter's own.
    static func trickyFile(_ boundary: String) -> Data {
        Data("RIFF\r\n--x\0\u{1}binary\r\n\r\n--".utf8) + Data([0xFF, 0xFE, 0x0D, 0x0A])
            + Data("--\(boundary)X\r\n--\(boundary) x\r\n--\(boundary)-\r\n--\r".utf8)
    }

    static let curlBoundary = "------------------------ef89d78b10c6a380"

    /// `curl -F file=@a.wav -F model=whisper-1 -F 'prompt=a "quoted"' -F 'response_format=json;type=text/plain'`.
    static func curlBody(file: Data) -> Data {
        let b = curlBoundary
        return Data(
            ("--\(b)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n"
                + "Content-Type: application/octet-stream\r\n\r\n").utf8) + file
            + Data(
                ("\r\n--\(b)\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n"
                    + "--\(b)\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\na \"quoted\"\r\n"
                    + "--\(b)\r\nContent-Disposition: form-data; name=\"response_format\"\r\n"
                    + "Content-Type: text/plain\r\n\r\njson\r\n--\(b)--\r\n").utf8)
    }

    /// The parts of `curlBody(file:)`.
    static func curlParts(file: Data) -> [Part] {
        [
            Part(name: "file", filename: "a.wav", contentType: "application/octet-stream", data: file),
            field("model", "whisper-1"), field("prompt", "a \"quoted\""),
            Part(name: "response_format", filename: nil, contentType: "text/plain", data: Data("json".utf8)),
        ]
    }

    /// The SDK's `audio.transcriptions.create(model:, file:, language: "de", response_format: "json",
    /// timestamp_granularities: ["word", "segment"])`: fields first, the file last.
    static func sdkBody(file: Data) -> Data {
        let b = "e1e7d80d4fc61400d2c4935e5bf0e540"
        var body = ""
        for (name, value) in [
            ("model", "whisper-1"), ("language", "de"), ("response_format", "json"),
            ("timestamp_granularities[]", "word"), ("timestamp_granularities[]", "segment"),
        ] {
            body += "--\(b)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n"
        }
        body += "--\(b)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n"
        body += "Content-Type: audio/x-wav\r\n\r\n"
        return Data(body.utf8) + file + Data("\r\n--\(b)--\r\n".utf8)
    }

    /// A body of `parts` (name, value) with boundary `abc123`, then `epilogue`.
    static func form(_ parts: [(String, String)], preamble: String = "", epilogue: String = "\r\n") -> Data {
        var body = preamble
        for (name, value) in parts {
            body += "--abc123\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n"
        }
        return Data((body + "--abc123--" + epilogue).utf8)
    }

    static func field(_ name: String, _ value: String) -> Part {
        Part(name: name, filename: nil, contentType: nil, data: Data(value.utf8))
    }

    @Test func aCurlFormIsReadFieldByFieldWithTheFileByteForByte() throws {
        let boundary = try #require(Multipart.boundary("multipart/form-data; boundary=\(Self.curlBoundary)"))
        #expect(boundary == Self.curlBoundary)
        let file = Self.trickyFile(boundary)
        #expect(Multipart.parse(Self.curlBody(file: file), boundary: boundary) == Self.curlParts(file: file))
    }

    @Test func anOpenAISDKFormIsReadWithARepeatedFieldTwice() throws {
        let boundary = try #require(
            Multipart.boundary("multipart/form-data; boundary=e1e7d80d4fc61400d2c4935e5bf0e540"))
        let file = Self.trickyFile(boundary)
        let parts = try #require(Multipart.parse(Self.sdkBody(file: file), boundary: boundary))
        #expect(
            parts.map(\.name) == ["model", "language", "response_format"]
                + Array(repeating: "timestamp_granularities[]", count: 2) + ["file"])
        #expect(
            parts.filter { $0.name == "timestamp_granularities[]" }.map(\.data) == [
                Data("word".utf8), Data("segment".utf8),
            ])
        #expect(parts.last == Part(name: "file", filename: "a.wav", contentType: "audio/x-wav", data: file))
    }

    @Test func aQuotedBoundaryIsReadWithoutItsQuotesAndTheParameterInAnyCase() throws {
        #expect(Multipart.boundary(#"multipart/form-data; boundary="a b:c=d?""#) == "a b:c=d?")
        #expect(Multipart.boundary(#"Multipart/Form-Data;charset=utf-8;  BOUNDARY = "x y" ; z=1"#) == "x y")
        #expect(Multipart.boundary("multipart/form-data; charset=utf-8; BOUNDARY=abc123") == "abc123")
        let body = Data("--a b:c=d?\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\nv\r\n--a b:c=d?--".utf8)
        #expect(Multipart.parse(body, boundary: "a b:c=d?") == [Self.field("n", "v")])
    }

    @Test func aBoundaryRFC2046DoesNotAllowIsRefused() {
        let seventy = String(repeating: "b", count: 70)
        #expect(Multipart.boundary("multipart/form-data; boundary=\(seventy)") == seventy)
        for type in [
            "multipart/form-data", "multipart/form-data; boundary=", #"multipart/form-data; boundary="""#,
            "multipart/form-data; boundary=\(seventy)b", #"multipart/form-data; boundary="ab ""#,
            "multipart/form-data; boundary=a\rb", "multipart/form-data; boundary=a\"b",
            "multipart/form-data; boundary=ab; boundary=ab", #"multipart/form-data; boundary="ab"#,
            "multipart/form-data; boundary=é", "multipart/form-data; boundary",
        ] {
            #expect(Multipart.boundary(type) == nil, "\(type.debugDescription)")
        }
        #expect(Multipart.parse(Self.form([("a", "1")]), boundary: "abc123\r\n") == nil)
        #expect(Multipart.parse(Data("--\r\n\r\nx\r\n----".utf8), boundary: "") == nil)
    }

    @Test func aBodyWithoutItsFinalDelimiterIsNil() {
        let whole = Self.form([("a", "1"), ("b", "2")])
        #expect(Multipart.parse(whole, boundary: "abc123") == [Self.field("a", "1"), Self.field("b", "2")])
        let open = String(decoding: whole, as: UTF8.self).replacingOccurrences(of: "--abc123--", with: "--abc123\r\n")
        for body in [
            open, "--abc123--", "", "no delimiter at all",
            // The final delimiter goes on after its `--` (it is the file's bytes then).
            String(decoding: whole, as: UTF8.self).replacingOccurrences(of: "--abc123--", with: "--abc123--x"),
        ] {
            let parts = Multipart.parse(Data(body.utf8), boundary: "abc123")
            #expect(parts == (body == "--abc123--" ? [] : nil), "\(body.debugDescription)")
        }
    }

    @Test func aPreambleAndAnEpilogueAreIgnored() {
        let body = Self.form(
            [("a", "1")], preamble: "This is a preamble.\r\n--abc123X is not a delimiter\r\n",
            epilogue: " \t\r\nAn epilogue\r\n--abc123\r\nContent-Disposition: form-data; name=\"b\"\r\n\r\n2\r\n")
        #expect(Multipart.parse(body, boundary: "abc123") == [Self.field("a", "1")])
        // Transport padding after a delimiter is no part of the next part's headers.
        let padded = Data("--abc123 \t\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--abc123-- ".utf8)
        #expect(Multipart.parse(padded, boundary: "abc123") == [Self.field("a", "1")])
    }

    @Test func headerNamesAndDispositionTypeAreReadInAnyCase() {
        let body = Data(
            ("--abc123\r\ncontent-type: text/plain\r\nCONTENT-DISPOSITION:Form-Data; NAME=\"a\"; FileName=x.txt\r\n"
                + "\r\n1\r\n--abc123--").utf8)
        #expect(
            Multipart.parse(body, boundary: "abc123")
                == [Part(name: "a", filename: "x.txt", contentType: "text/plain", data: Data("1".utf8))])
    }

    @Test func aPartWithoutAFormDataNameIsSkipped() {
        let body = Data(
            ("--abc123\r\nContent-Type: text/plain\r\n\r\nno disposition\r\n"
                + "--abc123\r\n\r\nno headers\r\n"
                + "--abc123\r\nContent-Disposition: attachment; name=\"x\"\r\n\r\nnot form-data\r\n"
                + "--abc123\r\nContent-Disposition: form-data; filename=\"f\"\r\n\r\nno name\r\n"
                + "--abc123\r\nContent-Disposition: form-data; name=\"kept\"\r\n\r\nyes\r\n--abc123--").utf8)
        #expect(Multipart.parse(body, boundary: "abc123") == [Self.field("kept", "yes")])
    }

    @Test func aQuotedNameOrFilenameMayHoldSemicolonsEscapedQuotesAndBackslashes() {
        // httpx writes `"` as %22 and `\` as `\\`; curl writes `"` as %22; RFC 9110 quoting, `\"`.
        let body = Data(
            ("--abc123\r\nContent-Disposition: form-data; name=\"a;b\"; filename=\"c\\\"d; e\\\\.wav\"\r\n\r\n1\r\n"
                + "--abc123\r\nContent-Disposition: form-data; name = \"na%22me;x\" ; filename=\"\"\r\n\r\n2\r\n"
                + "--abc123--").utf8)
        #expect(
            Multipart.parse(body, boundary: "abc123") == [
                Part(name: "a;b", filename: "c\"d; e\\.wav", contentType: nil, data: Data("1".utf8)),
                Part(name: "na%22me;x", filename: "", contentType: nil, data: Data("2".utf8)),
            ])
    }

    @Test func headersThatAreNotNameValueLinesOrComeTwiceMakeTheBodyNil() {
        for headers in [
            "Content-Disposition: form-data; name=\"a\"\r\nno colon",
            "Content-Disposition: form-data;\r\n name=\"a\"",
            "Content-Disposition : form-data; name=\"a\"",
            "Content-Disposition: form-data; name=\"a\"\r\nContent-Disposition: form-data; name=\"b\"",
            "Content-Disposition: form-data; name=\"a\"\r\nContent-Type: a/b\r\ncontent-type: c/d",
        ] {
            let body = Data("--abc123\r\n\(headers)\r\n\r\n1\r\n--abc123--".utf8)
            #expect(Multipart.parse(body, boundary: "abc123") == nil, "\(headers.debugDescription)")
        }
        // An unterminated quote makes the disposition unreadable: the part has no name.
        let body = Data("--abc123\r\nContent-Disposition: form-data; name=\"a\r\n\r\n1\r\n--abc123--".utf8)
        #expect(Multipart.parse(body, boundary: "abc123") == [])
    }

    @Test func aBodyWithBareLineFeedsIsNotRead() {
        let body = Data("--abc123\nContent-Disposition: form-data; name=\"a\"\n\n1\n--abc123--\n".utf8)
        #expect(Multipart.parse(body, boundary: "abc123") == nil)
    }

    @Test func headersRunningIntoTheNextDelimiterAreNotTheNextPartsHeaders() {
        // The first part has no blank line; the second's name must not become the first's.
        let body = Data(
            ("--a:b\r\nX: 1\r\n--a:b\r\nContent-Disposition: form-data; name=\"second\"\r\n\r\n2\r\n--a:b--").utf8)
        #expect(Multipart.parse(body, boundary: "a:b") == nil)
    }

    @Test func atMostMaxPartsAreRead() {
        let fields = (0..<Multipart.maxParts).map { ("f\($0)", "\($0)") }
        #expect(Multipart.parse(Self.form(fields), boundary: "abc123")?.count == Multipart.maxParts)
        #expect(Multipart.parse(Self.form(fields + [("one", "more")]), boundary: "abc123") == nil)
        // Skipped parts count too: each costs the same work.
        let skipped = Data(
            (String(repeating: "--abc123\r\n\r\nx\r\n", count: Multipart.maxParts) + "--abc123--").utf8)
        #expect(Multipart.parse(skipped, boundary: "abc123") == [])
        #expect(Multipart.parse(Data("--abc123\r\n\r\nx\r\n".utf8) + skipped, boundary: "abc123") == nil)
    }

    @Test func headersOfMoreThanMaxHeaderBytesMakeTheBodyNil() {
        func body(headerBytes: Int) -> Data {
            let disposition = "Content-Disposition: form-data; name=\"a\"\r\nX-Pad: "
            let pad = String(repeating: "p", count: headerBytes - disposition.utf8.count)
            return Data("--abc123\r\n\(disposition)\(pad)\r\n\r\n1\r\n--abc123--".utf8)
        }
        #expect(Multipart.parse(body(headerBytes: Multipart.maxHeaderBytes - 4), boundary: "abc123")?.count == 1)
        #expect(Multipart.parse(body(headerBytes: Multipart.maxHeaderBytes - 3), boundary: "abc123") == nil)
        #expect(Multipart.parse(body(headerBytes: 1 << 20), boundary: "abc123") == nil)
    }

    /// Every prefix of a small valid body: no crash, and nil until the final delimiter is in,
    /// then the whole body's parts (no part's data ever runs past its delimiter).
    @Test func aBodyCutAtAnyByteIsNilOrItsWholeParts() throws {
        let file = Self.trickyFile(Self.curlBoundary)
        let body = Self.curlBody(file: file)
        let whole = Self.curlParts(file: file)
        // The final delimiter ends the body, or a CRLF after it does (a lone CR is neither).
        let closed = try #require(body.range(of: Data("--\(Self.curlBoundary)--".utf8))).upperBound
        #expect(body.count == closed + 2)
        for length in 0...body.count {
            let parts = Multipart.parse(body.prefix(length), boundary: Self.curlBoundary)
            #expect(parts == (length == closed || length == closed + 2 ? whole : nil), "\(length) bytes")
        }
        // A slice that does not start at index 0 reads the same.
        #expect(Multipart.parse((Data("xx".utf8) + body).dropFirst(2), boundary: Self.curlBoundary) == whole)
    }
}
