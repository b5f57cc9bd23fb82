import Foundation
import VoxCore
import VoxWrite

// Targets where outside data names files (issue 27): whatever the bytes say, nothing outside
// the folder they belong to is read or named for writing, no link is followed, and no FIFO is
// waited on (libFuzzer's -timeout catches a wait).

/// 10. `join`: `voxpipe join` on an index (the bytes after the first) beside three parts, one of
/// which the first byte may turn into a symbolic link (to a copy outside the folder, to a
/// folder, to /dev/zero) or a FIFO. A join that succeeds must have read regular parts only, and
/// the file it would write (`joinTarget`) must be beside the index.
struct JoinTarget: FuzzTarget {
    let workspace: URL
    static let parts: [(name: String, data: Data)] = (1...3).map {
        ("x.000\($0)", Data(repeating: UInt8(truncatingIfNeeded: 0x40 + $0), count: 100 * $0))
    }
    /// What the first byte makes of x.0002.
    enum Arrangement: Int, CaseIterable {
        case regular, linkOut, linkToFolder, linkToZero, fifo
    }

    /// The index of the three parts, whole: the seed the fuzzer mutates.
    static var index: Data {
        let whole = parts.reduce(Data()) { $0 + $1.data }
        let listed: [[String: Any]] = parts.map {
            ["file": $0.name, "bytes": $0.data.count, "sha256": Digest.hex($0.data)]
        }
        let object: [String: Any] = [
            "name": "joined.bin", "bytes": whole.count, "sha256": Digest.hex(whole), "partBytes": 300,
            "count": parts.count, "parts": listed,
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }

    func run(_ data: Data) throws {
        let (which, index) = variant(data, of: Arrangement.allCases.count)
        let arrangement = Arrangement(rawValue: which) ?? .regular
        let root = try freshFolder(workspace, "join")
        let folder = root.appendingPathComponent("box/inner")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, bytes) in Self.parts { try bytes.write(to: folder.appendingPathComponent(name)) }
        let linked = folder.appendingPathComponent(Self.parts[1].name)
        try Self.parts[1].data.write(to: root.appendingPathComponent("outside.bin"))
        if arrangement != .regular { try FileManager.default.removeItem(at: linked) }
        switch arrangement {
        case .regular: break
        case .linkOut: try link(linked, to: "../../outside.bin")
        case .linkToFolder: try link(linked, to: "..")
        case .linkToZero: try link(linked, to: "/dev/zero")
        case .fifo: guard mkfifo(linked.path, 0o600) == 0 else { fail("mkfifo failed") }
        }
        let url = folder.appendingPathComponent("fuzz.index.json")
        try index.write(to: url)
        let joined = try WriteMessageChunksStage.join(index: url)
        if arrangement != .regular && joined.index.parts.contains(where: { $0.file == Self.parts[1].name }) {
            fail("join read \(Self.parts[1].name) as \(arrangement): it must be refused")
        }
        let target = WriteMessageChunksStage.joinTarget(index: url, name: joined.index.name, output: nil)
        guard target.deletingLastPathComponent().standardizedFileURL.path == folder.standardizedFileURL.path else {
            fail("join would write \(target.path), outside \(folder.path)")
        }
    }

    func link(_ url: URL, to destination: String) throws {
        try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: destination)
    }

    func seeds() throws -> [String: Data] {
        var seeds: [String: Data] = [:]
        for arrangement in Arrangement.allCases {
            seeds["\(arrangement).index.json"] = Data([UInt8(arrangement.rawValue)]) + Self.index
        }
        seeds["name-outside.index.json"] =
            Data([0])
            + Data(
                String(decoding: Self.index, as: UTF8.self).replacingOccurrences(
                    of: "joined.bin", with: "../../joined.bin"
                ).utf8)
        return seeds
    }
}

/// 11. `verify`: `voxpipe verify` on a valid bag to which the bytes add entries. Each entry is
/// three bytes and a name up to a NUL: what it is (a file, a folder, a link to a file outside
/// the bag, to /dev/zero or to a folder outside, a FIFO), where (the bag, data/, data/sub/),
/// and its name (`/` dropped; an existing file of that name is replaced). Every link, FIFO and
/// file added must make verify fail and be named in its problems; verify must never wait.
struct VerifyTarget: FuzzTarget {
    let workspace: URL
    let template: URL

    enum Kind: Int, CaseIterable {
        case file, folder, linkOut, linkToZero, linkToFolder, fifo
    }
    static let places = ["", "data/", "data/sub/"]

    init(workspace: URL) throws {
        self.workspace = workspace
        template = try freshFolder(workspace, "template")
        let data = template.appendingPathComponent("data")
        try FileManager.default.createDirectory(
            at: data.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try Data("evidence".utf8).write(to: data.appendingPathComponent("evidence.txt"))
        try Data("more".utf8).write(to: data.appendingPathComponent("sub/more.txt"))
        try BagIt.finish(bag: template, info: [("Bagging-Date", "2024-05-01")])
        try Data("outside".utf8).write(to: workspace.appendingPathComponent("outside.txt"))
        guard BagIt.verify(bag: template).isEmpty else { fail("the template bag does not verify") }
    }

    func run(_ data: Data) throws {
        let bag = workspace.appendingPathComponent("bag")
        try? FileManager.default.removeItem(at: bag)
        try FileManager.default.copyItem(at: template, to: bag)
        var added: [(path: String, kind: Kind)] = []
        var rest = data[...]
        while rest.count >= 2, added.count < 8 {
            let kind = Kind(rawValue: Int(rest.removeFirst()) % Kind.allCases.count) ?? .file
            let place = Self.places[Int(rest.removeFirst()) % Self.places.count]
            let nameBytes = rest.prefix { $0 != 0 }.prefix(24)
            rest = rest.dropFirst(nameBytes.count + 1)
            let name = String(decoding: nameBytes, as: UTF8.self).replacingOccurrences(of: "/", with: "")
            guard ContainedFile.isFileName(name) else { continue }
            let path = place + name
            if added.contains(where: { $0.path == path || path.hasPrefix($0.path + "/") }) { continue }
            let url = bag.appendingPathComponent(path)
            // Not the data folder itself, nor a folder holding files already added.
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), isFolder.boolValue {
                continue
            }
            try? FileManager.default.removeItem(at: url)
            switch kind {
            case .file: try Data(name.utf8).write(to: url)
            case .folder: try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            case .linkOut: try link(url, to: workspace.appendingPathComponent("outside.txt").path)
            case .linkToZero: try link(url, to: "/dev/zero")
            case .linkToFolder: try link(url, to: workspace.path)
            case .fifo: guard mkfifo(url.path, 0o600) == 0 else { fail("mkfifo \(url.path) failed") }
            }
            added.append((path, kind))
        }
        let problems = BagIt.verify(bag: bag)
        for (path, kind) in added where kind != .folder {
            guard !problems.isEmpty else { fail("verify passed a bag with \(kind) \(path) added") }
            if kind != .file && !problems.contains(where: { $0.hasPrefix(path + ": ") }) {
                fail("verify did not name \(kind) \(path): \(problems)")
            }
        }
    }

    func link(_ url: URL, to destination: String) throws {
        try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: destination)
    }

    func seeds() throws -> [String: Data] {
        func entry(_ kind: Kind, _ place: Int, _ name: String) -> Data {
            Data([UInt8(kind.rawValue), UInt8(place)]) + Data(name.utf8) + Data([0])
        }
        return [
            "link-in-data": entry(.linkOut, 1, "extra.txt"),
            "fifo-in-data": entry(.fifo, 1, "pipe"),
            "bagit-to-zero": entry(.linkToZero, 0, "bagit.txt"),
            "manifest-to-zero": entry(.linkToZero, 0, "manifest-sha256.txt"),
            "listed-payload-linked": entry(.linkOut, 1, "evidence.txt"),
            "sub-to-folder": entry(.linkToFolder, 2, "deeper"),
            "file-and-folder": entry(.file, 1, "new\nline.txt") + entry(.folder, 2, "empty"),
        ]
    }
}
