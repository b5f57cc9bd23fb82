import Foundation
import Testing
import VoxTestSupport

/// The `piper` voice from the command line: the intelligibility check, a missing voice, reruns.
@Suite(
    .serialized,
    .needs(.piperVoices),
    .needs(.whisperModels),
    .startsProcess("the voxpipe binary")
) struct PiperCommandTests {
    /// Two short English conversations as text, rules that answer them, a spec that speaks the
    /// answers with `voice` (a piper provider block) and writes replies.json, and a suite that
    /// checks the speech is intelligible.
    func agentSuite(voice: String) throws -> (dir: URL, suite: URL, spec: URL) {
        let dir = temporaryDirectory()
        let inputs = dir.appendingPathComponent("calls")
        try FileManager.default.createDirectory(at: inputs, withIntermediateDirectories: true)
        try "I need a technician.\nMy name is Dana Brooks.\n".write(
            to: inputs.appendingPathComponent("dana.txt"), atomically: true, encoding: .utf8)
        try "The heating is broken.\n".write(
            to: inputs.appendingPathComponent("heating.txt"), atomically: true, encoding: .utf8)
        try """
        {"rules": [
          {"name": "technician", "pattern": "technician", "replies": ["A technician will come by tomorrow at nine."]},
          {"name": "name", "pattern": "name", "replies": ["Thank you, Dana. I saved your phone number."]},
          {"name": "heating", "pattern": "heating",
           "replies": ["I booked the repair for Thursday morning. Please keep the front door open."]}
        ], "fallback": ["Could you say that again, please?"]}
        """.write(to: dir.appendingPathComponent("rules.json"), atomically: true, encoding: .utf8)
        let spec = try writeSpec(
            """
            {"name": "agents-text", "stages": [
              {"id": "read", "kind": "read-text", "language": "en"},
              {"id": "agent", "kind": "reply", "provider": {"name": "rules", "rules": "rules.json"}},
              {"id": "voice", "kind": "synthesize", "provider": \(voice)},
              {"id": "speech", "kind": "write-wav", "from": "voice"},
              {"id": "replies", "kind": "write-replies", "from": "voice", "audioFrom": "speech"}
            ]}
            """, in: dir)
        let suite = try writeSpec(
            """
            {"spec": "spec.json", "inputs": ["calls"],
             "expect": [{"item": "*", "output": "replies.json", "intelligible": 0.15}]}
            """, in: dir, name: "agents.check.json")
        return (dir, suite, spec)
    }

    /// Given the default Piper voice, the intelligibility expectation passes for each item and
    /// pooled; given the same voice garbled (speed 4, the fastest), it fails, in the JUnit report too.
    @Test func intelligibilityPassesForPiperAndFailsForAGarbledVoice() throws {
        let good = try agentSuite(voice: #"{"name": "piper"}"#)
        let junit = good.dir.appendingPathComponent("junit.xml")
        let passed = try voxpipe(["check", good.suite.path, "--junit", junit.path])
        print(passed.stdout)
        #expect(passed.status == 0, "\(passed.stdout)\n\(passed.stderr)")
        #expect(passed.stdout.contains("PASS  dana  expect[0] replies.json intelligible: dana/replies.json: 2 spoken "))
        #expect(passed.stdout.contains("PASS  run  expect[0] replies.json intelligible pooled: spoken output heard "))
        let report = try JUnitCounter.count(junit)
        #expect(report.parsed && report.cases == 4 && report.failures.isEmpty)  // 2 items, pooled, a budget

        let garbled = try agentSuite(voice: #"{"name": "piper", "speed": 4.0}"#)
        let garbledJUnit = garbled.dir.appendingPathComponent("junit.xml")
        let failed = try voxpipe(["check", garbled.suite.path, "--junit", garbledJUnit.path])
        print(failed.stdout)
        #expect(failed.status == 1)
        #expect(failed.stdout.contains("FAIL  run  expect[0] replies.json intelligible pooled: "))
        let failures = try JUnitCounter.count(garbledJUnit).failures
        #expect(failures.contains { $0.hasPrefix("spoken output heard back with WER ") })
    }

    /// Given the English tutor pipeline over the English sample, then its spoken replies (Piper,
    /// streamed sentence by sentence into a 48 kHz WAV) pass the intelligibility check, and each
    /// reply's file holds all its sentences.
    @Test func theEnglishTutorSpeaksIntelligiblyWithPiper() throws {
        let dir = temporaryDirectory()
        let spec = packageRoot.appendingPathComponent("Pipelines/lesson-tutor-en.json").path
        let sample = packageRoot.appendingPathComponent("Samples/speech-en-22k-mono.wav").path
        let suite = try writeSpec(
            """
            {"spec": "\(spec)", "inputs": ["\(sample)"],
             "expect": [{"item": "*", "output": "replies.json", "intelligible": 0.15}]}
            """, in: dir, name: "tutor-en.check.json")
        let out = dir.appendingPathComponent("out")
        let result = try voxpipe(["check", suite.path, "--output", out.path])
        print(result.stdout)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("PASS  run  expect[0] replies.json intelligible pooled: spoken output heard "))
        struct Replies: Decodable {
            struct Turn: Decodable { var reply: String, audioFile: String? }
            var turns: [Turn]
        }
        let item = out.appendingPathComponent("speech-en-22k-mono")
        let replies = try JSONDecoder().decode(
            Replies.self, from: Data(contentsOf: item.appendingPathComponent("replies.json")))
        let spoken = try #require(replies.turns.first { $0.reply.filter { ".!?".contains($0) }.count >= 2 })
        let file = try probedDuration(item.appendingPathComponent(try #require(spoken.audioFile)))
        #expect(file.rate == 48000)
        // Every sentence is in the file (the check heard every word back): over half a second each.
        #expect(file.seconds > 0.5 * Double(spoken.reply.filter { ".!?".contains($0) }.count), "\(spoken.reply)")
    }

    @Test func aMissingVoiceExits69NamingIt() throws {
        let setup = try agentSuite(voice: #"{"name": "piper", "voice": "voices/en_GB-nobody-low"}"#)
        let result = try voxpipe([
            "run", setup.spec.path, setup.dir.appendingPathComponent("calls").path, "--output",
            setup.dir.appendingPathComponent("out").path,
        ])
        #expect(result.status == 69)
        #expect(
            result.stderr.contains(
                "Piper voice not found: \(setup.dir.path)/voices/en_GB-nobody-low (a folder holding a voice's .onnx "
                    + "and .onnx.json)"), "\(result.stderr)")
    }

    @Test func twoRunsGiveByteIdenticalSpeech() throws {
        let setup = try agentSuite(voice: #"{"name": "piper"}"#)
        let calls = setup.dir.appendingPathComponent("calls").path
        var hashes: [[String: String]] = []
        for run in ["a", "b"] {
            let out = setup.dir.appendingPathComponent(run)
            let result = try voxpipe(["run", setup.spec.path, calls, "--output", out.path, "--jobs", "2"])
            #expect(result.status == 0, "\(result.stderr)")
            hashes.append(try outputHashes(out))
        }
        #expect(hashes[0].keys.filter { $0.hasSuffix(".wav") }.count == 3)
        #expect(hashes[0] == hashes[1])
    }
}
