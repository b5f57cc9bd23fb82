import Foundation

/// Heavy engines (a Whisper model) loaded once and shared by every stage instance that asks
/// with the same key: one per run, per server, or per test process. A stage reaches it through
/// `StageContext.engines`; loading happens at the first ask (a stage's `prepare`), never at
/// creation, so a run that plans but never prepares loads nothing.
public final class EngineCache: @unchecked Sendable {
    private let lock = NSLock()
    private var engines: [String: any Sendable] = [:]
    private var loadCount = 0

    public init() {}

    /// The engine stored under `key`, loading it with `load` the first time. A failed load is
    /// not stored: the next ask tries again (and reports the same error).
    public func engine<E: Sendable>(_ key: String, load: () throws -> E) throws -> E {
        try lock.withLock {
            if let engine = engines[key] as? E { return engine }
            let engine = try load()
            engines[key] = engine
            loadCount += 1
            return engine
        }
    }

    /// How many engines this cache has loaded.
    public var loads: Int { lock.withLock { loadCount } }
}
