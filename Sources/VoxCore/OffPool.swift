import Foundation

/// Runs blocking work (a C library call that takes seconds) on a thread of its own and waits for
/// it without holding a thread of Swift's cooperative pool, so other stages and tests keep moving.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}
