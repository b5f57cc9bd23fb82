import Foundation
import VoxCore

/// BagIt 1.0 (RFC 8493): writing the tag files of a bag whose payload is in place, and checking
/// a bag is complete (every file listed and present, nothing extra) and valid (every checksum).
public enum BagIt {
    public static let declaration = "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n"
    static let payloadManifests: [(name: String, algorithm: Digest.Algorithm)] = [
        ("manifest-sha256.txt", .sha256), ("manifest-sha512.txt", .sha512),
    ]
    static let tagManifest = (name: "tagmanifest-sha256.txt", algorithm: Digest.Algorithm.sha256)

    /// Writes bagit.txt, bag-info.txt, the payload manifests and the tag manifest for the files
    /// under `bag/data`. `info` is written in the order given.
    public static func finish(bag: URL, info: [(String, String)], digests: DigestCache? = nil) throws {
        let payload = try files(in: bag.appendingPathComponent("data")).map { "data/\($0)" }
        var totalBytes: Int64 = 0
        var lines: [String: [String]] = [:]
        for path in payload {
            let url = bag.appendingPathComponent(path)
            for (name, algorithm) in payloadManifests {
                let (hex, bytes) = try digests?.hexOfFile(at: url, algorithm) ?? Digest.hexOfFile(at: url, algorithm)
                lines[name, default: []].append("\(hex)  \(encode(path))")
                if algorithm == .sha256 { totalBytes += bytes }
            }
        }
        try AtomicFile.writeFile(Data(declaration.utf8), to: bag.appendingPathComponent("bagit.txt"))
        let oxum = ("Payload-Oxum", "\(totalBytes).\(payload.count)")
        // One line per element: a line break in a value (a report id) would start a line of its own.
        let infoText = (info + [oxum]).map { "\($0.0): \(oneLine($0.1))\n" }.joined()
        try AtomicFile.writeFile(Data(infoText.utf8), to: bag.appendingPathComponent("bag-info.txt"))
        for (name, _) in payloadManifests {
            try AtomicFile.writeFile(
                Data(((lines[name] ?? []).joined(separator: "\n") + (payload.isEmpty ? "" : "\n")).utf8),
                to: bag.appendingPathComponent(name))
        }
        var tags: [String] = []
        for name in ["bagit.txt", "bag-info.txt"] + payloadManifests.map(\.name) {
            tags.append(
                "\(try Digest.hexOfFile(at: bag.appendingPathComponent(name), tagManifest.algorithm).hex)  \(name)")
        }
        try AtomicFile.writeFile(
            Data((tags.joined(separator: "\n") + "\n").utf8), to: bag.appendingPathComponent(tagManifest.name))
    }

    /// The problems of a bag, each naming its file; empty when it is complete and valid. A bag
    /// holds only folders and regular files: a symbolic link anywhere in it, a FIFO, socket or
    /// device is a problem, and is never followed or read; every payload file under `data/` must
    /// be listed in each payload manifest. Every file is read through `ContainedFile`, so nothing
    /// a manifest names (or a link swapped in) reaches outside the bag. Names are compared byte
    /// for byte (a file system keeps a name's bytes, and Swift's `==` takes an NFC and an NFD
    /// name for one): an unlisted file whose name is a listed name in another Unicode
    /// normalisation is named as that name's unlisted twin.
    public static func verify(bag: URL) -> [String] {
        var problems: [String] = []
        guard let declaration = text(bag, "bagit.txt") else { return ["bagit.txt: missing or unreadable"] }
        if declaration != Self.declaration { problems.append("bagit.txt: not a BagIt 1.0 declaration") }
        let entries = ContainedFile.walk(bag)
        for entry in entries where entry.kind != .file && entry.kind != .directory {
            problems.append("\(entry.path): \(entry.kind.described), not a regular file")
        }
        let present = Set(entries.filter { $0.kind == .file && $0.path.hasPrefix("data/") }.map { ExactName($0.path) })
        for (name, algorithm) in payloadManifests {
            guard let entries = manifest(bag, name) else {
                problems.append("\(name): missing or malformed")
                continue
            }
            let listed = Set(entries.map { ExactName($0.path) })
            for path in present.subtracting(listed).map(\.text).sorted() {
                problems.append("\(path): not listed in \(name)\(twinNote(path, listed: entries.map(\.path)))")
            }
            for (hex, path) in entries {
                guard present.contains(ExactName(path)) else {
                    problems.append("\(path): listed in \(name) but missing")
                    continue
                }
                if (try? hexOfFile(bag, path, algorithm)) != hex {
                    problems.append("\(path): \(algorithm.rawValue) does not match \(name)")
                }
            }
        }
        // Payload-Oxum: the byte count and file count bag-info.txt declares.
        if let info = text(bag, "bag-info.txt"),
            let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("Payload-Oxum:") })
        {
            let total = present.reduce(Int64(0)) {
                $0
                    + ((try? FileManager.default.attributesOfItem(atPath: bag.appendingPathComponent($1.text).path)[
                        .size] as? NSNumber)?.int64Value ?? 0)
            }
            let declared = line.dropFirst("Payload-Oxum:".count).trimmingCharacters(in: .whitespaces)
            if declared != "\(total).\(present.count)" {
                problems.append("bag-info.txt: Payload-Oxum \(declared) but the payload is \(total).\(present.count)")
            }
        } else {
            problems.append("bag-info.txt: missing or without Payload-Oxum")
        }
        // Tag files: all listed in the tag manifest, with matching checksums, and nothing extra.
        if let entries = manifest(bag, tagManifest.name) {
            for (hex, path) in entries {
                guard ContainedFile.isContained(path) else {
                    problems.append("\(path): listed in \(tagManifest.name) but outside the bag")
                    continue
                }
                let actual: String
                do {
                    actual = try hexOfFile(bag, path, tagManifest.algorithm)
                } catch let error as VoxError {
                    let reason = error.message == "missing" ? "missing" : "unreadable (\(error.message))"
                    problems.append("\(path): listed in \(tagManifest.name) but \(reason)")
                    continue
                } catch {
                    problems.append("\(path): listed in \(tagManifest.name) but unreadable (\(describe(error)))")
                    continue
                }
                if actual != hex { problems.append("\(path): sha256 does not match \(tagManifest.name)") }
            }
            let tagFiles = Set(
                ((try? FileManager.default.contentsOfDirectory(atPath: bag.path)) ?? []).filter {
                    $0 != "data" && $0 != tagManifest.name
                }.map(ExactName.init))
            for extra in tagFiles.subtracting(entries.map { ExactName($0.path) }).map(\.text).sorted() {
                problems.append(
                    "\(extra): not listed in \(tagManifest.name)\(twinNote(extra, listed: entries.map(\.path)))")
            }
        } else {
            problems.append("\(tagManifest.name): missing or malformed")
        }
        return problems
    }

    /// A name compared and hashed by its UTF-8 bytes, not by Swift's canonical equivalence.
    struct ExactName: Hashable {
        let text: String
        let bytes: [UInt8]

        init(_ text: String) {
            self.text = text
            bytes = Array(text.utf8)
        }

        static func == (a: ExactName, b: ExactName) -> Bool { a.bytes == b.bytes }
        func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
    }

    /// For an unlisted name that a listed one equals in another Unicode normalisation, what
    /// tells them apart: ` (an unlisted twin of data/café.txt: the same name in NFD bytes, the
    /// listed one in NFC)`; else empty.
    static func twinNote(_ path: String, listed: [String]) -> String {
        guard let twin = listed.first(where: { $0 == path && !$0.utf8.elementsEqual(path.utf8) }) else { return "" }
        return " (an unlisted twin of \(twin): the same name in \(form(path)) bytes, the listed one in \(form(twin)))"
    }

    /// Which Unicode normalisation form `text`'s bytes are in: NFC, NFD or neither.
    static func form(_ text: String) -> String {
        if text.utf8.elementsEqual(text.precomposedStringWithCanonicalMapping.utf8) { return "NFC" }
        if text.utf8.elementsEqual(text.decomposedStringWithCanonicalMapping.utf8) { return "NFD" }
        return "mixed"
    }

    /// Every regular file under `folder`, as sorted paths relative to it (links not followed).
    static func files(in folder: URL) throws -> [String] {
        ContainedFile.walk(folder).filter { $0.kind == .file }.map(\.path)
    }

    /// A tag file's text, read inside the bag; nil when missing, not a regular file or not UTF-8.
    static func text(_ bag: URL, _ name: String) -> String? {
        (try? ContainedFile.read(name, in: bag)).flatMap { String(data: $0, encoding: .utf8) }
    }

    /// The digest of a file inside the bag (`ContainedFile`: no links, regular files only).
    static func hexOfFile(_ bag: URL, _ path: String, _ algorithm: Digest.Algorithm) throws -> String {
        let handle = try ContainedFile.open(path, in: bag)
        defer { try? handle.close() }
        return try Digest.hex(of: handle, algorithm).hex
    }

    static func manifest(_ bag: URL, _ name: String) -> [(hex: String, path: String)]? {
        guard let text = text(bag, name) else { return nil }
        var entries: [(String, String)] = []
        // Lines end in LF, CR or CRLF (RFC 8493 §2.1.3), and only in those: a vertical tab or form
        // feed is part of the line (Character.isNewline takes them as line ends, so a flipped bit
        // that turned LF into VT went unseen). The checksum and the path are parted by whitespace,
        // as bagit-python reads them.
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) {
            let parts = line.split(maxSplits: 1, whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count == 2 else { return nil }
            entries.append((String(parts[0]), decode(parts[1].trimmingCharacters(in: .whitespaces))))
        }
        return entries
    }

    /// RFC 8493 §2.1.3: CR, LF and % in manifest paths are percent-encoded.
    static func encode(_ path: String) -> String {
        path.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\n", with: "%0A")
            .replacingOccurrences(of: "\r", with: "%0D")
    }

    static func decode(_ path: String) -> String {
        path.replacingOccurrences(of: "%0A", with: "\n").replacingOccurrences(of: "%0D", with: "\r")
            .replacingOccurrences(of: "%25", with: "%")
    }
}
