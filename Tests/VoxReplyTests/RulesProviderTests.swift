import Foundation
import Testing
import VoxCore
import VoxRequest
import VoxTestSupport
import VoxTesting

@testable import VoxReply

@Suite struct RulesProviderTests {
    func transcript(_ text: String, index: Int = 0) -> Transcript {
        Transcript(
            chunk: AudioChunk(
                format: AudioFormat(sampleRate: 16000, channels: 1), samples: [], start: Double(index),
                end: Double(index) + 1, index: index, cut: .voice),
            text: text, words: [], language: "de", provider: "test", model: nil)
    }

    func rulesFile(_ json: String) throws -> URL {
        let url = temporaryDirectory().appendingPathComponent("rules.json")
        try Data(json.utf8).write(to: url)
        return url
    }

    func replies(_ rules: URL, _ texts: [String]) async throws -> [Reply] {
        let harness = try StageHarness(
            ReplyStage.self, options: ["provider": ["name": "rules", "rules": .string(rules.path)]])
        return try await harness.run(texts.enumerated().map { transcript($1, index: $0) }, commit: false).outputs
    }

    let sample = #"""
        {"rules": [
          {"pattern": "\\bmy name is (\\w+)", "replies": ["Freut mich, {1}! (turn {turn})"]},
          {"pattern": "hallo|hello", "replies": ["Hallo!", "Hallo noch einmal!"]}
        ], "fallback": ["Wie bitte? Du sagtest: {text}"]}
        """#

    @Test func theFirstMatchingRuleAnswersWithCapturesAndTurnFilledIn() async throws {
        let out = try await replies(
            try rulesFile(sample), ["well MY NAME IS Anna", "Hello there", "", "hallo", "something else"])
        #expect(
            out.map(\.text) == [
                "Freut mich, Anna! (turn 1)", "Hallo noch einmal!", "Hallo!", "Wie bitte? Du sagtest: something else",
            ])
        #expect(out.map(\.transcript.chunk.index) == [0, 1, 3, 4])
    }

    @Test func theSameLessonAlwaysGetsTheSameReplies() async throws {
        let url = try rulesFile(sample)
        let texts = ["hello", "hallo", "nothing", "hello"]
        #expect(try await replies(url, texts).map(\.text) == replies(url, texts).map(\.text))
    }

    @Test func caseSensitivityCanBeTurnedOn() async throws {
        let url = try rulesFile(
            #"{"caseSensitive": true, "rules": [{"pattern": "Hallo", "replies": ["ja"]}], "fallback": ["nein"]}"#)
        #expect(try await replies(url, ["hallo", "Hallo"]).map(\.text) == ["nein", "ja"])
    }

    @Test func anInvalidRegularExpressionNamesFileEntryAndReason() throws {
        let url = try rulesFile(
            #"{"rules": [{"pattern": "ok", "replies": ["a"]}, {"pattern": "(unclosed", "replies": ["b"]}]}"#)
        do {
            _ = try RulesProvider(url: url)
            Issue.record("expected an error")
        } catch let error as ReplyError {
            #expect(error.code == .invalidRules && error.exitCode == 65)
            #expect(
                error.message.hasPrefix("\(url.path): rules[1].pattern: invalid regular expression \"(unclosed\": "))
        }
    }

    @Test func aFileThatDoesNotParseOrLacksRepliesIsASpecError() throws {
        let broken = try rulesFile("{ \"rules\": [ ")
        #expect(throws: ReplyError.self) { try RulesProvider(url: broken) }
        let missing = try rulesFile(#"{"rules": [{"pattern": "x"}]}"#)
        #expect(throws: ReplyError(.invalidRules, "\(missing.path): rules[0].replies: missing")) {
            try RulesProvider(url: missing)
        }
        let badTemplate = try rulesFile(#"{"rules": [{"pattern": "x", "replies": ["{2}"]}]}"#)
        #expect(
            throws: ReplyError(
                .invalidRules, "\(badTemplate.path): rules[0].replies[0]: {2} but the pattern has 0 groups")
        ) { try RulesProvider(url: badTemplate) }
        #expect(throws: ReplyError.self) { try RulesProvider(url: URL(fileURLWithPath: "/nonexistent/rules.json")) }
    }

    @Test func theShippedTutorRulesAnswerLikeAFriendlyTutor() async throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Pipelines/tutor-rules.json")
        let out = try await replies(
            url, ["Guten Morgen", "wie geht es dir", "noch einmal bitte", "sehr gut danke", "ich heiße Lena", "xyz"])
        #expect(out[0].text.hasPrefix("Hallo!"))
        #expect(out[1].text.contains("Mir geht es gut") || out[1].text.contains("Danke, sehr gut"))
        #expect(out[2].text.contains("noch einmal") || out[2].text.contains("Noch einmal"))
        #expect(out[3].text.hasPrefix("Bitte schön") || out[3].text.hasPrefix("Gern geschehen"))
        #expect(out[4].text == "Freut mich, Lena! Woher kommst du?")
        #expect(!out[5].text.isEmpty)
    }
}

@Suite struct OpenAIReplierTests {
    func transcript(_ text: String) -> Transcript {
        Transcript(
            chunk: AudioChunk(
                format: AudioFormat(sampleRate: 16000, channels: 1), samples: [], start: 0, end: 1, index: 0,
                cut: .voice),
            text: text, words: [], language: "de", provider: "test", model: nil)
    }

    @Test func theSystemPromptAndTheLastTurnsOfTheLessonGoAsHistory() throws {
        let options = StageOptions(
            stageID: "tutor", path: "stages[0].provider", baseDirectory: URL(fileURLWithPath: "/"),
            values: ["systemPrompt": "Du bist Lehrer.", "memory": 2, "baseURL": "http://127.0.0.1:9/v1"],
            specs: OpenAIReplier.options)
        let replier = try OpenAIReplier(settings: try OpenAIReplier.settings(options), context: testContext())
        let history = (1...3).map { ConversationTurn(user: "u\($0)", assistant: "a\($0)") }
        let messages = replier.messages(for: transcript("jetzt"), history: history)
        #expect(messages.map { $0["role"] ?? "" } == ["system", "user", "assistant", "user", "assistant", "user"])
        #expect(messages.map { $0["content"] ?? "" } == ["Du bist Lehrer.", "u2", "a2", "u3", "a3", "jetzt"])
    }

    @Test func aPromptInlineAndFromAFileIsASpecError() throws {
        let options = StageOptions(
            stageID: "tutor", path: "stages[0].provider", baseDirectory: URL(fileURLWithPath: "/"),
            values: ["systemPrompt": "x", "systemPromptFile": "/etc/hostname"], specs: OpenAIReplier.options)
        #expect(throws: VoxError.self) { try OpenAIReplier.settings(options) }
    }
}
