import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxReply

/// `reply` with `speaker`: the tutor answers the learner only, in a lesson whose chunks a speaker
/// chunker labelled; the tutor's own lines are passed over and kept out of the memory.
extension RulesProviderTests {
    /// A lesson's turns, each labelled with its speaker.
    func lesson(_ turns: [(String?, String)]) -> [Transcript] {
        turns.enumerated().map { i, turn in
            var t = transcript(turn.1, index: i)
            t.chunk.cut = .speaker
            t.chunk.speaker = turn.0
            return t
        }
    }

    func replies(_ lesson: [Transcript], speaker: String?) async throws -> [Reply] {
        var options: [String: JSONValue] = ["provider": ["name": "rules", "rules": .string(shipped.path)]]
        if let speaker { options["speaker"] = .string(speaker) }
        return try await StageHarness(ReplyStage.self, options: options).run(lesson, commit: false).outputs
    }

    static let twoSpeakers: [(String?, String)] = [
        ("Speaker 1", "Hallo"),
        ("Tutor", "Hallo! Wie heißt du?"),
        ("Speaker 1", "Ich heiße Anna"),
        ("Tutor", "Schön. Ich heiße Maria."),
        ("Speaker 1", "Wie heiße ich?"),
    ]

    @Test func withASpeakerSetOnlyThatSpeakersTurnsAreAnsweredAndRemembered() async throws {
        let out = try await replies(lesson(Self.twoSpeakers), speaker: "Speaker 1")
        #expect(out.map(\.transcript.chunk.index) == [0, 2, 4])
        #expect(
            out.map(\.text) == [
                "Hallo! Schön, dass du da bist. Wie geht es dir heute?", "Freut mich, Anna! Woher kommst du?",
                "Du heißt Anna! Das habe ich mir gemerkt.",
            ])
    }

    @Test func withoutASpeakerEveryTurnIsAnsweredWhoeverSaidIt() async throws {
        let out = try await replies(lesson(Self.twoSpeakers), speaker: nil)
        #expect(out.map(\.transcript.chunk.index) == [0, 1, 2, 3, 4])
        // The tutor's own name went into the memory as the learner's.
        #expect(out.last?.text == "Du heißt Maria! Das habe ich mir gemerkt.")
    }

    @Test func aSpeakerNoChunkIsLabelledWithGetsNoReplyAndUnlabelledTurnsAreNoSpeakers() async throws {
        #expect(try await replies(lesson(Self.twoSpeakers), speaker: "Speaker 2").isEmpty)
        #expect(try await replies(lesson([(nil, "Hallo"), (nil, "Ich heiße Anna")]), speaker: "Speaker 1").isEmpty)
    }

    @Test func anEmptySpeakerIsASpecErrorNamingTheOption() throws {
        #expect(
            throws: VoxError(
                .invalidSpec, "stages[0].speaker: names no speaker (leave it out to take every transcript)")
        ) {
            try StageHarness(
                ReplyStage.self,
                options: ["provider": ["name": "rules", "rules": .string(shipped.path)], "speaker": " "])
        }
    }
}

extension RulesProviderTests {
    @Test func aServedTurnIsAnsweredWhateverSpeakerTheSpecNames() throws {
        let options = try StageOptions.validated(
            ["provider": ["name": "rules", "rules": .string(shipped.path)], "speaker": "Speaker 1"],
            against: ReplyStage.options, stageID: "tutor", path: "stages[0]", owner: ReplyStage.kind,
            baseDirectory: URL(fileURLWithPath: "/"))
        let configuration = try ReplyStage.configure(options)
        #expect(configuration.speaker == "Speaker 1")
        #expect(ReplyStage.oneTurn(configuration, maxSeconds: 30).speaker == nil)
    }
}
