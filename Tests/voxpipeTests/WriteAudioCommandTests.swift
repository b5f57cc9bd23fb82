import Foundation
import Testing
import VoxTestSupport

@Suite(.startsProcess("the voxpipe binary")) struct WriteAudioCommandTests {
    @Test func messageChunksSplitAnM4AReplyThatJoinsBackByteForByte() throws {
        let dir = temporaryDirectory()
        let spec = try writeSpec(
            #"""
            {"stages": [
              {"id": "decode", "kind": "decode"},
              {"id": "reply", "kind": "write-audio", "format": "m4a", "bitrate": 64},
              {"id": "messages", "kind": "write-message-chunks", "include": ".m4a", "bytes": 4096}
            ]}
            """#, in: dir)
        let out = dir.appendingPathComponent("out")
        let sample = packageRoot.appendingPathComponent("Samples/speech-en-22k-mono.wav")
        let run = try voxpipe(["run", spec.path, sample.path, "-o", out.path])
        #expect(run.status == 0, "\(run.stderr)")
        let m4a = out.appendingPathComponent("speech-en-22k-mono/reply.m4a")
        let index = out.appendingPathComponent("speech-en-22k-mono/messages/reply.m4a.index.json")
        let parts = try FileManager.default.contentsOfDirectory(
            atPath: index.deletingLastPathComponent().path
        ).filter { !$0.hasSuffix(".json") }
        #expect(parts.count > 1)
        let joined = dir.appendingPathComponent("joined.m4a")
        #expect(try voxpipe(["join", index.path, "-o", joined.path]).status == 0)
        #expect(try sha256(joined) == sha256(m4a))
    }

    @Test func writeWAVStaysTheNameOfWriteAudioWithFormatWAV() throws {
        let dir = temporaryDirectory()
        let sample = packageRoot.appendingPathComponent("Samples/speech-en-22k-mono.wav")
        var hashes: [String] = []
        for kind in [#""kind": "write-wav""#, #""kind": "write-audio", "format": "wav""#] {
            let spec = try writeSpec(
                #"{"stages": [{"id": "decode", "kind": "decode"}, {"id": "audio", "# + kind + "}]}", in: dir)
            let out = dir.appendingPathComponent("out-\(hashes.count)")
            #expect(try voxpipe(["run", spec.path, sample.path, "-o", out.path]).status == 0)
            hashes.append(try sha256(out.appendingPathComponent("speech-en-22k-mono/audio.wav")))
        }
        #expect(hashes[0] == hashes[1])
        let refused = try voxpipe([
            "validate",
            try writeSpec(
                #"{"stages": [{"id": "d", "kind": "decode"}, {"id": "a", "kind": "write-wav", "format": "mp3"}]}"#,
                in: dir, name: "bad.json"
            ).path,
        ])
        #expect(refused.status == 65)
        #expect(refused.stderr.contains("stages[1].format: unknown option"), "\(refused.stderr)")
    }
}
