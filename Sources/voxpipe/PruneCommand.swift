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
            // A prune killed between its rename and its delete: finish it.
            if !dryRun { try? FileManager.default.removeItem(at: leftover) }
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
            if Self.onLegalHold(folder) {
                held += 1
                printLine("held    \(name) (legal hold)")
                continue
            }
            let bytes = Self.size(of: folder)
            printLine(
                "\(dryRun ? "would prune" : "pruned") \(name) (finished \(manifest.finished), \(Self.megabytes(bytes)))"
            )
            pruned += 1
            freed += bytes
            guard !dryRun else { continue }
            do {
                // Whole or not at all: the folder moves aside in one rename, the tombstone
                // manifest goes into a new empty folder, then the old one is deleted.
                let aside = folder.deletingLastPathComponent().appendingPathComponent(
                    folder.lastPathComponent + Self.pruningSuffix)
                try FileManager.default.moveItem(at: folder, to: aside)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
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
    static func onLegalHold(_ folder: URL) -> Bool {
        guard let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else {
            return false
        }
        for case let url as URL in enumerator
        where url.lastPathComponent == "report.json" && url.deletingLastPathComponent().lastPathComponent == "data" {
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

    static func size(of folder: URL) -> Int64 {
        guard let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.fileSizeKey])
        else { return 0 }
        var total: Int64 = 0
        for case let url as URL in enumerator {
            total += Int64((try? url.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0)
        }
        return total
    }
}
