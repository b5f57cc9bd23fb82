import Foundation
import Logging
import Synchronization

/// Log records kept in memory, for tests that assert what a stage logged.
public final class CapturedLogs: Sendable {
    /// One record: level, message and metadata (as text).
    public struct Record: Sendable, Equatable {
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]

        public init(level: Logger.Level, message: String, metadata: [String: String]) {
            self.level = level
            self.message = message
            self.metadata = metadata
        }
    }

    private let kept = Mutex<[Record]>([])

    public init() {}

    /// Every record, in order.
    public var records: [Record] { kept.withLock { $0 } }

    /// A logger that keeps its records here (every level).
    public func logger(label: String = "voxpipe.test") -> Logger {
        var logger = Logger(label: label) { _ in Handler(store: self) }
        logger.logLevel = .trace
        return logger
    }

    func append(_ record: Record) { kept.withLock { $0.append(record) } }

    struct Handler: LogHandler {
        let store: CapturedLogs
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var all = metadata
            if let extra = event.metadata { all.merge(extra) { $1 } }
            store.append(
                Record(level: event.level, message: event.message.description, metadata: all.mapValues { "\($0)" }))
        }
    }
}
