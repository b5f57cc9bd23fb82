import Foundation
import Testing
import VoxCore
import VoxTestSupport

@testable import VoxWrite

/// BagIt (RFC 8493): the tag files `finish` writes and the problems `verify` finds.
@Suite struct BagItTests {
    /// The payload, with each file's SHA-256 and SHA-512 (from sha256sum and sha512sum). The
    /// names need percent-encoding in manifests: `%` and a line break.
    static let payload: [(path: String, content: [UInt8], sha256: String, sha512: String)] = [
        (
            "100%.txt", Array("percent".utf8),
            "fd86717aca41c558c78c19ab2b50691179a57ba5200bc7e3317be70efd4043ad",
            "2f845edf0e9c9728fae627d4678dc8c35c9a7f22809d355aa5ddf96d9ca35399"
                + "73ac7ff96bfc6720ce6a973f93b716e265ad719ee38a85e44d9316ac1b6c89a4"
        ),
        (
            "a.txt", Array("hello\n".utf8),
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
            "e7c22b994c59d9cf2b48e549b1e24666636045930d3da7c1acb299d1c3b7f931"
                + "f94aae41edda2c2b207a36e10f8bcb8d45223e54878f5b316e7ce3b6bc019629"
        ),
        (
            "new\nline.txt", Array("newline name".utf8),
            "c922526ce8313aa4c396aa90f95581fa73a3a8b689bba58b717ab87f20df8acc",
            "343fad310721130e356a8cc8013fc901d262d0a3d92dcc3f873791227a319dfc"
                + "a436ed7f59f087d324ca9f3c05195de4c5cda455dd550ddfef59d738416bfafb"
        ),
        (
            "sub/b.bin", Array("binary".utf8) + [0, 1, 2],
            "2057f1f06dfc037e6143d07aad6244a7aca596b427278d00a040ffddcd9c158c",
            "287ea14f6ca7e8476e6a6441a8130a3f1c00eab07d833407083c596f0e3d5e9c"
                + "135adab4b1cebde565adaa52ad5ba8463b9bb3e66868c997b5844f64a1c59601"
        ),
    ]
    static let encodedPaths = ["data/100%25.txt", "data/a.txt", "data/new%0Aline.txt", "data/sub/b.bin"]
    static let info = [("Source-Organization", "Vox Org"), ("Bagging-Date", "2026-11-20")]
    /// 7 + 6 + 12 + 9 bytes in 4 files.
    static let oxum = "34.4"

    /// A bag folder with the payload under data/, finished unless `finish` is false.
    func bag(finish: Bool = true, digests: DigestCache? = nil) throws -> URL {
        let bag = temporaryDirectory().appendingPathComponent("bag")
        for file in Self.payload {
            let url = bag.appendingPathComponent("data/\(file.path)")
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(file.content).write(to: url)
        }
        if finish { try BagIt.finish(bag: bag, info: Self.info, digests: digests) }
        return bag
    }

    func text(_ bag: URL, _ name: String) throws -> String {
        try String(contentsOf: bag.appendingPathComponent(name), encoding: .utf8)
    }

    /// Checks every tag file of a bag made from `payload`, byte for byte.
    func expectExactTagFiles(_ bag: URL) throws {
        let bagit = "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n"
        let bagInfo = "Source-Organization: Vox Org\nBagging-Date: 2026-11-20\nPayload-Oxum: \(Self.oxum)\n"
        let sha256 = zip(Self.payload, Self.encodedPaths).map { "\($0.sha256)  \($1)\n" }.joined()
        let sha512 = zip(Self.payload, Self.encodedPaths).map { "\($0.sha512)  \($1)\n" }.joined()
        #expect(try text(bag, "bagit.txt") == bagit)
        #expect(try text(bag, "bag-info.txt") == bagInfo)
        #expect(try text(bag, "manifest-sha256.txt") == sha256)
        #expect(try text(bag, "manifest-sha512.txt") == sha512)
        // bagit.txt's SHA-256 from sha256sum; the others are checked as text above.
        #expect(
            try text(bag, "tagmanifest-sha256.txt") == """
                1712ecfb074bf29c4188ad3421032509159a09739fd604f8fe57038b4ddefcc9  bagit.txt
                \(Digest.hex(Data(bagInfo.utf8)))  bag-info.txt
                \(Digest.hex(Data(sha256.utf8)))  manifest-sha256.txt
                \(Digest.hex(Data(sha512.utf8)))  manifest-sha512.txt

                """)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: bag.path).sorted()
                == [
                    "bag-info.txt", "bagit.txt", "data", "manifest-sha256.txt", "manifest-sha512.txt",
                    "tagmanifest-sha256.txt",
                ])
    }

    @Test func aFinishedBagHasExactTagFilesAndVerifies() throws {
        let bag = try bag()
        try expectExactTagFiles(bag)
        #expect(BagIt.verify(bag: bag) == [])
    }

    @Test func finishingWithADigestCacheWritesTheSameBag() throws {
        let bag = try bag(digests: DigestCache())
        try expectExactTagFiles(bag)
        #expect(BagIt.verify(bag: bag) == [])
    }

    @Test func aBagWrittenElsewhereWithCRLFLinesAndTabsVerifies() throws {
        let bag = try bag()
        // As another tool may write them: CRLF line ends, a tab between checksum and path. The
        // tag manifest is made again over the rewritten files.
        for name in ["bag-info.txt", "manifest-sha256.txt", "manifest-sha512.txt"] {
            let crlf = try text(bag, name).replacingOccurrences(of: "\n", with: "\r\n").replacingOccurrences(
                of: "  data/", with: "\tdata/")
            try Data(crlf.utf8).write(to: bag.appendingPathComponent(name))
        }
        let tags = try ["bagit.txt", "bag-info.txt", "manifest-sha256.txt", "manifest-sha512.txt"].map { name in
            "\(Digest.hex(try Data(contentsOf: bag.appendingPathComponent(name))))  \(name)\r\n"
        }.joined()
        try Data(tags.utf8).write(to: bag.appendingPathComponent("tagmanifest-sha256.txt"))
        #expect(BagIt.verify(bag: bag) == [])
    }

    @Test func anEmptyPayloadIsAValidBag() throws {
        let bag = temporaryDirectory().appendingPathComponent("empty")
        try FileManager.default.createDirectory(
            at: bag.appendingPathComponent("data"), withIntermediateDirectories: true)
        try BagIt.finish(bag: bag, info: [])
        #expect(try text(bag, "bag-info.txt") == "Payload-Oxum: 0.0\n")
        #expect(try text(bag, "manifest-sha256.txt") == "")
        #expect(try text(bag, "manifest-sha512.txt") == "")
        #expect(BagIt.verify(bag: bag) == [])
    }

    /// Something done to a finished bag, and the problems `verify` must then report, in order.
    struct Damage: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var apply: @Sendable (URL) throws -> Void
        var problems: [String]

        static func write(_ path: String, _ text: String) -> @Sendable (URL) throws -> Void {
            { bag in try Data(text.utf8).write(to: bag.appendingPathComponent(path)) }
        }

        static func remove(_ paths: String...) -> @Sendable (URL) throws -> Void {
            { bag in for path in paths { try FileManager.default.removeItem(at: bag.appendingPathComponent(path)) } }
        }

        static func append(_ path: String, _ text: String) -> @Sendable (URL) throws -> Void {
            { bag in
                let url = bag.appendingPathComponent(path)
                try Data((try String(contentsOf: url, encoding: .utf8) + text).utf8).write(to: url)
            }
        }
    }

    static let damages: [Damage] = [
        Damage(
            testDescription: "a changed payload byte", apply: Damage.write("data/a.txt", "hellO\n"),
            problems: [
                "data/a.txt: sha256 does not match manifest-sha256.txt",
                "data/a.txt: sha512 does not match manifest-sha512.txt",
            ]),
        Damage(
            testDescription: "a changed byte in a file with an encoded name",
            apply: Damage.write("data/new\nline.txt", "newline nam3"),
            problems: [
                "data/new\nline.txt: sha256 does not match manifest-sha256.txt",
                "data/new\nline.txt: sha512 does not match manifest-sha512.txt",
            ]),
        Damage(
            testDescription: "a missing payload file", apply: Damage.remove("data/a.txt"),
            problems: [
                "data/a.txt: listed in manifest-sha256.txt but missing",
                "data/a.txt: listed in manifest-sha512.txt but missing",
                "bag-info.txt: Payload-Oxum 34.4 but the payload is 28.3",
            ]),
        Damage(
            testDescription: "an extra payload file", apply: Damage.write("data/sub/extra.txt", "extra"),
            problems: [
                "data/sub/extra.txt: not listed in manifest-sha256.txt",
                "data/sub/extra.txt: not listed in manifest-sha512.txt",
                "bag-info.txt: Payload-Oxum 34.4 but the payload is 39.5",
            ]),
        Damage(
            testDescription: "an extra tag file", apply: Damage.write("notes.txt", "notes"),
            problems: [
                "notes.txt: not listed in tagmanifest-sha256.txt"
            ]),
        Damage(
            testDescription: "a changed tag file", apply: Damage.append("bag-info.txt", "Contact-Name: Eve\n"),
            problems: [
                "bag-info.txt: sha256 does not match tagmanifest-sha256.txt"
            ]),
        Damage(
            testDescription: "a malformed manifest line",
            apply: Damage.append("manifest-sha256.txt", "no-separator-on-this-line\n"),
            problems: [
                "manifest-sha256.txt: missing or malformed",
                "manifest-sha256.txt: sha256 does not match tagmanifest-sha256.txt",
            ]),
        Damage(
            testDescription: "missing manifests", apply: Damage.remove("manifest-sha512.txt", "tagmanifest-sha256.txt"),
            problems: [
                "manifest-sha512.txt: missing or malformed",
                "tagmanifest-sha256.txt: missing or malformed",
            ]),
        Damage(
            testDescription: "a missing bag-info.txt", apply: Damage.remove("bag-info.txt"),
            problems: [
                "bag-info.txt: missing or without Payload-Oxum",
                "bag-info.txt: listed in tagmanifest-sha256.txt but missing",
            ]),
        Damage(
            testDescription: "an older declaration",
            apply: Damage.write("bagit.txt", "BagIt-Version: 0.97\nTag-File-Character-Encoding: UTF-8\n"),
            problems: [
                "bagit.txt: not a BagIt 1.0 declaration",
                "bagit.txt: sha256 does not match tagmanifest-sha256.txt",
            ]),
        Damage(
            testDescription: "no declaration", apply: Damage.remove("bagit.txt"),
            problems: ["bagit.txt: missing or unreadable"]),
    ]

    @Test(arguments: damages)
    func verifyNamesEachProblemOfADamagedBag(_ damage: Damage) throws {
        let bag = try bag()
        try damage.apply(bag)
        #expect(BagIt.verify(bag: bag) == damage.problems)
    }

    @Test func finishingABagWhoseTagFilesCannotBeWrittenThrows() throws {
        // bagit.txt is a folder: the first tag file cannot be created.
        let bag = try bag(finish: false)
        try FileManager.default.createDirectory(
            at: bag.appendingPathComponent("bagit.txt"), withIntermediateDirectories: true)
        let expected = VoxError(.cannotCreate, "cannot create \(bag.path)/bagit.txt: Is a directory")
        #expect(throws: expected) { try BagIt.finish(bag: bag, info: Self.info) }
    }

    @Test func anUnlistedFileWhoseNameIsTheNFDTwinOfAListedNameFailsVerification() throws {
        let bag = try bag(finish: false)
        let nfc = "caf\u{E9}.txt", nfd = "cafe\u{301}.txt"
        try Data("listed".utf8).write(to: bag.appendingPathComponent("data/\(nfc)"))
        try BagIt.finish(bag: bag, info: Self.info)
        #expect(BagIt.verify(bag: bag) == [])
        try Data("twin!".utf8).write(to: bag.appendingPathComponent("data/\(nfd)"))
        let twin = "an unlisted twin of data/\(nfc): the same name in NFD bytes, the listed one in NFC"
        let expected = [
            "data/\(nfd): not listed in manifest-sha256.txt (\(twin))",
            "data/\(nfd): not listed in manifest-sha512.txt (\(twin))",
            "bag-info.txt: Payload-Oxum 40.5 but the payload is 45.6",
        ]
        // Byte for byte: Swift's `==` takes an NFC and an NFD name for the same string.
        let problems = BagIt.verify(bag: bag)
        #expect(problems.map { Array($0.utf8) } == expected.map { Array($0.utf8) }, "\(problems)")
    }

    @Test func aListedNameWhoseFileIsOnlyThereAsItsNFDTwinIsMissing() throws {
        let bag = try bag(finish: false)
        let nfc = "caf\u{E9}.txt", nfd = "cafe\u{301}.txt"
        try Data("listed".utf8).write(to: bag.appendingPathComponent("data/\(nfc)"))
        try BagIt.finish(bag: bag, info: Self.info)
        try FileManager.default.moveItem(
            at: bag.appendingPathComponent("data/\(nfc)"), to: bag.appendingPathComponent("data/\(nfd)"))
        let problems = BagIt.verify(bag: bag)
        let twin = "an unlisted twin of data/\(nfc): the same name in NFD bytes, the listed one in NFC"
        let expected = [
            "data/\(nfd): not listed in manifest-sha256.txt (\(twin))",
            "data/\(nfc): listed in manifest-sha256.txt but missing",
            "data/\(nfd): not listed in manifest-sha512.txt (\(twin))",
            "data/\(nfc): listed in manifest-sha512.txt but missing",
        ]
        #expect(problems.map { Array($0.utf8) } == expected.map { Array($0.utf8) }, "\(problems)")
    }
}
