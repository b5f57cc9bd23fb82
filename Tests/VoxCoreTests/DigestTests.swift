import Foundation
import Testing
import VoxTestSupport

@testable import VoxCore

/// Digest (SHA-256/512 over libcrypto) and DigestCache (digests keyed by path, size, mtime).
@Suite struct DigestTests {
    static let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    static let abcSHA256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    static let abcSHA512 =
        "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
        + "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
    static let emptySHA512 =
        "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
        + "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"
    /// FIPS 180-2 vector: SHA-256 of one million "a".
    static let millionASHA256 = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"

    /// Writes `data` to a new file whose modification time is `modified`.
    func file(
        _ data: Data, in dir: URL, name: String = "f.bin", modified: Date = Date(timeIntervalSince1970: 1_700_000_000)
    ) throws -> URL {
        let url = dir.appendingPathComponent(name)
        try data.write(to: url)
        try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: url.path)
        return url
    }

    /// Replaces a file's bytes and puts its modification time back to the nanosecond.
    func rewriteKeepingTime(_ url: URL, _ data: Data) throws {
        var before = stat()
        try #require(stat(url.path, &before) == 0)
        try data.write(to: url)
        var times = [before.st_atim, before.st_mtim]
        try #require(utimensat(AT_FDCWD, url.path, &times, 0) == 0)
    }

    @Test func knownVectors() {
        #expect(Digest.hex(Data()) == Self.emptySHA256)
        #expect(Digest.hex(Data("abc".utf8)) == Self.abcSHA256)
        #expect(Digest.hex(Data("abc".utf8), .sha512) == Self.abcSHA512)
        #expect(Digest.hex(Data(), .sha512) == Self.emptySHA512)
        #expect(
            Digest.hex(Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func streamingEqualsOneShotAndFiles() throws {
        let data = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let d = Digest(.sha256)
        var i = 0
        for size in [1, 63, 64, 65, 1000, 3] {
            d.update(data[i..<min(i + size, data.count)])
            i += size
        }
        d.update(data[i...])
        #expect(d.finalizeHex() == Digest.hex(data))
        let url = temporaryDirectory().appendingPathComponent("f.bin")
        try data.write(to: url)
        let (hex, bytes) = try Digest.hexOfFile(at: url)
        #expect(hex == Digest.hex(data))
        #expect(bytes == 100_000)
    }

    @Test func updatesInPiecesGiveTheDigestOfTheWhole() {
        let d = Digest(.sha256)
        for _ in 0..<1000 { d.update(Data(repeating: 0x61, count: 1000)) }
        d.update(UnsafeRawBufferPointer(start: nil, count: 0))
        #expect(d.finalizeHex() == Self.millionASHA256)
    }

    @Test func filesAreHashedAcrossReadBlocksWithTheirSize() throws {
        let dir = temporaryDirectory()
        // 2.5 MiB of "a" spans three 1 MiB reads.
        let data = Data(repeating: 0x61, count: 5 << 19)
        let url = try file(data, in: dir)
        let (hex, bytes) = try Digest.hexOfFile(at: url)
        #expect(bytes == 5 << 19)
        #expect(hex == Digest.hex(data))
        let small = try file(Data("abc".utf8), in: dir, name: "abc")
        #expect(try Digest.hexOfFile(at: small, .sha512) == (Self.abcSHA512, 3))
        let empty = try file(Data(), in: dir, name: "empty")
        #expect(try Digest.hexOfFile(at: empty) == (Self.emptySHA256, 0))
    }

    func throwsNoSuchFile(_ body: () throws -> Any) -> Bool {
        let error = #expect(throws: CocoaError.self) { try body() }
        return error?.code == .fileReadNoSuchFile
    }

    @Test func aMissingFileThrows() {
        let missing = temporaryDirectory().appendingPathComponent("missing.wav")
        #expect(throwsNoSuchFile { try Digest.hexOfFile(at: missing) })
        #expect(throwsNoSuchFile { try DigestCache().hexOfFile(at: missing) })
    }

    @Test func theCacheAnswersWithoutRereadingWhileSizeAndModificationTimeStay() throws {
        let dir = temporaryDirectory()
        let cache = DigestCache()
        let url = try file(Data("abc".utf8), in: dir)
        #expect(try cache.hexOfFile(at: url) == (Self.abcSHA256, 3))
        // Same size, same modification time, other bytes: the cache does not read the file again.
        try rewriteKeepingTime(url, Data("xyz".utf8))
        #expect(try cache.hexOfFile(at: url) == (Self.abcSHA256, 3))
        // The key is the standardized path: another spelling of it hits the same entry.
        #expect(try cache.hexOfFile(at: dir.appendingPathComponent("./f.bin")) == (Self.abcSHA256, 3))
        // A fresh cache reads the file.
        #expect(try DigestCache().hexOfFile(at: url) == (Digest.hex(Data("xyz".utf8)), 3))
    }

    @Test func theCacheRecomputesWhenModificationTimeOrSizeChanges() throws {
        let dir = temporaryDirectory()
        let cache = DigestCache()
        let url = try file(Data("abc".utf8), in: dir)
        #expect(try cache.hexOfFile(at: url).hex == Self.abcSHA256)
        _ = try file(Data("xyz".utf8), in: dir, modified: Date(timeIntervalSince1970: 1_700_000_001))
        #expect(try cache.hexOfFile(at: url).hex == Digest.hex(Data("xyz".utf8)))
        _ = try file(Data(), in: dir, modified: Date(timeIntervalSince1970: 1_700_000_001))
        #expect(try cache.hexOfFile(at: url) == (Self.emptySHA256, 0))
    }

    @Test func theCacheKeysEachAlgorithmApart() throws {
        let dir = temporaryDirectory()
        let cache = DigestCache()
        let url = try file(Data("abc".utf8), in: dir)
        #expect(try cache.hexOfFile(at: url, .sha256).hex == Self.abcSHA256)
        #expect(try cache.hexOfFile(at: url, .sha512).hex == Self.abcSHA512)
    }

    @Test func rememberedDigestsAreAnsweredForTheFileAsItIsNow() throws {
        let dir = temporaryDirectory()
        let cache = DigestCache()
        let url = try file(Data("abc".utf8), in: dir)
        cache.remember(url, .sha256, hex: "remembered")
        #expect(try cache.hexOfFile(at: url) == ("remembered", 3))
        // Remembered for that size and time only.
        _ = try file(Data("abcd".utf8), in: dir)
        #expect(try cache.hexOfFile(at: url).hex == Digest.hex(Data("abcd".utf8)))
    }

    @Test func copyWritesTheSameBytesAndRemembersBothDigestsOfTheCopy() throws {
        let dir = temporaryDirectory()
        let cache = DigestCache()
        let source = try file(Data("abc".utf8), in: dir, name: "source")
        let copy = dir.appendingPathComponent("copy")
        let result = try cache.copy(source, to: copy)
        #expect(result.sha256 == Self.abcSHA256)
        #expect(result.sha512 == Self.abcSHA512)
        #expect(result.bytes == 3)
        #expect(try Data(contentsOf: copy) == Data("abc".utf8))
        // Remembered: changing the copy's bytes while keeping its size and time is not noticed.
        try rewriteKeepingTime(copy, Data("xyz".utf8))
        #expect(try cache.hexOfFile(at: copy, .sha512).hex == Self.abcSHA512)
    }

    @Test func copyIntoAMissingFolderThrowsTheCannotCreateError() throws {
        let dir = temporaryDirectory()
        let source = try file(Data("abc".utf8), in: dir, name: "source")
        let target = dir.appendingPathComponent("no/such/copy")
        #expect(throws: VoxError(.cannotCreate, "cannot create \(target.path): No such file or directory")) {
            try DigestCache().copy(source, to: target)
        }
    }

    @Test func concurrentAskersAllGetTheDigest() async throws {
        let dir = temporaryDirectory()
        let url = try file(Data(repeating: 0x61, count: 1_000_000), in: dir)
        let cache = DigestCache()
        cache.prefetch(url)
        let answers = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<8 { group.addTask { try cache.hexOfFile(at: url).hex } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(answers == Array(repeating: Self.millionASHA256, count: 8))
    }
}
