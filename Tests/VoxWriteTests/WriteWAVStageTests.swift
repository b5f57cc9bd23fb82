import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxWrite

@Suite struct WriteWAVStageTests {
    let format = AudioFormat(sampleRate: 16000, channels: 2)

    func blocks(_ count: Int, frames: Int = 1000) -> [AudioBlock] {
        (0..<count).map { i in
            AudioBlock(
                format: format, samples: (0..<frames * 2).map { Float(($0 + i) % 200) / 400 - 0.25 },
                frameOffset: Int64(i * frames))
        }
    }

    @Test(arguments: ["pcm16", "pcm24", "float32"])
    func aStreamOfBlocksBecomesOneFile(encoding: String) async throws {
        let out = temporaryDirectory()
        let harness = try StageHarness(
            WriteWAVStage.self, id: "audio", options: ["encoding": .string(encoding)], outputDirectory: out)
        let input = blocks(5)
        let (artifacts, _) = try await harness.run(input)
        #expect(artifacts.map(\.path) == ["item/audio.wav"])
        let url = out.appendingPathComponent("item/audio.wav")
        let (readFormat, samples) = try await readAll(url)
        #expect(readFormat == format)
        #expect(samples.count == 10000)
        let tolerance: Float = encoding == "pcm16" ? 1.0 / 32767 : 1e-6
        #expect(zip(samples, input.flatMap(\.samples)).allSatisfy { abs($0 - $1) <= tolerance })
        let data = try Data(contentsOf: url)
        #expect(artifacts[0].bytes == Int64(data.count))
        #expect(artifacts[0].sha256 == Digest.hex(data))
    }

    @Test func pcm16HasOnlyFmtAndDataChunksAndIsDeterministic() async throws {
        var hashes: [String] = []
        for _ in 0..<2 {
            let out = temporaryDirectory()
            let (artifacts, _) = try await StageHarness(WriteWAVStage.self, id: "audio", outputDirectory: out).run(
                blocks(3))
            hashes.append(artifacts[0].sha256)
            let data = try Data(contentsOf: out.appendingPathComponent("item/audio.wav"))
            #expect(String(decoding: data[0..<4], as: UTF8.self) == "RIFF")
            #expect(String(decoding: data[12..<16], as: UTF8.self) == "fmt ")
            #expect(String(decoding: data[36..<40], as: UTF8.self) == "data")
            #expect(data.count == 44 + 3000 * 2 * 2)
        }
        #expect(hashes[0] == hashes[1])
    }

    @Test func samplesOutsideFullScaleClipInsteadOfWrapping() async throws {
        let out = temporaryDirectory()
        let block = AudioBlock(
            format: AudioFormat(sampleRate: 8000, channels: 1), samples: [1.5, -1.5, 0.5], frameOffset: 0)
        _ = try await StageHarness(WriteWAVStage.self, id: "audio", outputDirectory: out).run([block])
        let data = try Data(contentsOf: out.appendingPathComponent("item/audio.wav"))
        let values = data[44...].withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }.map(Int16.init(littleEndian:))
        #expect(values[0] >= 32766)
        #expect(values[1] <= -32767)
        #expect(abs(Int(values[2]) - 16384) <= 1)
    }

    @Test func chunksBecomeNumberedFiles() async throws {
        let out = temporaryDirectory()
        let mono = AudioFormat(sampleRate: 8000, channels: 1)
        let chunks = (0..<3).map {
            AudioChunk(
                format: mono, samples: [Float](repeating: 0.1, count: 800 * ($0 + 1)), start: Double($0),
                end: Double($0) + 0.1, index: $0, cut: .window)
        }
        let (artifacts, _) = try await StageHarness(WriteWAVStage.self, id: "turn", outputDirectory: out).run(chunks)
        #expect(artifacts.map(\.path) == ["item/turn-0001.wav", "item/turn-0002.wav", "item/turn-0003.wav"])
        let (_, third) = try await readAll(out.appendingPathComponent("item/turn-0003.wav"))
        #expect(third.count == 2400)
    }

    @Test func aDiscardedItemLeavesNoFiles() async throws {
        let out = temporaryDirectory()
        _ = try await StageHarness(WriteWAVStage.self, id: "audio", outputDirectory: out).run(blocks(2), commit: false)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("item").path)) == nil)
    }
}
