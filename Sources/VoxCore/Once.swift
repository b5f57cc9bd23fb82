import Foundation

/// True for the first caller of `claim()` only: a warning given once, a bootstrap done once.
public final class Once: @unchecked Sendable {
    private let lock = NSLock()
    private var claimed = false

    public init() {}

    public func claim() -> Bool {
        lock.withLock {
            defer { claimed = true }
            return !claimed
        }
    }
}
