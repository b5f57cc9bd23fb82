import Foundation
import Testing
import VoxCore
import VoxTestSupport

/// OutputLock: one run per output folder (flock), shards side by side.
@Suite struct OutputLockTests {
    let pid = getpid()

    func lockFile(_ dir: URL) -> URL { dir.appendingPathComponent(".voxpipe.lock") }

    func busy(_ dir: URL, holder: String?) -> VoxError {
        VoxError(.locked, "another voxpipe run is using \(dir.path)\(holder.map { " (\($0))" } ?? ""); try again later")
    }

    @Test func theLockRecordsItsHoldersProcess() throws {
        let dir = temporaryDirectory()
        let lock = try OutputLock(outputDirectory: dir, shard: nil)
        #expect(try String(contentsOf: lockFile(dir), encoding: .utf8) == "pid \(pid)\n")
        withExtendedLifetime(lock) {}
    }

    @Test func aSecondLockOnTheFolderFailsAsLockedWithExit75() throws {
        let dir = temporaryDirectory()
        let lock = try OutputLock(outputDirectory: dir, shard: nil)
        let error = #expect(throws: busy(dir, holder: "pid \(pid)")) {
            try OutputLock(outputDirectory: dir, shard: nil)
        }
        #expect(error?.exitCode == 75)
        // A shard cannot join a folder an unsharded run holds.
        #expect(throws: busy(dir, holder: "pid \(pid)")) {
            try OutputLock(outputDirectory: dir, shard: try Shard(index: 0, count: 2))
        }
        withExtendedLifetime(lock) {}
    }

    @Test func theLockIsReleasedWhenItsObjectGoes() throws {
        let dir = temporaryDirectory()
        var lock: OutputLock? = try OutputLock(outputDirectory: dir, shard: nil)
        #expect(lock != nil)
        lock = nil
        let again = try OutputLock(outputDirectory: dir, shard: nil)
        withExtendedLifetime(again) {}
    }

    @Test func aLockFileLeftByADeadRunIsTakenOver() throws {
        // flock dies with its process; what stays is the file naming an old pid.
        let dir = temporaryDirectory()
        try Data("pid 4194303 (a run killed long ago)\n".utf8).write(to: lockFile(dir))
        let lock = try OutputLock(outputDirectory: dir, shard: nil)
        #expect(try String(contentsOf: lockFile(dir), encoding: .utf8) == "pid \(pid)\n")
        withExtendedLifetime(lock) {}
    }

    @Test func differentShardsShareTheFolderAndOneShardIsTakenOnce() throws {
        let dir = temporaryDirectory()
        let first = try OutputLock(outputDirectory: dir, shard: try Shard(index: 0, count: 2))
        let second = try OutputLock(outputDirectory: dir, shard: try Shard(index: 1, count: 2))
        #expect(
            try String(contentsOf: dir.appendingPathComponent(".voxpipe-shard-0-of-2.lock"), encoding: .utf8)
                == "pid \(pid)\n")
        #expect(throws: busy(dir, holder: "pid \(pid)")) {
            try OutputLock(outputDirectory: dir, shard: try Shard(index: 0, count: 2))
        }
        // Shards split differently are other locks.
        let other = try OutputLock(outputDirectory: dir, shard: try Shard(index: 0, count: 3))
        withExtendedLifetime((first, second, other)) {}
    }

    @Test func anUnshardedRunWaitsForShardsAndNamesNoStaleHolder() throws {
        let dir = temporaryDirectory()
        // An earlier unsharded run left its pid; the shards running now hold the folder shared.
        try Data("pid 4194303\n".utf8).write(to: lockFile(dir))
        let shard = try OutputLock(outputDirectory: dir, shard: try Shard(index: 1, count: 4))
        #expect(throws: busy(dir, holder: nil)) { try OutputLock(outputDirectory: dir, shard: nil) }
        withExtendedLifetime(shard) {}
    }

    @Test func aFailedShardLockLetsGoOfTheFolder() throws {
        let dir = temporaryDirectory()
        var held: OutputLock? = try OutputLock(outputDirectory: dir, shard: try Shard(index: 0, count: 2))
        #expect(throws: VoxError.self) { try OutputLock(outputDirectory: dir, shard: try Shard(index: 0, count: 2)) }
        #expect(held != nil)
        held = nil
        // Had the failed attempt kept its shared folder lock, this would be refused.
        let whole = try OutputLock(outputDirectory: dir, shard: nil)
        withExtendedLifetime(whole) {}
    }

    @Test func aFolderThatCannotHoldTheLockFileIsACannotCreateError() throws {
        let missing = temporaryDirectory().appendingPathComponent("missing")
        let noFolder = VoxError(
            .cannotCreate,
            "output folder \(missing.path) is not writable (cannot create .voxpipe.lock: No such file or directory)")
        let error = #expect(throws: noFolder) { try OutputLock(outputDirectory: missing, shard: nil) }
        #expect(error?.exitCode == 73)
        let readOnly = temporaryDirectory()
        let denied = VoxError(
            .cannotCreate,
            "output folder \(readOnly.path) is not writable (cannot create .voxpipe.lock: Permission denied)")
        try withoutWriteAccess(to: readOnly) {
            #expect(throws: denied) { try OutputLock(outputDirectory: readOnly, shard: nil) }
        }
    }
}
