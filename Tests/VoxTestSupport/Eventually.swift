import Foundation

/// Whether `condition` holds within `looks` looks, `every` apart (by default ten minutes' worth of
/// 10-ms sleeps: a limit that only ends a test whose condition never comes). The limit counts
/// sleeps, not wall time: when the whole suite holds the test process's few pool threads for
/// minutes, the looks wait with everything else, so a condition that needs another task to run
/// is not given up on before that task had its turn.
public func eventually(
    looks: Int = 60_000, every interval: Duration = .milliseconds(10), _ condition: () async throws -> Bool
) async throws -> Bool {
    for _ in 0..<looks {
        if try await condition() { return true }
        try await Task.sleep(for: interval)
    }
    return try await condition()
}

/// `eventually` for a thread that blocks (a C call's stand-in on a blocking executor's thread):
/// whether `condition` holds within `looks` looks, 1 ms apart (by default ten minutes' worth). As
/// there, the limit counts sleeps, not wall time, and only ends a test whose condition never comes.
public func blockUntil(looks: Int = 600_000, _ condition: () -> Bool) -> Bool {
    for _ in 0..<looks {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}
