import Foundation
import Testing
import VoxTestSupport

@testable import VoxCore

@Suite struct ShardTests {
    func items(_ count: Int, seed: UInt64) -> [InputFile] {
        var rng = SplitMix(seed: seed)
        return (0..<count).map { i in
            let depth = Int(rng.next() % 3)
            let path = (0..<depth).map { _ in "d\(rng.next() % 5)" } + ["file-\(i)-\(rng.next() % 1000).wav"]
            let rel = path.joined(separator: "/")
            return InputFile(url: URL(fileURLWithPath: "/in/\(rel)"), relativePath: rel, outputName: rel)
        }
    }

    @Test(arguments: [1, 2, 3, 4, 7, 10, 16, 64])
    func shardsCoverEveryItemExactlyOnceInAnyListingOrder(count: Int) throws {
        // Four listings of 200 items a count (20 took 40 s of CPU in a debug build, finding nothing more).
        for seed in 0..<4 as Range<UInt64> {
            var all = items(200, seed: seed)
            var rng = SplitMix(seed: seed ^ 0xABCDEF)
            var seen: [String: Int] = [:]
            for k in 0..<count {
                // Every shard sees its own shuffle of the listing.
                all.shuffle(using: &rng)
                let shard = try Shard(index: k, count: count)
                for item in all where shard.contains(item) { seen[item.relativePath, default: 0] += 1 }
            }
            #expect(seen.count == Set(all.map(\.relativePath)).count)
            #expect(seen.values.allSatisfy { $0 == 1 })
        }
    }

    @Test func shardsAreRoughlyBalanced() throws {
        let all = items(4000, seed: 7)
        let counts = try (0..<4).map { k in all.filter(try Shard(index: k, count: 4).contains).count }
        #expect(counts.allSatisfy { $0 > 850 && $0 < 1150 })
    }

    @Test func parsingAndBounds() throws {
        #expect(try Shard.parse("2/5") == Shard(index: 2, count: 5))
        #expect(throws: VoxError.self) { try Shard.parse("5/5") }
        #expect(throws: VoxError.self) { try Shard.parse("1-4") }
        #expect(throws: VoxError.self) { try Shard.parse("0/0") }
    }

    @Test func schedulersNameTheShardThroughTheEnvironment() throws {
        #expect(try Shard.fromEnvironment([:], count: nil) == nil)
        #expect(
            try Shard.fromEnvironment(["JOB_COMPLETION_INDEX": "3", "VOXPIPE_SHARD_COUNT": "8"], count: nil)
                == Shard(index: 3, count: 8))
        #expect(try Shard.fromEnvironment(["JOB_COMPLETION_INDEX": "3"], count: 4) == Shard(index: 3, count: 4))
        #expect(throws: VoxError.self) { try Shard.fromEnvironment(["JOB_COMPLETION_INDEX": "3"], count: nil) }
        #expect(
            try Shard.fromEnvironment(
                ["SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "10"], count: nil)
                == Shard(index: 4, count: 10))
        #expect(
            try Shard.fromEnvironment(["AWS_BATCH_JOB_ARRAY_INDEX": "0", "VOXPIPE_SHARD_COUNT": "2"], count: nil)
                == Shard(index: 0, count: 2))
    }
}
