import Foundation
import Synchronization

/// True for the first caller of `claim()` only: a warning given once, a bootstrap done once.
public final class Once: Sendable {
    private let claimed = Mutex(false)

    public init() {}

    public func claim() -> Bool {
        claimed.withLock { claimed in
            defer { claimed = true }
            return !claimed
        }
    }
}
