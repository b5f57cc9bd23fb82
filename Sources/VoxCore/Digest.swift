internal import CCrypto
import Foundation
import Synchronization

/// SHA-256 and SHA-512 over OpenSSL's libcrypto (which uses the CPU's SHA instructions where
/// there are any: about 1.8 GB/s here, seven times a portable implementation). Item keys,
/// artifact hashes and evidence manifests all hash whole audio files, so this is on the hot path.
public final class Digest {
    public enum Algorithm: String, Sendable {
        case sha256, sha512
    }

    private let context: OpaquePointer

    public init(_ algorithm: Algorithm) {
        // Allocation failure here is memory exhaustion, not bad input.
        context = EVP_MD_CTX_new()
        EVP_DigestInit_ex(context, algorithm == .sha256 ? EVP_sha256() : EVP_sha512(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    public func update(_ data: some DataProtocol) {
        for region in data.regions {
            region.withUnsafeBytes { update(UnsafeRawBufferPointer($0)) }
        }
    }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// The digest as lowercase hex; the context is spent afterwards.
    public func finalizeHex() -> String {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &out, &length)
        return out[0..<Int(length)].map { String(format: "%02x", $0) }.joined()
    }

    /// The hex digest of some bytes.
    public static func hex(_ data: some DataProtocol, _ algorithm: Algorithm = .sha256) -> String {
        let d = Digest(algorithm)
        d.update(data)
        return d.finalizeHex()
    }

    /// The hex digest and size of a file, read in 1 MiB blocks.
    public static func hexOfFile(at url: URL, _ algorithm: Algorithm = .sha256) throws -> (hex: String, bytes: Int64) {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        return try hex(of: handle, algorithm)
    }

    /// The hex digest and size of what is left to read from an open file, read in 1 MiB blocks.
    public static func hex(
        of handle: FileHandle, _ algorithm: Algorithm = .sha256
    ) throws -> (hex: String, bytes: Int64) {
        let d = Digest(algorithm)
        var total: Int64 = 0
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            d.update(chunk)
            total += Int64(chunk.count)
        }
        return (d.finalizeHex(), total)
    }
}

/// Digests of files already read in this run, keyed by path, size and modification time, so a
/// large upload split into eight seats is hashed once, not sixteen times.
///
/// Hashing reads the whole file: call it off the cooperative pool (a stage's `BlockingExecutor`,
/// or `hexOfFile(at:_:on:)`); a second asker of a digest being computed blocks until it is ready.
public final class DigestCache: Sendable {
    struct Key: Hashable {
        var path: String
        var bytes: Int64
        var modified: Date
        var algorithm: Digest.Algorithm
    }

    private struct State {
        var entries: [Key: String] = [:]
        /// Digests being computed now; a second asker waits for the first instead of reading again.
        var inflight: [Key: DispatchGroup] = [:]
    }

    private let state = Mutex(State())
    /// Prefetches still hashing: the process must not exit under them (libcrypto's exit
    /// handlers free what a running digest holds, and the process then dies of SIGSEGV).
    private let prefetches = DispatchGroup()

    public init() {}

    public func hexOfFile(at url: URL, _ algorithm: Digest.Algorithm = .sha256) throws -> (hex: String, bytes: Int64) {
        guard let key = Self.key(url, algorithm) else { return try Digest.hexOfFile(at: url, algorithm) }
        enum Step { case done(String), wait(DispatchGroup), compute(DispatchGroup) }
        let step: Step = state.withLock { state in
            if let hex = state.entries[key] { return .done(hex) }
            if let group = state.inflight[key] { return .wait(group) }
            let group = DispatchGroup()
            group.enter()
            state.inflight[key] = group
            return .compute(group)
        }
        switch step {
        case .done(let hex):
            return (hex, key.bytes)
        case .wait(let group):
            group.wait()
            if let hex = state.withLock({ $0.entries[key] }) { return (hex, key.bytes) }
            return try Digest.hexOfFile(at: url, algorithm)
        case .compute(let group):
            defer {
                _ = state.withLock { $0.inflight.removeValue(forKey: key) }
                group.leave()
            }
            let result = try Digest.hexOfFile(at: url, algorithm)
            state.withLock { $0.entries[key] = result.hex }
            return result
        }
    }

    /// `hexOfFile` on `executor`: read (or waited for) without holding a thread of the cooperative pool.
    public func hexOfFile(
        at url: URL, _ algorithm: Digest.Algorithm = .sha256, on executor: BlockingExecutor
    ) async throws -> (hex: String, bytes: Int64) {
        try await executor.run { try self.hexOfFile(at: url, algorithm) }
    }

    /// Starts hashing a file on a thread of its own, so the digest is ready (or nearly) when a
    /// stage or the ledger asks for it: a large upload is hashed on an idle core while it is
    /// being decoded.
    public func prefetch(_ url: URL, _ algorithm: Digest.Algorithm = .sha256) {
        prefetches.enter()
        Thread.detachNewThread {
            _ = try? self.hexOfFile(at: url, algorithm)
            self.prefetches.leave()
        }
    }

    /// Returns when every prefetch started so far has ended (the runner waits before a run ends).
    public func prefetchesEnded() async {
        await withCheckedContinuation { done in prefetches.notify(queue: .global()) { done.resume() } }
    }

    /// Records digests computed elsewhere (while copying a file, say).
    public func remember(_ url: URL, _ algorithm: Digest.Algorithm, hex: String) {
        guard let key = Self.key(url, algorithm) else { return }
        state.withLock { $0.entries[key] = hex }
    }

    static func key(_ url: URL, _ algorithm: Digest.Algorithm) -> Key? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
            let bytes = (attributes[.size] as? NSNumber)?.int64Value,
            let modified = attributes[.modificationDate] as? Date
        else { return nil }
        return Key(path: url.standardizedFileURL.path, bytes: bytes, modified: modified, algorithm: algorithm)
    }

    /// Copies a file, hashing it with SHA-256 and SHA-512 on the way in one read, and remembers
    /// both digests for the copy.
    public func copy(_ source: URL, to destination: URL) throws -> (sha256: String, sha512: String, bytes: Int64) {
        let input = try FileHandle(forReadingFrom: source)
        defer { try? input.close() }
        let fd = open(destination.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw AtomicFile.failure("cannot create", destination, errno: errno) }
        let output = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        let sha256 = Digest(.sha256), sha512 = Digest(.sha512)
        var total: Int64 = 0
        while let chunk = try input.read(upToCount: 4 << 20), !chunk.isEmpty {
            do {
                try output.write(contentsOf: chunk)
            } catch {
                throw AtomicFile.failure("cannot write", destination, errno: posixCode(of: error) ?? EIO)
            }
            sha256.update(chunk)
            sha512.update(chunk)
            total += Int64(chunk.count)
        }
        do {
            try output.synchronize()
            try output.close()
        } catch {
            throw AtomicFile.failure("cannot write", destination, errno: posixCode(of: error) ?? EIO)
        }
        let result = (sha256.finalizeHex(), sha512.finalizeHex(), total)
        remember(destination, .sha256, hex: result.0)
        remember(destination, .sha512, hex: result.1)
        return result
    }
}
