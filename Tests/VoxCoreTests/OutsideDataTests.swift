import Foundation
import Testing
import VoxTestSupport

@testable import VoxCore

/// The helpers every path from outside goes through: `printable` (no forged lines), `Secrets`
/// (no key in any text) and `ContainedFile` (nothing outside the folder, no link, no FIFO).
@Suite struct OutsideDataTests {
    @Test func printableEscapesEveryLineBreakAndControlCharacterAndLeavesTheRestAlone() {
        #expect(printable("plain name ü 日本.wav") == "plain name ü 日本.wav")
        #expect(printable("a\nOK    b\r\tc") == "a\\nOK    b\\r\\tc")
        #expect(printable("bell\u{7}esc\u{1B}[31mdel\u{7F}nel\u{85}") == "bell\\u{7}esc\\u{1B}[31mdel\\u{7F}nel\\u{85}")
        #expect(printable("ls\u{2028}ps\u{2029}rlo\u{202E}x") == "ls\\u{2028}ps\\u{2029}rlo\\u{202E}x")
        #expect(printable("back\\slash") == "back\\slash")
    }

    @Test func secretsRedactEveryFormOfAKeyInTextAndBytes() {
        let secrets = Secrets()
        #expect(secrets.redact("Bearer sk-a/b\"c") == "Bearer sk-a/b\"c")
        secrets.register("sk-a/b\"c")
        secrets.register("")
        #expect(secrets.redact("Bearer sk-a/b\"c.") == "Bearer [redacted].")
        #expect(secrets.redact(#"{"k":"sk-a\/b\"c"}"#) == #"{"k":"[redacted]"}"#)
        #expect(secrets.redact("<f m=\"sk-a/b&quot;c\"/>") == "<f m=\"[redacted]\"/>")
        #expect(secrets.redact(Data("x sk-a/b\"c y".utf8)) == Data("x [redacted] y".utf8))
        // Bytes that are not UTF-8 keep their length: the key is overwritten in place.
        let binary = Data([0xFF, 0xFE]) + Data("sk-a/b\"c".utf8) + Data([0x80])
        #expect(
            secrets.redact(binary) == Data([0xFF, 0xFE]) + Data(repeating: UInt8(ascii: "*"), count: 8) + Data([0x80]))
        // Silent PCM is valid UTF-8 (all NULs), but it is not text.
        let silence = Data(count: 4) + Data("sk-a/b\"c".utf8) + Data(count: 2)
        #expect(
            secrets.redact(silence) == Data(count: 4) + Data(repeating: UInt8(ascii: "*"), count: 8) + Data(count: 2))
    }

    @Test(arguments: ["sk-a\r\nX-Injected: 1", "sk-a\n", "sk\0a", "sk-\u{7F}"])
    func aKeyWithAControlCharacterIsRefusedNamingItsSourceOnly(_ key: String) {
        let error = #expect(throws: VoxError.self) { try Secrets.check(key, source: "$OPENAI_API_KEY") }
        #expect(error?.category == .invalidSpec)
        #expect(error?.message.hasPrefix("the API key in $OPENAI_API_KEY holds a control character") == true)
        #expect(error?.message.contains("sk") == false)
    }

    @Test func containedFileReadsRegularFilesInsideAndRefusesLinksFIFOsAndDotDot() throws {
        let dir = temporaryDirectory()
        let folder = dir.appendingPathComponent("box")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try Data("inside".utf8).write(to: folder.appendingPathComponent("sub/a.txt"))
        try Data("outside".utf8).write(to: dir.appendingPathComponent("secret.txt"))
        try FileManager.default.createSymbolicLink(
            atPath: folder.appendingPathComponent("link.txt").path, withDestinationPath: "../secret.txt")
        try FileManager.default.createSymbolicLink(
            atPath: folder.appendingPathComponent("linked-sub").path, withDestinationPath: "sub")
        #expect(mkfifo(folder.appendingPathComponent("pipe").path, 0o600) == 0)

        #expect(try ContainedFile.read("sub/a.txt", in: folder) == Data("inside".utf8))
        func reason(_ path: String) -> String? {
            do {
                _ = try ContainedFile.read(path, in: folder)
                return nil
            } catch let error as VoxError {
                return error.message
            } catch {
                return "\(error)"
            }
        }
        #expect(reason("link.txt") == "a symbolic link; not followed")
        #expect(reason("linked-sub/a.txt") == "linked-sub is a symbolic link; not followed")
        #expect(reason("pipe") == "a FIFO, not a regular file; not read")
        #expect(reason("sub") == "a folder, not a regular file; not read")
        #expect(reason("none.txt") == "missing")
        for outside in ["../secret.txt", "/etc/hostname", "sub/../../secret.txt", "", "sub//a.txt"] {
            #expect(reason(outside) == "outside its folder; not read", "\(outside)")
        }
        #expect(ContainedFile.isFileName("a.txt") && !ContainedFile.isFileName("sub/a.txt"))

        let walked = ContainedFile.walk(folder).map { "\($0.path) \($0.kind)" }
        #expect(walked == ["link.txt symlink", "linked-sub symlink", "pipe fifo", "sub directory", "sub/a.txt file"])
    }
}

@Suite struct FileDigestStoreTests {
    @Test func aStoredDigestServesUntilTheFileChangesAndSurvivesTheProcess() throws {
        let dir = temporaryDirectory()
        let file = dir.appendingPathComponent("model.bin"), storeURL = dir.appendingPathComponent("d/digests.json")
        try Data("first".utf8).write(to: file)
        let store = FileDigestStore(url: storeURL)
        let first = try store.sha256(of: file)
        #expect(first == Digest.hex(Data("first".utf8)))
        store.save()
        // Another process (a new store) trusts the stored digest while the file is as it was …
        #expect(try FileDigestStore(url: storeURL).sha256(of: file) == first)
        // … and reads it again once it was replaced, even by one of the same size.
        try Data("secon".utf8).write(to: file, options: .atomic)
        #expect(try FileDigestStore(url: storeURL).sha256(of: file) == Digest.hex(Data("secon".utf8)))
    }
}
