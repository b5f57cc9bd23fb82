import ArgumentParser
import Foundation
import Logging
import VoxCore
import VoxModeration
import VoxWrite

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check evidence bundles (BagIt): complete and valid; one line per bag on stdout.",
        discussion:
            "A BUNDLE may also be a folder holding bags (an output folder): every bag below it is checked. Exit 0 "
            + "when all pass, 1 otherwise."
    )

    @Argument(help: "Bags, or folders holding bags.") var bundles: [String]
    @Option(
        help: ArgumentHelp(
            "Also re-derive data/evidence.wav from data/original.* with this spec and check it is byte-identical.",
            valueName: "SPEC")) var rebuild: String?

    func run() async throws {
        bootstrapLogging(verbose: false)
        var bags: [URL] = []
        for path in bundles {
            let url = URL(fileURLWithPath: path).standardizedFileURL
            guard FileManager.default.fileExists(atPath: url.path) else {
                throw fail(VoxError(.noInput, "\(path): no such file or folder"))
            }
            bags += findBags(url)
        }
        guard !bags.isEmpty else {
            throw fail(
                VoxError(.noInput, "no BagIt bags (folders with bagit.txt) in \(bundles.joined(separator: ", "))"))
        }
        var plan: Plan?
        if let rebuild {
            do { plan = try loadPlan(rebuild) } catch { throw fail(error) }
        }
        var failed = 0
        // One runner rebuilds every bag (its models loaded once), in one work folder.
        let rebuilder = plan.map { Rebuilder(plan: $0) }
        defer { rebuilder?.remove() }
        for (index, bag) in bags.enumerated() {
            var problems = BagIt.verify(bag: bag)
            if problems.isEmpty, let rebuilder {
                problems += await rebuilder.problems(bag: bag, index: index)
            }
            if problems.isEmpty {
                printLine("OK    \(bag.path)\(plan == nil ? "" : " (rebuilt: evidence.wav identical)")")
            } else {
                failed += 1
                printLine("FAIL  \(bag.path): \(problems.joined(separator: "; "))")
            }
        }
        if failed > 0 { throw ExitCode(1) }
    }

    func findBags(_ url: URL) -> [URL] {
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("bagit.txt").path) { return [url] }
        guard let enumerator = FileManager.default.enumerator(at: url, includingPropertiesForKeys: nil) else {
            return []
        }
        var found: [URL] = []
        for case let file as URL in enumerator where file.lastPathComponent == "bagit.txt" {
            found.append(file.deletingLastPathComponent().standardizedFileURL)
        }
        return found.sorted { $0.path < $1.path }
    }
}

/// Rebuilds bags' evidence with one runner, prepared at the first bag that needs it (so its
/// models load once however many bags are verified), each bag's item in a folder of its own.
final class Rebuilder {
    let plan: Plan
    let work = FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-rebuild-\(UUID().uuidString)")
    private var runner: Runner?

    init(plan: Plan) { self.plan = plan }

    func remove() { try? FileManager.default.removeItem(at: work) }

    var out: URL { work.appendingPathComponent("out") }

    func prepared() async throws -> Runner {
        if let runner { return runner }
        let context = makeContext(
            plan: plan, fingerprint: Ledger.fingerprint(plan: plan, version: voxpipeVersion),
            logger: Logger(label: "voxpipe"))
        let prepared = try await Runner.prepare(
            plan, options: RunOptions(outputDirectory: out, jobs: 1), context: context)
        runner = prepared
        return prepared
    }

    /// Runs the spec again on the bag's original (with its report as the sidecar and its track)
    /// and compares the new evidence.wav byte for byte.
    func problems(bag: URL, index: Int) async -> [String] {
        let layout = EvidenceBag(root: bag)
        guard let originalURL = layout.existingOriginal() else {
            return ["data/original.*: missing, nothing to rebuild from"]
        }
        let original = originalURL.lastPathComponent
        guard let reportData = FileManager.default.contents(atPath: layout.report.path),
            let report = (try? JSONValue.parse(reportData))?.objectValue
        else { return ["data/report.json: missing or not JSON"] }
        guard let evidenceNode = plan.nodes.first(where: { $0.kind.kind == WriteEvidenceStage.kind }) else {
            return ["the spec has no write-evidence stage"]
        }
        let input = work.appendingPathComponent("in/\(index)")
        defer { try? FileManager.default.removeItem(at: input) }
        do {
            try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
            let upload = input.appendingPathComponent(original)
            try FileManager.default.copyItem(at: originalURL, to: upload)
            if let fields = report["report"], fields != .null {
                try fields.prettyData().write(to: upload.deletingPathExtension().appendingPathExtension("json"))
            }
            var item = InputFile(url: upload, relativePath: original, outputName: "rebuilt-\(index)")
            if let track = report["track"]?.objectValue, let channel = track["channel"]?.numberValue {
                item = item.forSeat(
                    Seat(
                        channel: Int(channel), name: track["name"]?.stringValue ?? "track",
                        user: track["user"]?.stringValue))
            }
            if let window = report["window"]?.objectValue,
                let ids = window["reportIds"]?.arrayValue?.compactMap(\.stringValue),
                let end = window["reportedMoment"]?.numberValue, let seconds = window["requestedSeconds"]?.numberValue
            {
                item = item.forWindow(
                    ReportWindow(
                        name: bag.deletingLastPathComponent().lastPathComponent, reportIDs: ids, end: end,
                        seconds: seconds))
            }
            let result = await (try await prepared()).process(item)
            guard result.status == .done else { return ["rebuild failed: \(result.failure?.description ?? "unknown")"] }
            let rebuilt = EvidenceBag(outputDirectory: out, itemFolder: item.outputName, stageID: evidenceNode.id)
                .evidence
            guard let a = FileManager.default.contents(atPath: rebuilt.path),
                let b = FileManager.default.contents(atPath: layout.evidence.path)
            else {
                return ["rebuild wrote no data/evidence.wav"]
            }
            return a == b
                ? []
                : ["data/evidence.wav: differs from the one rebuilt from \(original) (\(a.count) vs \(b.count) bytes)"]
        } catch {
            return ["rebuild failed: \(describe(error))"]
        }
    }
}

struct JoinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Reassemble a file split by write-message-chunks, checking every part and the whole."
    )

    @Argument(help: "The index file (<name>.index.json).") var index: String
    @Option(name: [.short, .long], help: "Where to write the file (default: its name, beside the index).") var output:
        String?
    @Flag(help: "Replace an existing output file.") var force = false

    func run() throws {
        do {
            let url = URL(fileURLWithPath: index)
            guard FileManager.default.fileExists(atPath: url.path) else {
                throw VoxError(.noInput, "\(index): no such index file")
            }
            let (parsed, data) = try WriteMessageChunksStage.join(index: url)
            let target = WriteMessageChunksStage.joinTarget(
                index: url, name: parsed.name, output: output.map { URL(fileURLWithPath: $0) })
            if FileManager.default.fileExists(atPath: target.path) && !force {
                throw VoxError(.cannotCreate, "\(target.path) exists; pass --force to replace it")
            }
            try AtomicFile.write(data, to: target)
            printLine("joined \(parsed.count) parts into \(target.path) (\(data.count) bytes, sha256 \(parsed.sha256))")
        } catch let error as WriteError {
            printError("error: \(index): \(error.message); nothing written")
            throw ExitCode(1)
        } catch {
            throw fail(error)
        }
    }
}
