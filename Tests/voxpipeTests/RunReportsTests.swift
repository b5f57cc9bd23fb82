import Foundation
import Testing
import VoxCore

@testable import voxpipe

#if canImport(FoundationXML)
import FoundationXML
#endif

/// RunReports: the JSON-lines report, Prometheus metrics and JUnit XML a run writes.
@Suite struct RunReportsTests {
    static func item(_ path: String) -> InputFile {
        InputFile(
            url: URL(fileURLWithPath: "/in/\(path)"), relativePath: path,
            outputName: (path as NSString).deletingPathExtension)
    }

    /// One item of each status.
    static let results = [
        ItemResult(
            item: item("a.wav"), status: .done, reason: "not done before",
            artifacts: [Artifact(path: "a/audio.wav", bytes: 4, sha256: "abc")],
            seconds: 2.5, audioSeconds: 10),
        ItemResult(item: item("b.wav"), status: .skipped, reason: "done before", seconds: 0.0004),
        ItemResult(
            item: item("sub/c <&>.wav"), status: .failed,
            failure: StageFailure(stageID: "decode", kind: "decode", reason: "not audio"), seconds: 0.12345),
    ]

    func reports(_ results: [ItemResult] = results, plan: String = "batch", interruptedBy: Int32? = nil) -> RunReports {
        RunReports(
            planName: plan, results: results, wallSeconds: 3.25, outputDirectory: URL(fileURLWithPath: "/out"),
            interruptedBy: interruptedBy)
    }

    // MARK: JSON lines

    @Test func theReportHasOneSortedJSONLinePerItem() {
        let text = String(decoding: reports().jsonLines(), as: UTF8.self)
        #expect(
            text == """
                {"artifacts":[{"bytes":4,"path":"a/audio.wav","sha256":"abc"}],"audioSeconds":10,\
                "input":"/in/a.wav","output":"a",\
                "path":"a.wav","realTimeFactor":0.25,"reason":"not done before","seconds":2.5,"status":"done"}
                {"artifacts":[],"input":"/in/b.wav","output":"b",\
                "path":"b.wav","reason":"done before","seconds":0,"status":"skipped"}
                {"artifacts":[],"error":{"kind":"decode","reason":"not audio","stage":"decode"},\
                "input":"/in/sub/c <&>.wav","output":"sub/c <&>",\
                "path":"sub/c <&>.wav","seconds":0.123,"status":"failed"}

                """)
    }

    @Test func secondsAreRoundedAndTheRealTimeFactorNeedsAudio() throws {
        let results = [
            ItemResult(item: Self.item("x.wav"), status: .done, seconds: 1.23456, audioSeconds: 3.33333),
            ItemResult(item: Self.item("y.wav"), status: .done, seconds: 1, audioSeconds: 0),
            ItemResult(item: Self.item("z.wav"), status: .done, seconds: 1),
        ]
        let lines = try reports(results).jsonLines().split(separator: 0x0A).map {
            try #require(try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any])
        }
        #expect(lines.count == 3)
        #expect(lines[0]["seconds"] as? Double == 1.235)
        #expect(lines[0]["audioSeconds"] as? Double == 3.333)
        #expect(lines[0]["realTimeFactor"] as? Double == 0.3704)  // 1.23456 / 3.33333, to 4 places
        #expect(lines[1]["audioSeconds"] as? Double == 0)
        #expect(lines[1]["realTimeFactor"] == nil)
        #expect(lines[2]["audioSeconds"] == nil)
        #expect(lines[2]["realTimeFactor"] == nil)
    }

    @Test func aRunWithNoItemsWritesAnEmptyReport() {
        #expect(reports([]).jsonLines().isEmpty)
    }

    // MARK: Prometheus

    /// The metrics text with the run's own timestamp (checked to lie between `from` and `to`)
    /// replaced by NOW.
    func metrics(_ reports: RunReports, previous: String?) throws -> String {
        let from = Date().timeIntervalSince1970
        let text = reports.prometheus(previous: previous)
        let to = Date().timeIntervalSince1970
        var lines = text.components(separatedBy: "\n")
        for (i, line) in lines.enumerated()
        where line.hasPrefix("voxpipe_last_run_timestamp_seconds{")
            || (line.hasPrefix("voxpipe_last_success_timestamp_seconds{") && previous == nil)
        {
            let value = try #require(line.split(separator: " ").last.flatMap { Double($0) }, "\(line)")
            #expect(value >= from.rounded(.down) && value <= to.rounded(.up), "\(line)")
            let space = try #require(line.lastIndex(of: " "))
            lines[i] = line[...space] + "NOW"
        }
        return lines.joined(separator: "\n")
    }

    static func metricsText(
        job: String, done: Int, skipped: Int, failed: Int, audio: String, success: Int, lastSuccess: String?
    ) -> String {
        var text = """
            # HELP voxpipe_items Items in the last run, by status.
            # TYPE voxpipe_items gauge
            voxpipe_items{job_name="\(job)",status="done"} \(done)
            voxpipe_items{job_name="\(job)",status="skipped"} \(skipped)
            voxpipe_items{job_name="\(job)",status="failed"} \(failed)
            # HELP voxpipe_audio_seconds Seconds of input audio processed in the last run.
            # TYPE voxpipe_audio_seconds gauge
            voxpipe_audio_seconds{job_name="\(job)"} \(audio)
            # HELP voxpipe_wall_seconds Wall-clock seconds of the last run.
            # TYPE voxpipe_wall_seconds gauge
            voxpipe_wall_seconds{job_name="\(job)"} 3.250000
            # HELP voxpipe_last_run_timestamp_seconds When the last run ended (Unix time).
            # TYPE voxpipe_last_run_timestamp_seconds gauge
            voxpipe_last_run_timestamp_seconds{job_name="\(job)"} NOW
            # HELP voxpipe_last_run_success 1 if the last run finished with every item done or skipped, else 0.
            # TYPE voxpipe_last_run_success gauge
            voxpipe_last_run_success{job_name="\(job)"} \(success)

            """
        if let lastSuccess {
            text += """
                # HELP voxpipe_last_success_timestamp_seconds When a run last ended with no failed item (Unix time).
                # TYPE voxpipe_last_success_timestamp_seconds gauge
                voxpipe_last_success_timestamp_seconds{job_name="\(job)"} \(lastSuccess)

                """
        }
        return text
    }

    @Test func aFailedRunKeepsTheLastSuccessOfTheMetricsItReplaces() throws {
        let previous = Self.metricsText(
            job: "batch", done: 2, skipped: 0, failed: 0, audio: "1", success: 1, lastSuccess: "1700000000")
        #expect(
            try metrics(reports(), previous: previous)
                == Self.metricsText(
                    job: "batch", done: 1, skipped: 1, failed: 1, audio: "10", success: 0, lastSuccess: "1700000000"))
        // Another job's last success in the same file is not this job's.
        let otherJob = Self.metricsText(
            job: "other", done: 2, skipped: 0, failed: 0, audio: "1", success: 1, lastSuccess: "1600000000")
        #expect(
            try metrics(reports(), previous: otherJob)
                == Self.metricsText(
                    job: "batch", done: 1, skipped: 1, failed: 1, audio: "10", success: 0, lastSuccess: nil))
        // With nothing to keep, a failed run writes no last success.
        #expect(
            try metrics(reports(), previous: nil)
                == Self.metricsText(
                    job: "batch", done: 1, skipped: 1, failed: 1, audio: "10", success: 0, lastSuccess: nil))
    }

    @Test func aCleanRunIsALastSuccessNow() throws {
        let clean = Array(Self.results.prefix(2))
        #expect(
            try metrics(reports(clean), previous: nil)
                == Self.metricsText(
                    job: "batch", done: 1, skipped: 1, failed: 0, audio: "10", success: 1, lastSuccess: "NOW"))
    }

    @Test func anInterruptedRunIsNoSuccessEvenWithoutFailures() throws {
        let clean = Array(Self.results.prefix(2))
        #expect(
            try metrics(reports(clean, interruptedBy: SIGTERM), previous: nil)
                == Self.metricsText(
                    job: "batch", done: 1, skipped: 1, failed: 0, audio: "10", success: 0, lastSuccess: nil))
    }

    @Test func thePlanNameIsEscapedAsALabelValue() throws {
        let text = try metrics(reports([], plan: "a \"b\" \\ c\nd"), previous: nil)
        #expect(
            text
                == Self.metricsText(
                    job: #"a \"b\" \\ c\nd"#, done: 0, skipped: 0, failed: 0, audio: "0", success: 1, lastSuccess: "NOW"
                ))
    }

    // MARK: JUnit

    @Test func junitHasOneTestCasePerItemWithEscapedText() {
        #expect(
            reports().junit() == """
                <?xml version="1.0" encoding="UTF-8"?>
                <testsuites name="voxpipe" tests="3" failures="1" skipped="1" time="3.250">
                  <testsuite name="voxpipe batch" tests="3" failures="1" errors="0" skipped="1" time="3.250">
                    <testcase classname="voxpipe batch" name="a.wav" time="2.500"/>
                    <testcase classname="voxpipe batch" name="b.wav" time="0.000">
                      <skipped message="done before"/>
                    </testcase>
                    <testcase classname="voxpipe batch" name="sub/c &lt;&amp;&gt;.wav" time="0.123">
                      <failure message="decode (decode): not audio" type="decode">\
                /in/sub/c &lt;&amp;&gt;.wav: decode (decode): not audio</failure>
                    </testcase>
                  </testsuite>
                </testsuites>

                """)
    }

    @Test func junitParsesAsXMLWhateverTheNamesHold() throws {
        let odd = "q'\"<x>&\t\u{1}\u{FFFE}.wav"
        let results = [
            ItemResult(
                item: Self.item(odd), status: .failed,
                failure: StageFailure(stageID: "s\u{7}", kind: "k&", reason: "r\u{0}<\n>")),
            ItemResult(item: Self.item("s.wav"), status: .skipped),
        ]
        let document = try XMLDocument(data: Data(reports(results, plan: "p<&>").junit().utf8))
        let cases = try document.nodes(forXPath: "/testsuites/testsuite/testcase").compactMap { $0 as? XMLElement }
        #expect(cases.count == 2)
        // Control characters XML cannot hold become "?"; tabs and line breaks are written as
        // character references, so they survive in attributes too.
        #expect(cases.first?.attribute(forName: "name")?.stringValue == "q'\"<x>&\t??.wav")
        #expect(cases.first?.attribute(forName: "classname")?.stringValue == "voxpipe p<&>")
        let failure = try #require(cases.first?.elements(forName: "failure").first)
        #expect(failure.attribute(forName: "type")?.stringValue == "k&")
        #expect(failure.attribute(forName: "message")?.stringValue == "s? (k&): r?<\n>")
        #expect(cases.last?.elements(forName: "skipped").first?.attribute(forName: "message")?.stringValue == "skipped")
    }
}
