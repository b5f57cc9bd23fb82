import Foundation
import Logging
import VoxCore

/// What every OpenAI-compatible provider shares: the client, the check at prepare, and request
/// bodies built deterministically (sorted JSON keys, a content-derived multipart boundary), so
/// that a recorded run replays exactly.
public struct OpenAIConnection: Sendable {
    public let client: HTTPClient
    let logger: Logger

    /// The transport and clock come from the stage's context (libcurl and the system clock in a run).
    public init(settings: HTTPSettings, context: StageContext) throws {
        // A replayed run sends nothing, so it needs no key.
        var key: String?
        if case .replay = context.recording {} else { key = try settings.apiKey(secrets: context.secrets) }
        logger = context.logger
        client = HTTPClient(
            settings: settings, apiKey: key, recording: context.recording, transport: context.httpTransport,
            clock: context.clock, secrets: context.secrets)
    }

    /// `GET {baseURL}/{probe}` (`models` unless the provider names another path or none): the
    /// server answers and does not refuse the key, or exit 69 with why. Many OpenAI-compatible
    /// servers have no `/models` route (faster-whisper-server, whisper.cpp's server): a 404 or 405
    /// there only means the first real request checks instead. Refused keys (401/403), connection,
    /// DNS and TLS errors stay exit 69.
    public func prepare(provider: String) async throws {
        guard let probe = client.settings.probe else { return }
        do {
            _ = try await client.send(HTTPRequest(method: "GET", url: client.url(probe)))
        } catch let error as HTTPError where error.code == .status(404) || error.code == .status(405) {
            logger.debug(
                "\(provider) at \(client.settings.baseURL): no /\(probe) route; checked by the first request instead")
        } catch let error as HTTPError {
            let refused = error.code == .status(401) || error.code == .status(403)
            let hint =
                refused ? "; the key was refused: set \(client.settings.apiKeyEnv) (or apiKeyFile) to a valid key" : ""
            throw VoxError(.unavailable, "\(provider) at \(client.settings.baseURL): \(error.message)\(hint)")
        }
    }

    public func postJSON(_ path: String, _ body: [String: Any]) async throws -> HTTPResponse {
        try await post(
            path,
            json: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes]))
    }

    /// A JSON POST of a `JSONValue` body (canonical: sorted keys), as recordings need.
    public func postJSON(_ path: String, _ body: JSONValue) async throws -> HTTPResponse {
        try await post(path, json: body.canonicalData())
    }

    func post(_ path: String, json data: Data) async throws -> HTTPResponse {
        try await client.send(
            HTTPRequest(
                method: "POST", url: client.url(path), headers: [("Content-Type", "application/json")], body: data))
    }

    /// A `multipart/form-data` POST: text fields, then one file.
    public func postMultipart(
        _ path: String, fields: [(String, String)], fileField: String, fileName: String, contentType: String, file: Data
    ) async throws -> HTTPResponse {
        let seed = Digest(.sha256)
        for (name, value) in fields { seed.update(Data("\(name)=\(value)\n".utf8)) }
        seed.update(file)
        let boundary = "voxpipe-" + seed.finalizeHex().prefix(32)
        var body = Data()
        for (name, value) in fields {
            body.append(
                Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8))
        }
        let fileHeader =
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(fileField)\"; "
            + "filename=\"\(fileName)\"\r\nContent-Type: \(contentType)\r\n\r\n"
        body.append(Data(fileHeader.utf8))
        body.append(file)
        body.append(Data("\r\n--\(boundary)--\r\n".utf8))
        return try await client.send(
            HTTPRequest(
                method: "POST", url: client.url(path),
                headers: [("Content-Type", "multipart/form-data; boundary=\(boundary)")], body: body))
    }

    /// The body as a JSON object, or an error naming what came back.
    public static func object(_ response: HTTPResponse) throws -> [String: Any] {
        guard let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any] else {
            let start = String(decoding: response.body.prefix(80), as: UTF8.self)
            throw HTTPError(
                .invalidResponse, "the server's answer is not a JSON object: \(start.isEmpty ? "(empty)" : start)")
        }
        return object
    }
}
