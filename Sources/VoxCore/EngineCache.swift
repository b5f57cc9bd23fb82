import Foundation
import Synchronization

/// Heavy engines (a Whisper model) loaded once and shared by every stage instance that asks
/// with the same key: one per run, per server, or per test process. A stage reaches it through
/// `StageContext.engines`; loading happens at the first ask (a stage's `prepare`), never at
/// creation, so a run that plans but never prepares loads nothing.
public final class EngineCache: Sendable {
    private let state = Mutex<(engines: [String: any Sendable], loads: Int)>(([:], 0))

    public init() {}

    /// The engine stored under `key`, loading it with `load` the first time. A failed load is
    /// not stored: the next ask tries again (and reports the same error).
    public func engine<E: Sendable>(_ key: String, load: () throws -> E) throws -> E {
        try state.withLock { state in
            if let engine = state.engines[key] as? E { return engine }
            let engine = try load()
            state.engines[key] = engine
            state.loads += 1
            return engine
        }
    }

    /// How many engines this cache has loaded.
    public var loads: Int { state.withLock { $0.loads } }
}
