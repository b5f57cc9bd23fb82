import Foundation

/// One shard of a batch: the items whose stable hash (of their path relative to the input root,
/// never of listing order) falls in shard `index` of `count`. This is how voxpipe runs as a
/// Kubernetes Indexed Job, a Slurm array or an AWS Batch array job.
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    public let index: Int
    public let count: Int

    public init(index: Int, count: Int) throws {
        guard count >= 1 else { throw VoxError(.usage, "shard count must be at least 1, got \(count)") }
        guard (0..<count).contains(index) else {
            throw VoxError(.usage, "shard index \(index) is outside 0…\(count - 1)")
        }
        self.index = index
        self.count = count
    }

    public var description: String { "\(index)/\(count)" }

    /// Parses `K/N`.
    public static func parse(_ text: String) throws -> Shard {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let k = Int(parts[0]), let n = Int(parts[1]) else {
            throw VoxError(.usage, "--shard expects K/N (for example 0/4), got \"\(text)\"")
        }
        return try Shard(index: k, count: n)
    }

    /// The shard a scheduler gave this process, when none was named on the command line:
    /// JOB_COMPLETION_INDEX (Kubernetes Indexed Job; count from `count` or VOXPIPE_SHARD_COUNT),
    /// SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT (offset by SLURM_ARRAY_TASK_MIN), or
    /// AWS_BATCH_JOB_ARRAY_INDEX (count from `count` or VOXPIPE_SHARD_COUNT). Nil when none is set.
    public static func fromEnvironment(_ env: [String: String], count: Int?) throws -> Shard? {
        func number(_ name: String) throws -> Int? {
            guard let text = env[name], !text.isEmpty else { return nil }
            guard let n = Int(text) else { throw VoxError(.usage, "\(name)=\(text) is not a number") }
            return n
        }
        let declaredCount = try count ?? number("VOXPIPE_SHARD_COUNT")
        if let index = try number("JOB_COMPLETION_INDEX") {
            guard let n = declaredCount else {
                throw VoxError(
                    .usage,
                    "JOB_COMPLETION_INDEX is set but not the shard count: pass --shard-count N or set "
                        + "VOXPIPE_SHARD_COUNT (the Job's completions)"
                )
            }
            return try Shard(index: index, count: n)
        }
        if let id = try number("SLURM_ARRAY_TASK_ID") {
            let min = try number("SLURM_ARRAY_TASK_MIN") ?? 0
            guard let n = try declaredCount ?? number("SLURM_ARRAY_TASK_COUNT") else {
                throw VoxError(.usage, "SLURM_ARRAY_TASK_ID is set but not SLURM_ARRAY_TASK_COUNT")
            }
            return try Shard(index: id - min, count: n)
        }
        if let index = try number("AWS_BATCH_JOB_ARRAY_INDEX") {
            guard let n = declaredCount else {
                throw VoxError(
                    .usage,
                    "AWS_BATCH_JOB_ARRAY_INDEX is set but not the shard count: pass --shard-count N or set "
                        + "VOXPIPE_SHARD_COUNT (the array size)"
                )
            }
            return try Shard(index: index, count: n)
        }
        return nil
    }

    /// Whether this shard takes the item.
    public func contains(_ item: InputFile) -> Bool { Self.bucket(of: item.relativePath, count: count) == index }

    static func bucket(of relativePath: String, count: Int) -> Int {
        let d = Digest(.sha256)
        d.update(Data(relativePath.utf8))
        let hex = d.finalizeHex()
        let value = UInt64(hex.prefix(16), radix: 16) ?? 0
        return Int(value % UInt64(count))
    }
}
