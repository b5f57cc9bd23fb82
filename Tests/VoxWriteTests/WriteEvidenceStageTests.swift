import Foundation
import Testing
import VoxCore
import VoxModeration
import VoxTestSupport
import VoxTesting

@testable import VoxWrite

/// `write-evidence` alone: an item's tail window (and its transcripts) in, one BagIt bag out.
@Suite struct WriteEvidenceStageTests {
    let evidence = AudioFormat(sampleRate: 48000, channels: 1)
    let provenance = Provenance(
        spec: ["name": "moderation", "stages": [["id": "mono48k", "kind": "resample"]]], specFingerprint: "f00d",
        software: ["voxpipe": "9.9-test"],
        stages: [
            PlannedStage(
                id: "mono48k", kind: "resample",
                declarations: StageDeclarations().declaring(.resampling, StreamFormat(sampleRate: 48000)),
                provenance: ["rate": 48000])
        ])

    /// The upload, as the item's input file: bytes write-evidence copies and hashes, not decodes.
    func upload(in dir: URL) throws -> InputFile {
        let url = dir.appendingPathComponent("room.wav")
        try Data("the untouched upload".utf8).write(to: url)
        return InputFile(url: url, relativePath: "calls/room.wav", outputName: "calls/room")
    }

    /// Half a second of 48 kHz mono from 10 s into the recording.
    func window(_ format: AudioFormat? = nil, index: Int = 0) -> AudioChunk {
        AudioChunk(
            format: format ?? evidence, samples: (0..<24000).map { Float($0 % 480) / 960 - 0.25 }, start: 10,
            end: 10.5, index: index, cut: .tail)
    }

    func transcript(_ text: String, start: Double) -> Transcript {
        let chunk = AudioChunk(format: evidence, samples: [], start: start, end: start + 1, index: 0, cut: .voice)
        return Transcript(chunk: chunk, text: text, words: [], language: "en", provider: "test", model: nil)
    }

    var facts: ItemFacts {
        let facts = ItemFacts()
        facts[.moderationReport] = ModerationReport(fields: [
            "reportId": "R-7", "reportedAt": "2026-11-20T18:04:05Z", "reportedUser": "bob",
        ])
        facts[.sourceFormat] = AudioFormat(sampleRate: 44100, channels: 2)
        facts[.audioSeconds] = 12.345_678_9
        return facts
    }

    func makeHarness(
        _ dir: URL, options: [String: JSONValue] = ["organization": "Trust & Safety"]
    ) throws
        -> StageHarness<WriteEvidenceStage>
    {
        try StageHarness(
            WriteEvidenceStage.self, id: "evidence", options: options,
            outputDirectory: dir.appendingPathComponent("out"),
            item: try upload(in: dir), provenance: provenance)
    }

    @Test func theWindowAndItsTranscriptsBecomeOneBagThatVerifies() async throws {
        let dir = temporaryDirectory()
        let harness = try makeHarness(dir)
        let inputs: [any Payload] = [
            transcript("you are banned", start: 10.2), window(), transcript("", start: 11), transcript("hi", start: 9),
        ]
        let (artifacts, _) = try await harness.run(inputs, facts: facts)
        let out = dir.appendingPathComponent("out")
        let bag = out.appendingPathComponent("calls/room/evidence")
        #expect(
            artifacts.map(\.path)
                == [
                    "bag-info.txt", "bagit.txt", "data/evidence.wav", "data/original.wav", "data/report.json",
                    "data/transcript.json", "manifest-sha256.txt", "manifest-sha512.txt", "tagmanifest-sha256.txt",
                ].map { "calls/room/evidence/\($0)" })
        #expect(try artifactsMatchTheirFiles(artifacts, under: out))
        #expect(BagIt.verify(bag: bag) == [])

        let original = try Data(contentsOf: bag.appendingPathComponent("data/original.wav"))
        #expect(original == Data("the untouched upload".utf8))
        let payloadBytes = artifacts.filter { $0.path.contains("/data/") }.map(\.bytes).reduce(0, +)
        #expect(
            try String(contentsOf: bag.appendingPathComponent("bag-info.txt"), encoding: .utf8)
                == "Bag-Software-Agent: voxpipe 9.9-test\nBagging-Date: 2026-11-20\nExternal-Identifier: R-7\n"
                + "Source-Organization: Trust & Safety\nPayload-Oxum: \(payloadBytes).4\n")

        let (format, samples) = try await readAll(bag.appendingPathComponent("data/evidence.wav"))
        #expect(format == evidence)
        #expect(zip(samples, window().samples).allSatisfy { abs($0 - $1) <= 1.0 / 32767 } && samples.count == 24000)
        let wav = try Data(contentsOf: bag.appendingPathComponent("data/evidence.wav"))
        let report = try JSONValue.parse(Data(contentsOf: bag.appendingPathComponent("data/report.json")))
        #expect(
            report
                == [
                    "report": ["reportId": "R-7", "reportedAt": "2026-11-20T18:04:05Z", "reportedUser": "bob"],
                    "track": .null,
                    "source": [
                        "file": "calls/room.wav", "bytes": 20, "sha256": .string(Digest.hex(original)),
                        "sampleRate": 44100, "channels": 2, "durationSeconds": 12.345679,
                    ],
                    "window": ["start": 10, "end": 10.5, "seconds": 0.5],
                    "evidence": [
                        "file": "data/evidence.wav", "sampleRate": 48000, "channels": 1,
                        "encoding": "PCM 16-bit little-endian", "frames": 24000,
                        "pcmSHA256": .string(Digest.hex(wav.dropFirst(44))),
                    ],
                    "resampler": [["id": "mono48k", "kind": "resample", "rate": 48000]],
                    "provenance": [["id": "mono48k", "kind": "resample", "rate": 48000]],
                    "software": ["voxpipe": "9.9-test"],
                    "spec": ["sha256": "f00d", "stages": [["id": "mono48k", "kind": "resample"]]],
                ])
        // Transcripts in time order; an empty one is left out.
        let transcripts = try JSONValue.parse(Data(contentsOf: bag.appendingPathComponent("data/transcript.json")))
        #expect(transcripts.objectValue?["text"] == "hi you are banned")
    }

    @Test func aReportWindowTrimsTheAudioAndNamesItsReports() async throws {
        let dir = temporaryDirectory()
        var item = try upload(in: dir)
        item.reportWindow = ReportWindow(name: "R-1", reportIDs: ["R-1", "R-2"], end: 10.25, seconds: 0.2)
        let harness = try StageHarness(
            WriteEvidenceStage.self, id: "evidence", options: ["original": false],
            outputDirectory: dir.appendingPathComponent("out"), item: item, provenance: provenance)
        _ = try await harness.run([window()], facts: facts)
        let bag = dir.appendingPathComponent("out/calls/room/evidence")
        #expect(!FileManager.default.fileExists(atPath: bag.appendingPathComponent("data/original.wav").path))
        #expect(BagIt.verify(bag: bag) == [])
        let report = try JSONValue.parse(Data(contentsOf: bag.appendingPathComponent("data/report.json")))
        #expect(
            report.objectValue?["window"]
                == [
                    "start": 10.05, "end": 10.25, "seconds": 0.2, "reportIds": ["R-1", "R-2"], "requestedSeconds": 0.2,
                    "shortfallSeconds": 0, "reportedMoment": 10.25,
                ])
        #expect(report.objectValue?["evidence"]?.objectValue?["frames"] == 9600)
        let info = try String(contentsOf: bag.appendingPathComponent("bag-info.txt"), encoding: .utf8)
        #expect(info.contains("External-Identifier: R-1, R-2\n"))
    }

    @Test func aSecondWindowAnotherFormatOrNoAudioFailsTheItem() async throws {
        let dir = temporaryDirectory()
        let harness = try makeHarness(dir)
        await #expect(
            throws: WriteError(
                .unsupported,
                "write-evidence takes one window per item or track; feed it from a chunk stage in mode tail")
        ) { try await harness.run([window(), window(index: 1)], facts: facts) }
        await #expect(throws: WriteError(.unsupported, "evidence must be 48 kHz mono, got 16000 Hz, 1 ch")) {
            try await harness.run([window(AudioFormat(sampleRate: 16000, channels: 1))], facts: facts)
        }
        await #expect(throws: WriteError(.unsupported, "no audio reached write-evidence (is the input empty?)")) {
            try await harness.run([transcript("words without audio", start: 0)], facts: facts)
        }
    }
}
