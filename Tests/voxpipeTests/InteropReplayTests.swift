import Foundation
import Testing
import VoxTestSupport

/// voxpipe's `openai` transcribe provider against the answers real third-party servers gave
/// (`make interop` records them into Tests/Fixtures/interop/<server>/ with --http-record): the
/// same requests must be made and read into the transcripts the live run wrote. Runs where the
/// servers are not installed, so CI checks the real wire format without them.
@Suite(.needs(.librivox))
struct InteropReplayTests {
    static let recordings = packageRoot.appendingPathComponent("Tests/Fixtures/interop")

    static var servers: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: recordings.path)) ?? []).sorted()
    }

    @Test func recordingsExistForTheServersTried() {
        #expect(Self.servers == ["faster-whisper-server", "whisper.cpp-server"], "\(Self.servers)")
    }

    @Test(.startsProcess("the voxpipe binary"), arguments: servers)
    func aRecordedServerReplaysIntoTheSameTranscripts(server: String) throws {
        let folder = Self.recordings.appendingPathComponent(server)
        let dir = temporaryDirectory()
        // The spec scripts/interop.sh used; the base URL's host and port are not part of a
        // recording's key, and a replay asks no probe (make interop's live run did).
        let spec = try writeSpec(
            """
            { "name": "interop", "stages": [
              { "id": "decode", "kind": "decode" },
              { "id": "mono16k", "kind": "resample", "rate": 16000, "channels": 1 },
              { "id": "turns", "kind": "chunk", "mode": "voice", "maxSeconds": 30, "padding": 0.1 },
              { "id": "asr", "kind": "transcribe", "provider": { "name": "openai", "baseURL": "http://127.0.0.1:9/v1",
                "language": "en", "apiKeyEnv": "VOXPIPE_INTEROP_KEY", "timeout": 600, "lowSpeedSeconds": 600,
                "maxRetries": 1, "probe": "" } },
              { "id": "transcript", "kind": "write-transcript", "formats": ["txt", "json"] } ] }
            """, in: dir)
        let out = dir.appendingPathComponent("out")
        let result = try voxpipe([
            "run", spec.path, InstalledFixture.librivox.url.path, "-o", out.path, "--http-replay", folder.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let expected = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".txt") }
        #expect(expected.count == 5)
        for name in expected {
            let item = (name as NSString).deletingPathExtension
            let got = try String(
                contentsOf: out.appendingPathComponent("\(item)/transcript.txt"), encoding: .utf8)
            #expect(got == (try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)), "\(item)")
            let json =
                try JSONSerialization.jsonObject(
                    with: Data(contentsOf: out.appendingPathComponent("\(item)/transcript.json"))) as? [String: Any]
            let segments = json?["segments"] as? [[String: Any]] ?? []
            #expect(!segments.isEmpty && segments.allSatisfy { $0["start"] is Double && $0["end"] is Double })
        }
    }
}
