import Foundation
import Testing
import VoxCore
import VoxFormats
import VoxTestSupport
import VoxTesting

@testable import VoxChunk

/// Known voices on real diarization: the LibriVox reader as a tutor enrolled from one clip, in
/// lessons with learners of other voices.
extension SpeakerChunkTests {
    /// A lesson: the tutor's LibriVox lines, each answered by the learner's espeak-ng voice.
    static func lesson(tutor lines: [String], learner voice: String) async throws -> Conversation {
        let answers = ["I think she was very kind to her family.", "Yes, I read it twice before the lesson."]
        var c = Conversation()
        c.pause(0.5)
        for (line, answer) in zip(lines, answers) {
            c.say(try reader(line), "tutor")
            c.pause(0.8)
            c.say(try await machine(answer, voice: voice), "learner")
            c.pause(0.8)
        }
        return c
    }

    @Test func aTutorEnrolledFromOneClipIsNamedWithEitherLearnerAndNeitherLearnerIs() async throws {
        // Enrolled from one clip (7 s) neither lesson holds.
        let dir = URL(fileURLWithPath: temporaryDirectory().path, isDirectory: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try WAVData.pcm16(try Self.reader("0870"), format: Self.mono16k)
            .write(to: dir.appendingPathComponent("tutor.wav"))
        let lessons = [
            ("a man's voice", try await Self.lesson(tutor: ["0880", "0890"], learner: "en-us")),
            ("a woman's voice", try await Self.lesson(tutor: ["0920", "0930"], learner: "en-gb-x-rp+f3")),
        ]
        for (learner, lesson) in lessons {
            let (chunks, talk) = try await speakersAndTalk(
                lesson.samples, ["voices": ["Tutor": "tutor.wav"]], baseDirectory: dir)
            #expect(
                labels(of: lesson, chunks) == ["Tutor", "Speaker 1", "Tutor", "Speaker 1"],
                "the learner with \(learner)")
            #expect(talk?.map(\.speaker) == ["Tutor", "Speaker 1"], "the learner with \(learner)")
        }
    }
}
