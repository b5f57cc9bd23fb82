import Foundation
import Testing
import VoxTestSupport

/// The report of a diarized run: each speaker's talk time and turns in the item's line, as
/// `voxpipe report` shows them, on the demo's lesson of two voices (A B A B A).
@Suite(.needs(.diarizationModels), .startsProcess("the voxpipe binary")) struct SpeakerReportTests {
    @Test func theReportLineGivesEachSpeakersTalkTimeAndTurnsAndVoxpipeReportShowsThem() throws {
        let dir = temporaryDirectory()
        // The demo's turns stage (Pipelines/lesson-speakers.json), without Whisper.
        let spec = try writeSpec(
            """
            {"stages": [{"id": "decode", "kind": "decode"},
              {"id": "mono16k", "kind": "resample", "rate": 16000, "channels": 1},
              {"id": "turns", "kind": "chunk", "mode": "speakers", "speakers": 2, "windowShift": 0.1},
              {"id": "audio", "kind": "write-wav"}]}
            """, in: dir)
        let input = packageRoot.appendingPathComponent("Samples/speakers/lesson-two-voices.flac")
        let report = dir.appendingPathComponent("report.jsonl")
        let run = try voxpipe([
            "run", spec.path, input.path, "-o", dir.appendingPathComponent("out").path, "--report", report.path,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let line = try String(contentsOf: report, encoding: .utf8)
        #expect(
            line.contains(
                #""speakers":[{"seconds":7.054,"speaker":"Speaker 1","turns":3},"#
                    + #"{"seconds":8.674,"speaker":"Speaker 2","turns":2}],"status":"done"}"#), "\(line)")
        let shown = try voxpipe(["report", report.path])
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(
            shown.stdout.hasSuffix(
                "speakers:\n  lesson-two-voices: Speaker 1 7.1 s in 3 turns, Speaker 2 8.7 s in 2 turns\n"),
            "\(shown.stdout)")
    }
}
