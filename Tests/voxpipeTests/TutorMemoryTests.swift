import Foundation
import Testing
import VoxTestSupport

/// `voxpipe run` on the text tutor: each lesson remembers what its learner said, and only its own
/// (issue 24).
@Suite(.startsProcess("the voxpipe binary")) struct TutorMemoryTests {
    @Test func eachLessonRemembersItsOwnLearnersName() throws {
        let dir = temporaryDirectory()
        let lessons = dir.appendingPathComponent("lessons")
        try FileManager.default.createDirectory(at: lessons, withIntermediateDirectories: true)
        try "Hallo\nIch heiße Anna\nWie heiße ich?\n".write(
            to: lessons.appendingPathComponent("anna.txt"), atomically: true, encoding: .utf8)
        try "Wie heiße ich?\n".write(to: lessons.appendingPathComponent("ben.txt"), atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("out")
        let result = try voxpipe([
            "run", packageRoot.appendingPathComponent("Pipelines/lesson-tutor-text.json").path, lessons.path, "-o",
            out.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let anna = try String(contentsOf: out.appendingPathComponent("anna/replies.json"), encoding: .utf8)
        let ben = try String(contentsOf: out.appendingPathComponent("ben/replies.json"), encoding: .utf8)
        #expect(anna.contains("Du heißt Anna! Das habe ich mir gemerkt."), "\(anna)")
        #expect(ben.contains("Das hast du mir noch nicht gesagt. Wie heißt du?"), "\(ben)")
        #expect(!ben.contains("Anna"))
    }
}
