import Foundation
import Synchronization
import VoxTesting

#if canImport(Glibc)
import Glibc
#endif

/// A TCP connection to 127.0.0.1 that sends exactly the bytes a test gives it, when it gives
/// them, as a slow or hostile client would (a trickled head, a half-sent body, a client that goes
/// away mid-request), and reads what the server answers. Blocking, with a receive timeout so a
/// server that never answers fails the test instead of hanging it.
public final class RawConnection: Sendable {
    private let fd: Int32
    private let closed = Atomic<Bool>(false)

    public init(port: Int, receiveTimeout seconds: Int = 120) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: errno \(errno)") }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            _ = Glibc.close(fd)
            throw HarnessError("connect: errno \(errno)")
        }
    }

    deinit { close() }

    /// Closes the connection (once): the client goes away.
    public func close() {
        if !closed.exchange(true, ordering: .relaxed) { _ = Glibc.close(fd) }
    }

    /// A JSON POST of `body`, announced as `length` bytes (its own length unless given).
    public func post(_ path: String, _ body: String, length: Int? = nil) throws {
        guard
            send(
                "POST \(path) HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(length ?? body.utf8.count)\r\n\r\n\(body)")
        else { throw HarnessError("send: errno \(errno)") }
    }

    /// The answer's status line and headers, read up to the blank line.
    public func receiveHead() throws -> String {
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while !(received.count >= 4 && received.suffix(4).elementsEqual("\r\n\r\n".utf8)) {
            guard recv(fd, &byte, 1, 0) == 1 else {
                throw HarnessError("no answer (errno \(errno)) after \(String(decoding: received, as: UTF8.self))")
            }
            received.append(byte)
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Sends the bytes; false when the server has closed the connection.
    @discardableResult
    public func send(_ text: String) -> Bool { send(Data(text.utf8)) }

    @discardableResult
    public func send(_ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                if n <= 0 { return false }
                sent += n
            }
            return true
        }
    }

    /// What the server sends until it closes the connection (or the timeout passes: then nil).
    public func readToClose() -> String? {
        var all = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return String(decoding: all, as: UTF8.self) }
            if n < 0 { return errno == ECONNRESET ? String(decoding: all, as: UTF8.self) : nil }
            all.append(contentsOf: buffer[0..<n])
        }
    }

    /// One answer's head and body (by its Content-Length), or nil on timeout or close.
    public func readAnswer() -> (status: Int, head: String, body: String)? {
        var all = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if let end = all.range(of: Data("\r\n\r\n".utf8)) {
                let head = String(decoding: all[..<end.lowerBound], as: UTF8.self)
                let length =
                    head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if all.count - end.upperBound >= length {
                    let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
                    let body = String(decoding: all[end.upperBound..<end.upperBound + length], as: UTF8.self)
                    return (status, head, body)
                }
            }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return nil }
            all.append(contentsOf: buffer[0..<n])
        }
    }
}
