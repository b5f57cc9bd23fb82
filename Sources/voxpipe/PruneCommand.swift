import ArgumentParser
import Foundation
import VoxCore

/// `voxpipe prune DIR --older-than 30d`: retention for output folders that cron jobs fill.
struct PruneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Remove finished items older than an age from an output folder; items on legal hold stay.",
        discussion: """
            An item goes whole (its folder with every output; what stays is its manifest, marked \
            pruned, so a later run over the same unchanged input does not redo it). An item whose \
            report (report.json in its bag) has "legalHold": true is kept. Takes the folder's lock: \
            never runs beside a run on the same folder (exit 75).
            """
    )

    @Argument(help: "The output folder.") var directory: String
    @Option(
        help: ArgumentHelp("Age of the items to remove, from when they finished: 30d, 12h, 90m, 2w.", valueName: "AGE"))
    var olderThan: String
    @Flag(help: "Say what would go; remove nothing.") var dryRun = false

    func validate() throws {
        guard Self.seconds(olderThan) != nil else {
            throw ValidationError("--older-than \(olderThan): expected a number and a unit: 30d, 12h, 90m, 45s, 2w")
        }
    }

    /// Seconds in an age like `30d`.
    static func seconds(_ age: String) -> Double? {
        guard let unit = age.last, let number = Double(age.dropLast()), number >= 0 else { return nil }
        let scale: Double? =
            switch unit {
            case "s": 1
            case "m": 60
            case "h": 3600
            case "d": 86400
            case "w": 7 * 86400
            default: nil
            }
        return scale.map { number * $0 }
    }

    func run() throws {
        let root = URL(fileURLWithPath: directory).standardizedFileURL
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw fail(VoxError(.noInput, "\(directory): no such folder"))
        }
        let lock: OutputLock
        do { lock = try OutputLock(outputDirectory: root, shard: nil) } catch { throw fail(error) }
        defer { withExtendedLifetime(lock) {} }
        let cutoff = Date().addingTimeInterval(-(Self.seconds(olderThan) ?? 0))
        var freed: Int64 = 0, pruned = 0, held = 0, kept = 0
        for leftover in Self.folders(under: root, named: { $0.hasSuffix(Self.pruningSuffix) }) {
            // A prune killed between its rename and its delete: finish it, after giving the items
            // nested in it back to the folder they were in.
            guard !dryRun else { continue }
            let folder = leftover.deletingLastPathComponent().appendingPathComponent(
                String(leftover.lastPathComponent.dropLast(Self.pruningSuffix.count)))
            do {
                try Self.moveNestedItems(from: leftover, to: folder)
            } catch {
                throw fail(
                    VoxError(.cannotCreate, "\(leftover.path): cannot restore the items in it: \(describe(error))"))
            }
            try? FileManager.default.removeItem(at: leftover)
        }
        for manifestURL in Self.manifests(under: root) {
            let folder = manifestURL.deletingLastPathComponent()
            let name = String(folder.path.dropFirst(root.path.count + 1))
            guard var manifest = try? JSONDecoder().decode(ItemManifest.self, from: Data(contentsOf: manifestURL))
            else {
                printError("\(name): unreadable manifest, left as it is")
                continue
            }
            guard manifest.pruned == nil else { continue }
            guard let finished = ISO8601DateFormatter().date(from: manifest.finished), finished < cutoff else {
                kept += 1
                continue
            }
            let nested = Set(Self.nestedItems(in: folder))
            if Self.onLegalHold(folder, skipping: nested) {
                held += 1
                printLine("held    \(name) (legal hold)")
                continue
            }
            let bytes = Self.size(of: folder, skipping: nested)
            printLine(
                "\(dryRun ? "would prune" : "pruned") \(name) (finished \(manifest.finished), \(Self.megabytes(bytes)))"
            )
            pruned += 1
            freed += bytes
            guard !dryRun else { continue }
            do {
                // Whole or not at all: the folder moves aside in one rename, the items nested in
                // it (`a/b/` of `a/`) move back into a new folder, the tombstone manifest goes in
                // beside them, then the old folder is deleted. A prune killed on the way leaves
                // the folder aside, which the next prune restores the nested items from.
                let aside = folder.deletingLastPathComponent().appendingPathComponent(
                    folder.lastPathComponent + Self.pruningSuffix)
                try FileManager.default.moveItem(at: folder, to: aside)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                try Self.moveNestedItems(from: aside, to: folder)
                manifest.pruned = ISO8601DateFormatter().string(from: Date())
                manifest.artifacts = []
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                try AtomicFile.write(try encoder.encode(manifest), to: manifestURL)
                try FileManager.default.removeItem(at: aside)
            } catch {
                throw fail(VoxError(.cannotCreate, "\(name): cannot prune: \(describe(error))"))
            }
        }
        printError(
            "prune: \(dryRun ? "would free" : "freed") \(Self.megabytes(freed)) in \(pruned) "
                + "item\(pruned == 1 ? "" : "s"); \(held) on legal hold, \(kept) newer than \(olderThan)"
        )
    }

    static let pruningSuffix = ".voxpipe-pruning"

    /// The folders below `folder` (not itself) that are items of their own (hold a manifest),
    /// outermost only, as paths relative to it: what pruning `folder`'s item must leave alone.
    static func nestedItems(in folder: URL) -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: folder.path) else { return [] }
        var found: [String] = []
        for case let path as String in enumerator {
            var isDirectory: ObjCBool = false
            let url = folder.appendingPathComponent(path)
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue,
                FileManager.default.fileExists(atPath: url.appendingPathComponent(Ledger.manifestName).path)
            else { continue }
            found.append(path)
            enumerator.skipDescendants()
        }
        return found.sorted()
    }

    /// Moves each item nested in `aside` to the same place under `folder` (one rename each,
    /// making the folders between), unless something is there already.
    static func moveNestedItems(from aside: URL, to folder: URL) throws {
        for path in nestedItems(in: aside) {
            let target = folder.appendingPathComponent(path)
            guard !FileManager.default.fileExists(atPath: target.path) else { continue }
            try ItemOutputs.createFolder(target.deletingLastPathComponent())
            try FileManager.default.moveItem(at: aside.appendingPathComponent(path), to: target)
        }
    }

    static func megabytes(_ bytes: Int64) -> String { String(format: "%.1f MB", Double(bytes) / 1_000_000) }

    /// Item manifests under `root`, deepest path order.
    static func manifests(under root: URL) -> [URL] {
        guard let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else {
            return []
        }
        var found: [URL] = []
        for case let url as URL in enumerator
        where url.lastPathComponent == Ledger.manifestName && !url.path.contains(pruningSuffix) {
            found.append(url.standardizedFileURL)
        }
        return found.sorted { $0.path < $1.path }
    }

    static func folders(under root: URL, named match: (String) -> Bool) -> [URL] {
        guard let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isDirectoryKey])
        else { return [] }
        var found: [URL] = []
        for case let url as URL in enumerator where match(url.lastPathComponent) {
            found.append(url)
            enumerator.skipDescendants()
        }
        return found
    }

    /// Whether a report in the item's bags is on legal hold: the window's own reports where the
    /// bag is a report window, else any report of the sidecar.
    /// Items nested in `folder` (`skipping`, relative paths) are their own: not looked in.
    static func onLegalHold(_ folder: URL, skipping nested: Set<String> = []) -> Bool {
        guard let enumerator = FileManager.default.enumerator(atPath: folder.path) else { return false }
        for case let path as String in enumerator {
            if nested.contains(path) {
                enumerator.skipDescendants()
                continue
            }
            let url = folder.appendingPathComponent(path)
            guard url.lastPathComponent == "report.json", url.deletingLastPathComponent().lastPathComponent == "data"
            else { continue }
            guard let data = FileManager.default.contents(atPath: url.path),
                let report = (try? JSONValue.parse(data))?.objectValue
            else { continue }
            let sidecar = report["report"]?.objectValue ?? [:]
            let ids = Set(report["window"]?.objectValue?["reportIds"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            let reports = sidecar["reports"]?.arrayValue?.compactMap(\.objectValue) ?? [sidecar]
            for r in reports where ids.isEmpty || (r["reportId"]?.stringValue).map(ids.contains) == true {
                if r["legalHold"]?.boolValue == true || (reports.count > 1 && sidecar["legalHold"]?.boolValue == true) {
                    return true
                }
            }
        }
        return false
    }

    /// The bytes of the files in `folder`, leaving out the items nested in it (`skipping`).
    static func size(of folder: URL, skipping nested: Set<String> = []) -> Int64 {
        guard let enumerator = FileManager.default.enumerator(atPath: folder.path) else { return 0 }
        var total: Int64 = 0
        for case let path as String in enumerator {
            if nested.contains(path) {
                enumerator.skipDescendants()
                continue
            }
            let attributes = try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(path).path)
            if attributes?[.type] as? FileAttributeType == .typeRegular {
                total += (attributes?[.size] as? NSNumber)?.int64Value ?? 0
            }
        }
        return total
    }
}
