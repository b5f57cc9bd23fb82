import ArgumentParser
import Foundation
import Logging
import VoxCore

@main
struct Voxpipe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "voxpipe",
        abstract: "Batch audio pipelines: decode, resample, chunk, transcribe, reply, speak, write.",
        discussion: """
            A JSON job spec names a graph of stages; `voxpipe run` streams every input file through it. \
            Exit status: 0 all items done; 1 some items failed; 64 usage; 65 invalid spec; 66 no input; \
            69 a provider or model unavailable; 70 internal error; 73 output cannot be created; \
            75 output folder locked (try later); 130/143 stopped by SIGINT/SIGTERM.
            """,
        version: voxpipeVersion,
        subcommands: [
            RunCommand.self, CheckCommand.self, ReportCommand.self, ValidateCommand.self, PruneCommand.self,
            StagesCommand.self, SchemaCommand.self, VerifyCommand.self, JoinCommand.self, ServeCommand.self,
            AgoraTokenCommand.self, ThreadsCommand.self,
        ]
    )

    /// glibc's heap bounded (`Heap.bound`) before anything runs: diarizing 3 hours peaked 24% over
    /// 10 minutes without it (559 MB and 450 MB; AMD EPYC, 2 cores, bench/diarization.sh).
    static func main() async {
        Heap.bound()
        await main(nil)
    }
}

/// voxpipe's version: part of every item key.
let voxpipeVersion = "0.1.0"

/// Prints `voxpipe: error: …` on stderr and exits with the error's status.
func fail(_ error: any Error) -> ExitCode {
    printError("error: \(describe(error))")
    return ExitCode(exitCode(for: error))
}

/// A message on stderr, redacted and escaped (`safeLine`).
func printError(_ message: String) {
    FileHandle.standardError.write(Data("voxpipe: \(safeLine(message))\n".utf8))
}

/// Sends swift-log output to stderr (data goes to stdout), at the level VOXPIPE_LOG_LEVEL names.
/// swift-log takes one bootstrap per process and traps on a second; `check` runs a second spec
/// (what a recogniser hears in spoken outputs) after its own, so later calls do nothing.
func bootstrapLogging(verbose: Bool) {
    guard loggingBootstrap.claim() else { return }
    let level =
        verbose
        ? Logger.Level.debug
        : (ProcessInfo.processInfo.environment["VOXPIPE_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning)
    LoggingSystem.bootstrap { label in ConsoleLogHandler(label: label, level: level) }
}

/// Whether logging has been bootstrapped in this process (swift-log's own state is process-wide too).
private let loggingBootstrap = Once()

/// Loads and checks a spec; with `requireOutputs`, a spec with no writer is an error too.
func loadPlan(_ path: String, requireOutputs: Bool = false) throws -> Plan {
    let url = URL(fileURLWithPath: path)
    let plan = try Planner.load(specAt: url, registry: makeRegistry())
    do {
        if requireOutputs { try plan.requireOutputs() }
    } catch let error as any CategorizedError {
        throw error.reworded { "\(url.path): \($0)" }
    }
    return plan
}

struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Type-check a spec and print its plan; writes nothing."
    )

    @Argument(help: "The job spec (JSON).") var spec: String
    @Flag(help: "Accept a spec that writes nothing (no write-* stage), as `run --no-outputs` does.")
    var noOutputs = false

    func run() throws {
        do {
            let plan = try loadPlan(spec, requireOutputs: !noOutputs)
            print(plan.describe())
        } catch {
            throw fail(error)
        }
    }
}

struct StagesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stages",
        abstract: "List stage kinds with their input and output types, options and defaults."
    )

    @Argument(help: "Show only this kind.") var kind: String?
    @Option(
        help: "Print a docs table in Markdown instead: kinds (the overview) or reference (every option and provider)."
    )
    var markdown: StagesMarkdown.Block?
    @Option(
        name: .customLong("update-readme"),
        help: "Rewrite the generated blocks of this Markdown file (make readme: docs/reference.md).")
    var readme: String?
    @Flag(help: "With --update-readme: change nothing, exit 1 if the file's blocks are out of date.") var check = false

    func validate() throws {
        if check && readme == nil { throw ValidationError("--check needs --update-readme FILE") }
        if kind != nil && (markdown != nil || readme != nil) {
            throw ValidationError("a kind goes with the plain listing only")
        }
    }

    func run() throws {
        let registry = makeRegistry()
        if let markdown {
            print(StagesMarkdown.render(markdown, registry: registry))
            return
        }
        if let readme {
            do {
                let url = URL(fileURLWithPath: readme)
                let text = try String(contentsOf: url, encoding: .utf8)
                let updated = try StagesMarkdown.update(text, file: readme, registry: registry)
                guard updated != text else { return }
                if check {
                    printError("error: \(readme): the generated tables are out of date; run `make readme`")
                    throw ExitCode(1)
                }
                try AtomicFile.write(Data(updated.utf8), to: url)
            } catch let error as ExitCode {
                throw error
            } catch {
                throw fail(error)
            }
            return
        }
        var kinds = registry.kinds
        if let kind {
            guard let found = registry[kind] else {
                throw fail(
                    VoxError(
                        .usage,
                        "unknown stage kind \"\(kind)\" (known: \(registry.kinds.map(\.kind).joined(separator: ", ")))")
                )
            }
            kinds = [found]
        }
        print(kinds.map(describeKind).joined(separator: "\n\n"))
    }

    func describeKind(_ kind: StageKind) -> String {
        var lines = ["\(kind.kind): \(kind.summary)", "  takes \(kind.inputDescription), gives \(kind.output)"]
        if kind.options.isEmpty {
            lines.append("  no options")
        } else {
            lines.append("  options:")
            lines.append(contentsOf: describeOptions(kind.options, indent: "    "))
        }
        return lines.joined(separator: "\n")
    }

    func describeOptions(_ options: [OptionSpec], indent: String) -> [String] {
        var lines: [String] = []
        let width = options.map(\.name.count).max() ?? 0
        for option in options {
            let defaultText =
                option.defaultValue.map { " (default \(String(decoding: $0.canonicalData(), as: UTF8.self)))" } ?? ""
            lines.append(
                "\(indent)\(option.name.padding(toLength: width, withPad: " ", startingAt: 0))  "
                    + "\(option.typeDescription)\(defaultText)"
            )
            lines.append("\(indent)\(String(repeating: " ", count: width))  \(option.help)")
            if case .provider(let providers) = option.kind {
                for provider in providers {
                    lines.append("\(indent)  provider \"\(provider.name)\": \(provider.summary)")
                    lines.append(contentsOf: describeOptions(provider.options, indent: indent + "    "))
                }
            }
        }
        return lines
    }
}

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the JSON Schema of job specs (Pipelines/schema.json)."
    )

    func run() throws {
        FileHandle.standardOutput.write(SpecSchema.make(makeRegistry()).prettyData())
        FileHandle.standardOutput.write(Data("\n".utf8))
    }
}
