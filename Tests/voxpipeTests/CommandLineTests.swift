import Foundation
import Testing
import VoxTestSupport

@Suite(.startsProcess("the voxpipe binary")) struct SpecErrorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var stages: String
        var message: String
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "unknown kind", stages: #"{"id":"decode","kind":"decode"},{"id":"x","kind":"frobnicate"}"#,
            message: #"stages[1].kind: unknown kind "frobnicate" (stage 'x'; known: decode, "#),
        Case(
            name: "unknown option",
            stages: #"{"id":"decode","kind":"decode"},{"id":"mono","kind":"resample","rat":16000}"#,
            message:
                "stages[1].rat: unknown option for resample (known: rate, channels, engine, quality) (stage 'mono')"),
        Case(
            name: "wrong value type",
            stages: #"{"id":"decode","kind":"decode"},{"id":"mono","kind":"resample","rate":"16k"}"#,
            message: "stages[1].rate: expected an integer, got a string (stage 'mono')"),
        Case(
            name: "value out of range",
            stages: #"{"id":"decode","kind":"decode"},{"id":"mono","kind":"resample","rate":4000}"#,
            message: "stages[1].rate: 4000 is out of range 8000…192000 (stage 'mono')"),
        Case(
            name: "from names no stage",
            stages: #"{"id":"decode","kind":"decode"},{"id":"out","kind":"write-wav","from":"mono"}"#,
            message: #"stages[1].from: no stage has the id "mono" (stage 'out'; ids: decode, out)"#),
        Case(
            name: "cyclic from",
            stages:
                #"{"id":"decode","kind":"decode"},{"id":"a","kind":"resample","from":"b"},{"id":"b","#
                + #""kind":"resample","from":"a"}"#,
            message: "stages[1].from: cycle 'a' → 'b' → 'a' (each stage reads from the next)"),
        Case(
            name: "type mismatch",
            stages:
                #"{"id":"decode","kind":"decode"},{"id":"out","kind":"write-wav"},{"id":"again","kind":"resample"}"#,
            message: "stages[2] 'again': resample takes AudioBlock but 'out' (write-wav) gives Artifact"),
    ]

    @Test(arguments: cases)
    func aBadSpecExits65WithOneMessageNamingStageAndPath(_ c: Case) throws {
        let dir = temporaryDirectory()
        let spec = try writeSpec(#"{"stages":[\#(c.stages)]}"#, in: dir)
        // The list of known kinds grows; that message is checked up to it.
        let expected = "voxpipe: error: \(spec.path): \(c.message)" + (c.message.hasSuffix(", ") ? "" : "\n")
        let validate = try voxpipe(["validate", spec.path])
        #expect(validate.status == 65)
        #expect(
            validate.stderr.hasPrefix(expected) && validate.stderr.hasSuffix("\n")
                && validate.stderr.split(separator: "\n").count == 1)
        #expect(c.message.hasSuffix(", ") || validate.stderr == expected)
        #expect(validate.stdout.isEmpty)
        let run = try voxpipe([
            "run", spec.path, packageRoot.appendingPathComponent("Samples").path, "--output",
            dir.appendingPathComponent("out").path,
        ])
        #expect(run.status == 65)
        #expect(run.stderr == validate.stderr)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out").path))
    }

    @Test func invalidJSONExits65() throws {
        let spec = try writeSpec("{ \"stages\": [ ", in: temporaryDirectory())
        let result = try voxpipe(["validate", spec.path])
        #expect(result.status == 65)
        #expect(result.stderr.hasPrefix("voxpipe: error: \(spec.path): not valid JSON"))
    }

    @Test func aMisspeltOrWrongKindStageReferenceExits65NamingItsPath() throws {
        let dir = temporaryDirectory()
        let rules = packageRoot.appendingPathComponent("Pipelines/tutor-rules.json").path
        func validate(audioFrom: String) throws -> Invocation {
            let spec = try writeSpec(
                """
                {"stages": [
                  {"id": "text", "kind": "read-text"},
                  {"id": "tutor", "kind": "reply", "provider": {"name": "rules", "rules": "\(rules)"}},
                  {"id": "voice", "kind": "synthesize"},
                  {"id": "speech", "kind": "write-wav", "from": "voice"},
                  {"id": "replies", "kind": "write-replies", "from": "voice", "audioFrom": "\(audioFrom)"}
                ]}
                """, in: dir)
            return try voxpipe(["validate", spec.path])
        }
        #expect(try validate(audioFrom: "speech").status == 0)
        let misspelt = try validate(audioFrom: "speach")
        #expect(misspelt.status == 65)
        #expect(
            misspelt.stderr.contains(
                #"stages[4].audioFrom: no stage has the id "speach" "#
                    + "(stage 'replies'; ids: text, tutor, voice, speech, replies)"
            ), "\(misspelt.stderr)")
        let wrongKind = try validate(audioFrom: "voice")
        #expect(wrongKind.status == 65)
        #expect(
            wrongKind.stderr.contains(
                "stages[4].audioFrom: stage 'voice' is a synthesize stage; expected write-audio or write-wav "
                    + "(stage 'replies')"), "\(wrongKind.stderr)")
    }

    @Test func speakerTurnsWithAMissingVoiceClipExit66AndOnAnotherRateExit65() throws {
        let dir = temporaryDirectory()
        func validate(_ resample: String) throws -> Invocation {
            let spec = try writeSpec(
                """
                {"stages": [
                  {"id": "decode", "kind": "decode"}, \(resample)
                  {"id": "turns", "kind": "chunk", "mode": "speakers", "voices": {"Tutor": "voices/anna.wav"}}
                ]}
                """, in: dir)
            return try voxpipe(["validate", spec.path])
        }
        let missing = try validate(#"{"id": "mono16k", "kind": "resample", "rate": 16000, "channels": 1},"#)
        #expect(missing.status == 66)
        #expect(
            missing.stderr.contains(
                "stages[2].voices.Tutor: no such file: \(dir.path)/voices/anna.wav (stage 'turns')"),
            "\(missing.stderr)")
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("voices"), withIntermediateDirectories: true)
        try Data().write(to: dir.appendingPathComponent("voices/anna.wav"))
        let rate = try validate("")
        #expect(rate.status == 65)
        #expect(rate.stderr.contains("mode speakers takes 16 kHz mono"), "\(rate.stderr)")
    }

    @Test func writeRecordsFromAStageOfAnotherKindExits65NamingItsPath() throws {
        let dir = temporaryDirectory()
        let records = packageRoot.appendingPathComponent("Pipelines/field-service").path
        func validate(from: String) throws -> Invocation {
            let spec = try writeSpec(
                """
                {"stages": [
                  {"id": "text", "kind": "read-text"},
                  {"id": "agents", "kind": "agent", "records": "\(records)", "provider": {"name": "rules"}},
                  {"id": "records", "kind": "write-records", "from": "\(from)"}
                ]}
                """, in: dir)
            return try voxpipe(["validate", spec.path])
        }
        #expect(try validate(from: "agents").status == 0)
        let wrongKind = try validate(from: "text")
        #expect(wrongKind.status == 65)
        #expect(
            wrongKind.stderr.contains(
                "stages[2] 'records': write-records takes AgentTurn but 'text' (read-text) gives Transcript"),
            "\(wrongKind.stderr)")
    }

    @Test func everyShippedPipelineValidates() throws {
        let pipelines = try FileManager.default.contentsOfDirectory(
            atPath: packageRoot.appendingPathComponent("Pipelines").path
        )
        .filter { $0.hasSuffix(".json") && $0 != "schema.json" && !$0.hasSuffix("-rules.json") }
        #expect(!pipelines.isEmpty)
        for name in pipelines {
            let result = try voxpipe(["validate", packageRoot.appendingPathComponent("Pipelines/\(name)").path])
            #expect(result.status == 0, "\(name): \(result.stderr)")
            #expect(result.stdout.hasPrefix("plan '"))
        }
    }

    @Test func everyShippedPipelinePassesTheSchemaInAnIndependentValidator() throws {
        let pipelines = try FileManager.default.contentsOfDirectory(
            atPath: packageRoot.appendingPathComponent("Pipelines").path
        )
        .filter { $0.hasSuffix(".json") && $0 != "schema.json" && !$0.hasSuffix("-rules.json") }
        .map { packageRoot.appendingPathComponent("Pipelines/\($0)").path }
        let validator = packageRoot.appendingPathComponent("Tests/Fixtures/validate_specs.py").path
        let schema = packageRoot.appendingPathComponent("Pipelines/schema.json").path
        let shipped = try run("/usr/bin/env", ["python3", validator, schema] + pipelines)
        #expect(shipped.status == 0, "\(shipped.stdout)\(shipped.stderr)")
        // The validator does fail: a fan-in list of numbers, an unknown option, and an option of
        // another mode (`seconds` on a voice chunker) or format are named.
        let dir = temporaryDirectory()
        let bad = try writeSpec(
            #"{"stages":[{"id":"a","kind":"decode","loudness":3},{"id":"b","kind":"write-wav","from":[1]},"#
                + #"{"id":"c","kind":"chunk","mode":"voice","seconds":5},"#
                + #"{"id":"d","kind":"write-audio","format":"mp3","encoding":"pcm24"}]}"#, in: dir)
        let refused = try run("/usr/bin/env", ["python3", validator, schema, bad.path])
        #expect(refused.status == 1)
        for stage in 0..<4 {
            #expect(refused.stdout.contains("\(bad.path): .stages[\(stage)]:"), "\(refused.stdout)")
        }
        // The same stages in their modes' options pass.
        let good = try writeSpec(
            #"{"stages":[{"id":"a","kind":"decode"},{"id":"c","kind":"chunk","mode":"voice","maxSeconds":5},"#
                + #"{"id":"d","kind":"write-audio","format":"mp3","quality":0.5}]}"#, in: dir)
        let passed = try run("/usr/bin/env", ["python3", validator, schema, good.path])
        #expect(passed.status == 0, "\(passed.stdout)")
    }

    @Test func theCommittedSchemaIsCurrent() throws {
        let result = try voxpipe(["schema"])
        #expect(result.status == 0)
        let committed = try String(
            contentsOf: packageRoot.appendingPathComponent("Pipelines/schema.json"), encoding: .utf8)
        #expect(result.stdout == committed, "Pipelines/schema.json is stale: run `make schema`")
    }

    @Test func stagesListsEveryKindWithTypesAndDefaults() throws {
        let result = try voxpipe(["stages", "resample"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("resample: Changes sample rate"))
        #expect(result.stdout.contains("takes AudioBlock, gives AudioBlock"))
        #expect(result.stdout.contains(#"engine    "soxr" | "libsamplerate" (default "soxr")"#))
        let unknown = try voxpipe(["stages", "nope"])
        #expect(unknown.status == 64)
    }
}

@Suite(.startsProcess("the voxpipe binary")) struct RunTests {
    let spec = packageRoot.appendingPathComponent("Pipelines/resample-16k.json").path

    @Test func aBatchWithBadFilesWritesTheGoodOnesAndNamesEachBadOne() throws {
        let dir = temporaryDirectory()
        let input = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        for name in ["speech-en-22k-mono.wav", "speech-de-44k-stereo.flac", "sweep-8k.aiff"] {
            try FileManager.default.copyItem(
                at: packageRoot.appendingPathComponent("Samples/\(name)"), to: input.appendingPathComponent(name))
        }
        // A WAV cut off inside its header, a zero-byte file, and text named .mp3.
        let good = try Data(contentsOf: packageRoot.appendingPathComponent("Samples/speech-en-22k-mono.wav"))
        try good[0..<30].write(to: input.appendingPathComponent("corrupt.wav"))
        try Data().write(to: input.appendingPathComponent("empty.wav"))
        try Data("shopping list: milk, eggs\n".utf8).write(to: input.appendingPathComponent("notes.mp3"))
        let out = dir.appendingPathComponent("out")

        let result = try voxpipe(["run", spec, input.path, "--output", out.path, "--jobs", "2"])
        #expect(result.status == 1)
        #expect(
            files(under: out).filter { $0.hasSuffix(".wav") } == [
                "speech-de-44k-stereo/audio.wav", "speech-en-22k-mono/audio.wav", "sweep-8k/audio.wav",
            ])
        #expect(files(under: out).filter { $0.contains(".voxpipe-tmp-") }.isEmpty)
        let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("voxpipe: error: ") }
        #expect(errors.count == 3)
        #expect(errors.contains { $0.hasPrefix("voxpipe: error: \(input.path)/corrupt.wav: decode (decode): ") })
        #expect(
            errors.contains { $0 == "voxpipe: error: \(input.path)/empty.wav: decode (decode): empty file (0 bytes)" })
        #expect(
            errors.contains {
                $0 == "voxpipe: error: \(input.path)/notes.mp3: decode (decode): not an audio file: it holds text"
            })
        #expect(result.stderr.contains("voxpipe: 6 items: 3 done, 3 failed in "))
        #expect(result.stdout.isEmpty)
    }

    @Test func theSamplesRunCleanlyIntoOneFolderPerInput() throws {
        let out = temporaryDirectory().appendingPathComponent("out")
        let result = try voxpipe(["run", spec, packageRoot.appendingPathComponent("Samples").path, "-o", out.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            files(under: out).filter { $0.hasSuffix(".wav") } == [
                "field-service/add-contact/audio.wav", "field-service/book-job-speakerphone/audio.wav",
                "field-service/book-job/audio.wav", "field-service/estimate/audio.wav",
                "field-service/termin-de/audio.wav",
                "speakers/lesson-two-voices/audio.wav", "speech-de-44k-stereo/audio.wav", "speech-de/audio.wav",
                "speech-en-22k-mono/audio.wav",
                "speech-en.mp3/audio.wav", "speech-en.ogg/audio.wav", "sweep-8k/audio.wav",
                "tone-48k-stereo-24bit/audio.wav",
            ])
    }

    @Test func noInputExits66() throws {
        let dir = temporaryDirectory()
        let empty = dir.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let result = try voxpipe(["run", spec, empty.path, "-o", dir.appendingPathComponent("out").path])
        #expect(result.status == 66)
        #expect(result.stderr == "voxpipe: error: no audio files found in \(empty.path)\n")
        let missing = try voxpipe(["run", spec, "/nonexistent/in", "-o", dir.appendingPathComponent("out").path])
        #expect(missing.status == 66)
        #expect(missing.stderr == "voxpipe: error: /nonexistent/in: no such file or folder\n")
    }

    @Test func anOutputFolderThatCannotBeCreatedFailsBeforeAnyWork() throws {
        let dir = temporaryDirectory()
        let blocker = dir.appendingPathComponent("file")
        try Data("x".utf8).write(to: blocker)
        let result = try voxpipe([
            "run", spec, packageRoot.appendingPathComponent("Samples/sweep-8k.aiff").path, "-o",
            blocker.appendingPathComponent("out").path,
        ])
        #expect(result.status == 73)
        #expect(result.stderr.hasPrefix("voxpipe: error: cannot create output folder \(blocker.path)/out: "))
        #expect(!result.stderr.contains("done"))
    }

    @Test func badCommandLinesExit64() throws {
        #expect(try voxpipe(["run", spec, "x.wav"]).status == 64)
        #expect(try voxpipe(["run", spec, "x.wav", "-o", "/tmp/x", "--jobs", "0"]).status == 64)
    }
}

@Suite(.startsProcess("the voxpipe binary")) struct TranscribeCommandTests {
    @Test func aFortyEightKilohertzEdgeIntoTheTranscriberIsRefusedNamingTheResampleStage() throws {
        let dir = temporaryDirectory()
        let spec = try writeSpec(
            #"""
            {"stages":[{"id":"decode","kind":"decode"},{"id":"wide","kind":"resample","rate":48000,"channels":1},
            {"id":"turns","kind":"chunk","mode":"voice"},{"id":"asr","kind":"transcribe"}]}
            """#, in: dir)
        let result = try voxpipe(["validate", spec.path])
        #expect(result.status == 65)
        #expect(
            result.stderr
                == #"voxpipe: error: \#(spec.path): stages[3] 'asr': whisper takes 16 kHz mono; add a stage "#
                + #"{"kind": "resample", "rate": 16000, "channels": 1} before the chunk stage, but 'turns' "#
                + #"(chunk) gives 48 kHz mono"#
                + "\n")
    }

    @Test func aMissingModelExits69AtPrepareNamingThePath() throws {
        let dir = temporaryDirectory()
        let spec = try writeSpec(
            #"""
            {"stages":[{"id":"decode","kind":"decode"},{"id":"mono","kind":"resample","rate":16000,"channels":1},
            {"id":"turns","kind":"chunk","mode":"voice"},
            {"id":"asr","kind":"transcribe","provider":{"name":"pocketsphinx","acousticModel":"models/missing"}}]}
            """#, in: dir)
        let out = dir.appendingPathComponent("out")
        let result = try voxpipe([
            "run", spec.path, packageRoot.appendingPathComponent("Samples/sweep-8k.aiff").path, "-o", out.path,
            "--no-outputs",
        ])
        #expect(result.status == 69)
        #expect(
            result.stderr
                == "voxpipe: error: stage 'asr' (transcribe): pocketsphinx acoustic model not found: "
                + "\(dir.path)/models/missing\n"
        )
        #expect(files(under: out).filter { !$0.hasPrefix(".voxpipe") }.isEmpty)
    }

    @Test(.needs(.whisperModels))
    func theTranscribePipelineWritesEveryFormatAndSkipsTinyFiles() throws {
        let dir = temporaryDirectory()
        let input = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: packageRoot.appendingPathComponent("Samples/speech-en-22k-mono.wav"),
            to: input.appendingPathComponent("speech.wav"))
        // A 50 ms file: too short for any speech, but not an error.
        let tiny = try Data(contentsOf: packageRoot.appendingPathComponent("Samples/speech-en-22k-mono.wav"))
        var header = tiny[0..<44]
        let frames = 1102
        header.replaceSubrange(40..<44, with: withUnsafeBytes(of: UInt32(frames * 2).littleEndian) { Data($0) })
        header.replaceSubrange(4..<8, with: withUnsafeBytes(of: UInt32(36 + frames * 2).littleEndian) { Data($0) })
        try (header + tiny[44..<(44 + frames * 2)]).write(to: input.appendingPathComponent("tiny.wav"))
        let out = dir.appendingPathComponent("out")
        let result = try voxpipe([
            "run", packageRoot.appendingPathComponent("Pipelines/transcribe.json").path, input.path, "-o", out.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            files(under: out).filter { $0.hasPrefix("speech/") } == [
                "speech/transcript.json", "speech/transcript.srt", "speech/transcript.tsv", "speech/transcript.txt",
                "speech/transcript.vtt", "speech/voxpipe.manifest.json",
            ])
        let txt = try String(contentsOf: out.appendingPathComponent("speech/transcript.txt"), encoding: .utf8)
        #expect(!txt.isEmpty)
        #expect(try String(contentsOf: out.appendingPathComponent("tiny/transcript.txt"), encoding: .utf8) == "")
    }
}

@Suite(.startsProcess("the voxpipe binary")) struct LessonTutorCommandTests {
    @Test func aRulesFileWithABadPatternExits65NamingFileEntryAndReason() throws {
        let dir = temporaryDirectory()
        try Data(
            #"{"rules": [{"pattern": "hallo", "replies": ["Hallo!"]}, {"pattern": "wie (geht", "replies": ["Gut."]}]}"#
                .utf8
        ).write(to: dir.appendingPathComponent("rules.json"))
        let spec = try writeSpec(
            #"""
            {"stages":[{"id":"decode","kind":"decode"},{"id":"mono","kind":"resample","rate":16000,"channels":1},
            {"id":"turns","kind":"chunk","mode":"voice"},{"id":"asr","kind":"transcribe"},
            {"id":"tutor","kind":"reply","provider":{"name":"rules","rules":"rules.json"}}]}
            """#, in: dir)
        let result = try voxpipe(["validate", spec.path])
        #expect(result.status == 65)
        #expect(
            result.stderr.hasPrefix(
                "voxpipe: error: \(spec.path): \(dir.path)/rules.json: rules[1].pattern: invalid regular expression "
                    + "\"wie (geht\": "
            ))
        #expect(result.stderr.hasSuffix(" (stage 'tutor')\n"))
    }

    @Test func anUnknownVoiceExits69SayingHowToListVoices() throws {
        let dir = temporaryDirectory()
        let spec = try writeSpec(
            #"""
            {"stages":[{"id":"decode","kind":"decode"},{"id":"mono","kind":"resample","rate":16000,"channels":1},
            {"id":"turns","kind":"chunk","mode":"voice"},{"id":"asr","kind":"transcribe"},
            {"id":"tutor","kind":"reply",
             "provider":{"name":"rules","rules":"\#(packageRoot.path)/Pipelines/tutor-rules.json"}},
            {"id":"voice","kind":"synthesize","provider":{"name":"espeak-ng","voice":"tlh"}}]}
            """#, in: dir)
        let result = try voxpipe([
            "run", spec.path, packageRoot.appendingPathComponent("Samples/sweep-8k.aiff").path, "-o",
            dir.appendingPathComponent("out").path, "--no-outputs",
        ])
        #expect(result.status == 69)
        #expect(
            result.stderr
                == "voxpipe: error: stage 'voice' (synthesize): espeak-ng has no voice \"tlh\"; list the voices with "
                + "`espeak-ng --voices` (or `espeak-ng --voices=de` for one language)\n"
        )
    }

    @Test(.needs(.whisperModels))
    func theLessonTutorPipelineAnswersEverySpokenTurn() throws {
        let dir = temporaryDirectory()
        let out = dir.appendingPathComponent("out")
        let input = packageRoot.appendingPathComponent("Samples/speech-en-22k-mono.wav")
        let result = try voxpipe([
            "run", packageRoot.appendingPathComponent("Pipelines/lesson-tutor.json").path, input.path, "-o", out.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let names = files(under: out.appendingPathComponent("speech-en-22k-mono"))
        #expect(names.contains("speech-0001.wav"))
        #expect(names.contains("subs.srt") && names.contains("replies.json"))
        let replies =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: out.appendingPathComponent("speech-en-22k-mono/replies.json"))) as? [String: Any]
        let turns = replies?["turns"] as? [[String: Any]] ?? []
        #expect(!turns.isEmpty)
        #expect(turns.allSatisfy { ($0["reply"] as? String)?.isEmpty == false && $0["audioFile"] as? String != nil })
        #expect(names.contains(turns[0]["audioFile"] as? String ?? "?"))
    }
}

@Suite(.serialized, .needs(.whisperModels), .startsProcess("the voxpipe binary")) struct WhisperCommandTests {
    static let spec = #"""
        {"stages":[{"id":"decode","kind":"decode"},{"id":"mono","kind":"resample","rate":16000,"channels":1},
        {"id":"turns","kind":"chunk","mode":"voice","maxSeconds":30},
        {"id":"asr","kind":"transcribe","provider":{"name":"whisper","model":"MODEL"}},
        {"id":"t","kind":"write-transcript","formats":["txt","json","srt"]}]}
        """#

    @Test func aMissingModelExits69NamingItAndWritesNothing() throws {
        let dir = temporaryDirectory()
        let spec = try writeSpec(Self.spec.replacingOccurrences(of: "MODEL", with: "models/none.bin"), in: dir)
        let out = dir.appendingPathComponent("out")
        let result = try voxpipe([
            "run", spec.path, packageRoot.appendingPathComponent("Samples/speech-en.ogg").path, "-o", out.path,
        ])
        #expect(result.status == 69)
        #expect(
            result.stderr
                == "voxpipe: error: stage 'asr' (transcribe): whisper model not found: \(dir.path)/models/none.bin "
                + "(a ggml model file, or a folder holding ggml-model.bin)\n"
        )
        #expect(files(under: out).filter { !$0.hasPrefix(".voxpipe") }.isEmpty)

        let unknown = try writeSpec(
            Self.spec.replacingOccurrences(of: "MODEL", with: "huge-v9"), in: dir, name: "unknown.json")
        let second = try voxpipe([
            "run", unknown.path, packageRoot.appendingPathComponent("Samples/speech-en.ogg").path, "-o", out.path,
        ])
        #expect(second.status == 69)
        #expect(
            second.stderr.hasPrefix(
                "voxpipe: error: stage 'asr' (transcribe): whisper model 'huge-v9' is not installed (looked in "))
    }

    @Test func twoRunsGiveByteIdenticalTranscriptsAndAChangedModelRedoesTheItem() throws {
        let dir = temporaryDirectory()
        let models = InstalledFixture.whisperModels.url
        let link = dir.appendingPathComponent("model.bin")
        try FileManager.default.createSymbolicLink(
            at: link, withDestinationURL: models.appendingPathComponent("base/ggml-model.bin"))
        let spec = try writeSpec(Self.spec.replacingOccurrences(of: "MODEL", with: "model.bin"), in: dir)
        let input = packageRoot.appendingPathComponent("Samples/speech-de-44k-stereo.flac")
        let a = dir.appendingPathComponent("a"), b = dir.appendingPathComponent("b")
        for out in [a, b] {
            let result = try voxpipe(["run", spec.path, input.path, "-o", out.path])
            #expect(result.status == 0, "\(result.stderr)")
        }
        for name in ["t.txt", "t.json", "t.srt"] {
            let first = try Data(contentsOf: a.appendingPathComponent("speech-de-44k-stereo/\(name)"))
            #expect(!first.isEmpty)
            #expect(
                first == (try Data(contentsOf: b.appendingPathComponent("speech-de-44k-stereo/\(name)"))),
                "\(name) differs")
        }
        let report = dir.appendingPathComponent("r.jsonl")
        // A rerun with nothing new prepares no stage (no model loads) and reads no model file
        // whose digest the store kept from before.
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CACHE_HOME"] = dir.appendingPathComponent("cache").path
        for _ in 0..<2 {
            let rerun = try voxpipe(
                ["run", "-v", spec.path, input.path, "-o", a.path, "--report", report.path], environment: environment)
            #expect(rerun.status == 0)
            #expect(rerun.stderr.contains("every item is done already: no stage prepared, no model loaded"))
        }
        #expect(try String(contentsOf: report, encoding: .utf8).contains(#""status":"skipped""#))
        let store = try String(
            contentsOf: dir.appendingPathComponent("cache/voxpipe/file-digests.json"), encoding: .utf8)
        #expect(store.contains(link.lastPathComponent) && store.contains("libwhisper.so"), "\(store)")
        // Another model behind the same name: its content is in the item key.
        try FileManager.default.removeItem(at: link)
        try FileManager.default.createSymbolicLink(
            at: link, withDestinationURL: models.appendingPathComponent("tiny.en/ggml-model.bin"))
        #expect(try voxpipe(["run", spec.path, input.path, "-o", a.path, "--report", report.path]).status == 0)
        #expect(try String(contentsOf: report, encoding: .utf8).contains(#""status":"done""#))
    }
}
