import Foundation
import Testing
import VoxCore
import VoxTestSupport

@testable import VoxReply

/// The rules tutor remembers what the learner said about themselves (issue 24): rules capture
/// facts, templates use them, and a lesson's facts are that lesson's only.
extension RulesProviderTests {
    var shipped: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Pipelines/tutor-rules.json")
    }

    @Test func theShippedTutorRemembersTheLearnersNameAcrossALessonAndNotIntoTheNext() async throws {
        let lesson = try await replies(shipped, ["Hallo", "Ich heiße Anna", "Ich wohne in Berlin", "Wie heiße ich?"])
        #expect(
            lesson.map(\.text) == [
                "Hallo! Schön, dass du da bist. Wie geht es dir heute?", "Freut mich, Anna! Woher kommst du?",
                "Berlin — schön! Wie alt bist du?", "Du heißt Anna! Das habe ich mir gemerkt.",
            ])
        let next = try await replies(shipped, ["Wie heiße ich?"])
        #expect(next.map(\.text) == ["Das hast du mir noch nicht gesagt. Wie heißt du?"])
    }

    @Test func theShippedTutorRemembersNameAgeCityJobAndHobbiesAndAsksForWhatItLacks() async throws {
        let out = try await replies(
            shipped,
            [
                "Ich bin 30 Jahre alt", "Ich heiße Jonas", "Ich komme aus Wien", "Ich arbeite als Lehrer",
                "Meine Hobbys sind Lesen und Schwimmen.", "Wie alt bin ich?", "Woher komme ich?",
                "Was ist mein Beruf?", "Was sind meine Hobbys?", "Wie heiße ich?",
            ])
        #expect(
            out.map(\.text) == [
                "30 Jahre, prima! Wie heißt du?", "Freut mich, Jonas! Woher kommst du?",
                "Wien — schön! Was bist du von Beruf?", "Lehrer — ein interessanter Beruf! Was sind deine Hobbys?",
                "Das klingt nach Spaß!", "Du bist 30 Jahre alt.", "Du kommst aus Wien.", "Du bist Lehrer von Beruf.",
                "Deine Hobbys: Lesen und Schwimmen.", "Du heißt Jonas! Das habe ich mir gemerkt.",
            ])
    }

    @Test func factsAreRememberedAsSaidAndALaterMentionReplacesAnEarlierOne() async throws {
        let url = try rulesFile(
            #"""
            {"rules": [
              {"pattern": "wer bin ich", "requires": ["name"], "replies": ["Du bist {name}."]},
              {"pattern": "ich bin (\\S+)", "remember": {"name": "{1}"}, "replies": ["Hallo {name}! {ask}"]}
            ], "ask": [{"fact": "name", "question": "Wer bist du?"}], "fallback": ["{ask}"]}
            """#)
        let out = try await replies(
            url, ["wer bin ich", "ich bin {turn}", "wer bin ich", "ich bin Eva", "wer bin ich"])
        #expect(out.map(\.text) == ["Wer bist du?", "Hallo {turn}!", "Du bist {turn}.", "Hallo Eva!", "Du bist Eva."])
    }

    @Test func memoryMistakesInARulesFileAreSpecErrors() throws {
        let requires = try rulesFile(#"{"rules": [{"pattern": "x", "requires": ["name"], "replies": ["a"]}]}"#)
        #expect(throws: ReplyError(.invalidRules, "\(requires.path): rules[0].requires: no rule remembers \"name\"")) {
            try RulesProvider(url: requires)
        }
        let ask = try rulesFile(#"{"rules": [], "ask": [{"fact": "age", "question": "Wie alt?"}]}"#)
        #expect(throws: ReplyError(.invalidRules, "\(ask.path): ask[0].fact: no rule remembers \"age\"")) {
            try RulesProvider(url: ask)
        }
        let unknown = try rulesFile(
            #"{"rules": [{"pattern": "(x)", "remember": {"name": "{1}"}, "replies": ["{city}"]}]}"#)
        #expect(
            throws: ReplyError(
                .invalidRules,
                "\(unknown.path): rules[0].replies[0]: unknown placeholder {city} (use {text}, {turn}, {0}…{9}, "
                    + "{ask} or a remembered fact: name)")
        ) { try RulesProvider(url: unknown) }
    }
}
