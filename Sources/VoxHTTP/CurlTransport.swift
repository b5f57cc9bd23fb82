internal import CCurl
import Foundation
import VoxCore

/// Why an exchange failed.
public typealias HTTPError = ModuleError<HTTPFailure>

public enum HTTPFailure: FailureCode {
    /// Could not connect, or the connection broke (retried).
    case connection
    /// Timed out, or stalled below the low-speed limit (retried).
    case timeout
    /// The server answered with an error status.
    case status(Int)
    /// The account has no quota left (never retried).
    case quota
    /// The answer was not what the API defines.
    case invalidResponse
    /// `--http-replay` has no recording of this request.
    case notRecorded
    /// A request voxpipe will not send (a header holding a line break).
    case invalidRequest

    /// A server that cannot be reached or will not serve (a refused key, a missing route, a rate
    /// limit, a 5xx) is unavailable: exit 69 at prepare, 503 in serve. An answer that breaks the
    /// API, or another refusal of the request, is the provider's failure on the item that asked
    /// (`upstream`: that item fails, and serve answers 502, never the client's 4xx). Only a request
    /// voxpipe will not send is bad input.
    public var category: VoxFailure {
        switch self {
        case .connection, .timeout, .quota, .notRecorded: .unavailable
        case .status(let code): [401, 403, 404, 408, 429].contains(code) || code >= 500 ? .unavailable : .upstream
        case .invalidResponse: .upstream
        case .invalidRequest: .badInput
        }
    }
}

/// Performs exchanges with libcurl. A blocking call, so it runs on a thread of its own rather
/// than one of Swift's cooperative ones. Easy handles are pooled and reused, so connections to
/// the server stay open between requests (keep-alive). Public for clients of voxpipe's own
/// servers (the `voxpipe serve` tests).
public final class CurlTransport: HTTPTransport, @unchecked Sendable {
    static let initialized: Bool = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK }()

    private let lock = NSLock()
    private var idle: [UnsafeMutableRawPointer] = []

    public init() {}

    deinit { for handle in idle { curl_easy_cleanup(handle) } }

    private func take() -> UnsafeMutableRawPointer? {
        if let handle = lock.withLock({ idle.popLast() }) {
            curl_easy_reset(handle)
            return handle
        }
        return curl_easy_init()
    }

    private func giveBack(_ handle: UnsafeMutableRawPointer) { lock.withLock { idle.append(handle) } }

    /// Runs the transfer on a thread of its own (never the cooperative pool); a cancelled task's
    /// transfer is aborted within about a second (libcurl asks its progress callback that often)
    /// and throws `CancellationError`.
    public func perform(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await BlockingExecutor().run { job in try self.performBlocking(request, job: job) }
    }

    final class Sink {
        var body = Data()
        var headers: [String: String] = [:]
        /// The work the transfer is part of: once it is cancelled, the progress callback aborts.
        let job: BlockingJob?

        init(job: BlockingJob?) { self.job = job }
    }

    func performBlocking(_ request: HTTPRequest, job: BlockingJob? = nil) throws -> HTTPResponse {
        _ = Self.initialized
        guard let handle = take() else { throw HTTPError(.connection, "libcurl could not start a transfer") }
        defer { giveBack(handle) }
        let sink = Sink(job: job)
        let context = Unmanaged.passRetained(sink)
        defer { context.release() }
        var list: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(list) }
        for (name, value) in request.headers { list = curl_slist_append(list, "\(name): \(value)") }
        // No "Expect: 100-continue" round trip before uploads.
        list = curl_slist_append(list, "Expect:")

        vox_curl_setopt_string(handle, CURLOPT_URL, request.url)
        vox_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method)
        vox_curl_setopt_ptr(handle, CURLOPT_HTTPHEADER, list)
        vox_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        vox_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(request.connectTimeout * 1000))
        vox_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int(request.timeout * 1000))
        vox_curl_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, request.lowSpeedBytes)
        vox_curl_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, request.lowSpeedSeconds)
        vox_curl_setopt_long(handle, CURLOPT_ACCEPT_ENCODING, 0)
        vox_curl_setopt_ptr(handle, CURLOPT_WRITEDATA, context.toOpaque())
        vox_curl_setopt_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, user in
            guard let data, let user else { return 0 }
            Unmanaged<Sink>.fromOpaque(user).takeUnretainedValue().body.append(
                UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: size * count)
            return size * count
        }
        vox_curl_setopt_long(handle, CURLOPT_NOPROGRESS, 0)
        vox_curl_setopt_ptr(handle, CURLOPT_XFERINFODATA, context.toOpaque())
        vox_curl_setopt_progress(handle) { user, _, _, _, _ in
            guard let user else { return 0 }
            return Unmanaged<Sink>.fromOpaque(user).takeUnretainedValue().job?.isCancelled == true ? 1 : 0
        }
        vox_curl_setopt_ptr(handle, CURLOPT_HEADERDATA, context.toOpaque())
        vox_curl_setopt_callback(handle, CURLOPT_HEADERFUNCTION) { data, size, count, user in
            guard let data, let user else { return 0 }
            let line = String(decoding: UnsafeRawBufferPointer(start: data, count: size * count), as: UTF8.self)
            if let colon = line.firstIndex(of: ":") {
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
                Unmanaged<Sink>.fromOpaque(user).takeUnretainedValue().headers[name] = value
            }
            return size * count
        }
        let code: CURLcode = request.body.withUnsafeBytes { body in
            if request.method != "GET" {
                if let base = body.baseAddress {
                    vox_curl_setopt_ptr(handle, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: base))
                } else {
                    vox_curl_setopt_string(handle, CURLOPT_POSTFIELDS, "")
                }
                vox_curl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            }
            return curl_easy_perform(handle)
        }
        guard code == CURLE_OK else {
            if code == CURLE_ABORTED_BY_CALLBACK { throw CancellationError() }
            let message = String(cString: curl_easy_strerror(code))
            switch code {
            case CURLE_OPERATION_TIMEDOUT: throw HTTPError(.timeout, "timed out or stalled (\(message))")
            default: throw HTTPError(.connection, message)
            }
        }
        return HTTPResponse(status: vox_curl_response_code(handle), headers: sink.headers, body: sink.body)
    }
}
