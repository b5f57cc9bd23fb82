import Foundation
import VoxCore
import VoxDecode
import VoxServe

// Targets over what `voxpipe serve` reads from a request before anything is decoded (issue 36):
// the multipart body of an OpenAI transcription request, and the MP4 boxes of the file in it.

/// 12. `multipart`: a request to `/v1/audio/transcriptions`, its first line the Content-Type
/// and the rest its body, read as serve reads them (`Multipart.boundary`, `Multipart.parse`).
/// The parts must hold together: at most `maxParts`, each one's bytes in the body in order, and
/// none holding a delimiter line (`CRLF --B`, then `--` or not, spaces or tabs, and CRLF or the
/// end of its bytes: the parser must have stopped there).
struct MultipartTarget: FuzzTarget {
    func run(_ data: Data) throws {
        let newline = data.firstIndex(of: UInt8(ascii: "\n")) ?? data.endIndex
        let contentType = String(decoding: data[..<newline], as: UTF8.self)
        let body = newline < data.endIndex ? data[(newline + 1)...] : Data()
        guard let boundary = Multipart.boundary(contentType), let parts = Multipart.parse(body, boundary: boundary)
        else { return }
        guard parts.count <= Multipart.maxParts else {
            throw VoxError(.internal, "\(parts.count) parts: more than \(Multipart.maxParts)")
        }
        let delimiter = Data("\r\n--\(boundary)".utf8)
        var cursor = body.startIndex
        for (index, part) in parts.enumerated() {
            guard
                let found = part.data.isEmpty ? cursor..<cursor : body.range(of: part.data, in: cursor..<body.endIndex)
            else {
                throw VoxError(
                    .internal, "part \(index) (\(part.name)): its bytes are not in the body after the part before")
            }
            cursor = found.upperBound
            var from = part.data.startIndex
            while let match = part.data.range(of: delimiter, in: from..<part.data.endIndex) {
                var rest = part.data[match.upperBound...]
                if rest.starts(with: Data("--".utf8)) { rest = rest.dropFirst(2) }
                rest = rest.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
                if rest.isEmpty || rest.starts(with: Data("\r\n".utf8)) {
                    throw VoxError(.internal, "part \(index) (\(part.name)): its bytes run past a delimiter")
                }
                from = match.upperBound
            }
        }
    }
}

/// 13. `mp4`: the bytes are an uploaded file whose length serve's `--max-clip` check and
/// ffmpeg's decoding read from its MP4 boxes (`MP4Header.seconds`): none, or a positive finite
/// number of seconds.
struct MP4Target: FuzzTarget {
    let workspace: URL

    func run(_ data: Data) throws {
        let url = workspace.appendingPathComponent("upload.m4a")
        try data.write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        guard let seconds = MP4Header.seconds(url) else { return }
        guard seconds.isFinite, seconds > 0 else { throw VoxError(.internal, "MP4Header.seconds gave \(seconds) s") }
    }
}
