import Foundation
import Testing
import VoxCore

@testable import VoxServe

/// The shipped tutor remembers the learner's name for one session and not in another (issue 24).
extension TutorServerTests {
    @Test func theTutorRemembersANameInItsSessionAndNotInAnother() async throws {
        let server = try await SharedServer.standIn.value
        let anna = Device(server, api: api), other = Device(server, api: api)
        _ = try await anna.call("POST", "join-with-bot", ["userId": "anna"])
        _ = try await other.call("POST", "join-with-bot", ["userId": "ben"])
        #expect(try await anna.say("Ich heiße Anna") == "Freut mich, Anna! Woher kommst du?")
        #expect(try await anna.say("Wie heiße ich?") == "Du heißt Anna! Das habe ich mir gemerkt.")
        #expect(try await other.say("Wie heiße ich?") == "Das hast du mir noch nicht gesagt. Wie heißt du?")
    }
}
