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

    /// The problems of a bag, each naming its file; empty when it is complete and valid.
    public static func verify(bag: URL) -> [String] {
        var problems: [String] = []
        guard let declaration = try? String(contentsOf: bag.appendingPathComponent("bagit.txt"), encoding: .utf8) else {
            return ["bagit.txt: missing or unreadable"]
        }
        if declaration != Self.declaration { problems.append("bagit.txt: not a BagIt 1.0 declaration") }
        let present = Set((try? files(in: bag.appendingPathComponent("data")))?.map { "data/\($0)" } ?? [])
        for (name, algorithm) in payloadManifests {
            guard let entries = manifest(bag.appendingPathComponent(name)) else {
                problems.append("\(name): missing or malformed")
                continue
            }
            let listed = Set(entries.map(\.path))
            for path in present.subtracting(listed).sorted() { problems.append("\(path): not listed in \(name)") }
            for (hex, path) in entries {
                guard present.contains(path) else {
                    problems.append("\(path): listed in \(name) but missing")
                    continue
                }
                if (try? Digest.hexOfFile(at: bag.appendingPathComponent(path), algorithm).hex) != hex {
                    problems.append("\(path): \(algorithm.rawValue) does not match \(name)")
                }
            }
        }
        // Payload-Oxum: the byte count and file count bag-info.txt declares.
        if let info = try? String(contentsOf: bag.appendingPathComponent("bag-info.txt"), encoding: .utf8),
            let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("Payload-Oxum:") })
        {
            let total = present.reduce(Int64(0)) {
                $0
                    + ((try? FileManager.default.attributesOfItem(atPath: bag.appendingPathComponent($1).path)[.size]
                        as? NSNumber)?.int64Value ?? 0)
            }
            let declared = line.dropFirst("Payload-Oxum:".count).trimmingCharacters(in: .whitespaces)
            if declared != "\(total).\(present.count)" {
                problems.append("bag-info.txt: Payload-Oxum \(declared) but the payload is \(total).\(present.count)")
            }
        } else {
            problems.append("bag-info.txt: missing or without Payload-Oxum")
        }
        // Tag files: all listed in the tag manifest, with matching checksums, and nothing extra.
        if let entries = manifest(bag.appendingPathComponent(tagManifest.name)) {
            for (hex, path) in entries {
                guard isInside(path) else {
                    problems.append("\(path): listed in \(tagManifest.name) but outside the bag")
                    continue
                }
                guard
                    let actual = try? Digest.hexOfFile(at: bag.appendingPathComponent(path), tagManifest.algorithm).hex
                else {
                    problems.append("\(path): listed in \(tagManifest.name) but missing")
                    continue
                }
                if actual != hex { problems.append("\(path): sha256 does not match \(tagManifest.name)") }
            }
            let tagFiles = Set(
                ((try? FileManager.default.contentsOfDirectory(atPath: bag.path)) ?? []).filter {
                    $0 != "data" && $0 != tagManifest.name
                })
            for extra in tagFiles.subtracting(entries.map(\.path)).sorted() {
                problems.append("\(extra): not listed in \(tagManifest.name)")
            }
        } else {
            problems.append("\(tagManifest.name): missing or malformed")
        }
        return problems
    }

    /// Every regular file under `folder`, as sorted paths relative to it.
    static func files(in folder: URL) throws -> [String] {
        guard
            let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey])
        else { return [] }
        let base = folder.standardizedFileURL.path + "/"
        var out: [String] = []
        for case let url as URL in enumerator
        where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
            out.append(String(url.standardizedFileURL.path.dropFirst(base.count)))
        }
        return out.sorted()
    }

    static func manifest(_ url: URL) -> [(hex: String, path: String)]? {
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return nil }
        var entries: [(String, String)] = []
        // Lines end in LF, CR or CRLF (RFC 8493 §2.1.3); the checksum and the path are parted by
        // whitespace, as bagit-python reads them.
        for line in text.split(whereSeparator: \.isNewline) {
            let parts = line.split(maxSplits: 1, whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count == 2 else { return nil }
            entries.append((String(parts[0]), decode(parts[1].trimmingCharacters(in: .whitespaces))))
        }
        return entries
    }

    /// Whether a manifest path names a file inside the bag: relative, no `..` (RFC 8493 §2.1.3),
    /// so verifying a bag never reads files elsewhere (`../../dev/zero`).
    static func isInside(_ path: String) -> Bool {
        !path.hasPrefix("/") && !path.contains("\0") && !path.split(separator: "/").contains("..")
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
