import Foundation
import Logging
import VoxCore

// What voxpipe prints: every line on stdout and stderr, and every log message, is redacted
// (`Secrets`) and escaped (`printable`) here, so no key leaks into a terminal or a CI log and no
// input name forges a line.

/// The secrets this process has loaded. The command line is the composition root: the one
/// registry is made here, handed to every stage in its context (`makeContext`), and consulted by
/// the stderr, stdout and log writers below and by the report writers.
let processSecrets = Secrets()

/// A line as voxpipe prints it: keys redacted, control characters escaped.
func safeLine(_ line: String) -> String { processSecrets.redact(printable(line)) }

/// A line of data on stdout (verify, join, dry-run), made safe (`safeLine`).
func printLine(_ line: String) { print(safeLine(line)) }

/// Report text (JSON lines, JUnit, metrics) with every key redacted.
func redacted(_ data: Data) -> Data { processSecrets.redact(data) }

/// swift-log's messages on stderr, one line each (`<time> <level> <label>: <metadata> <message>`),
/// redacted and escaped like every other line voxpipe prints.
struct ConsoleLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    init(label: String, level: Logger.Level) {
        self.label = label
        logLevel = level
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let fields = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let time = ISO8601DateFormatter().string(from: Date())
        let line = "\(time) \(event.level) \(label):\(fields.isEmpty ? "" : " " + fields) \(event.message)"
        FileHandle.standardError.write(Data((safeLine(line) + "\n").utf8))
    }
}
