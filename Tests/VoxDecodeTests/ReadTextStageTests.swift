import Foundation
import Testing
import VoxCore
import VoxTestSupport
import VoxTesting

@testable import VoxDecode

@Suite struct ReadTextStageTests {
    func read(_ name: String, _ content: String, options: [String: JSONValue] = [:]) async throws -> [Transcript] {
        try await read(name, bytes: Data(content.utf8), options: options)
    }

    func read(_ name: String, bytes: Data, options: [String: JSONValue] = [:]) async throws -> [Transcript] {
        let url = temporaryDirectory().appendingPathComponent(name)
        try bytes.write(to: url)
        let harness = try StageHarness(
            ReadTextStage.self, options: options, item: InputFile(url: url, relativePath: name, outputName: "x"))
        return try await harness.run([harness.item], commit: false).outputs
    }

    @Test func aTextFileIsOneTurnALineWithoutBlankAndCommentLines() async throws {
        let turns = try await read(
            "lesson.txt", "Hallo, ich heiße Anna.\r\n# the teacher's note\n\n  Grüße aus der Straße!  \n",
            options: ["language": "de"])
        #expect(turns.map(\.text) == ["Hallo, ich heiße Anna.", "Grüße aus der Straße!"])
        #expect(
            turns.map(\.chunk.index) == [0, 1] && turns.map(\.chunk.start) == [0, 1]
                && turns.map(\.chunk.end) == [1, 2])
        #expect(turns.allSatisfy { $0.language == "de" && $0.chunk.cut == .text && $0.chunk.samples.isEmpty })
    }

    @Test func aWhisperStyleTranscriptGivesATurnPerSegmentWithItsTimesAndWords() async throws {
        let json =
            #"{"text":"Guten Morgen. Wie geht's?","language":"de","segments":[{"id":0,"start":0.5,"end":1.7,"#
            + #""text":" Guten Morgen.","words":[{"word":" Guten","start":0.5,"end":0.9,"probability":0.9},"#
            + #"{"word":" Morgen.","start":1.0,"end":1.7}]},{"id":1,"start":2.0,"end":3.1,"text":"   "},"#
            + #"{"id":2,"start":3.5,"end":4.0,"text":"Wie geht's?"}]}"#
        let turns = try await read("t.json", json)
        #expect(turns.map(\.text) == ["Guten Morgen.", "Wie geht's?"])
        #expect(turns.map(\.chunk.start) == [0.5, 3.5] && turns.map(\.chunk.index) == [0, 1])
        #expect(
            turns[0].words == [
                Word(text: "Guten", start: 0.5, end: 0.9, confidence: 0.9),
                Word(text: "Morgen.", start: 1.0, end: 1.7, confidence: nil),
            ])
        #expect(turns[0].language == "de")
    }

    @Test func textThatIsNotATranscriptFailsTheItemWithTheReason() async throws {
        await #expect(throws: DecodeError(.unreadable, "no \"text\" and no \"segments\"")) {
            _ = try await read("spec.json", #"{"stages":[]}"#)
        }
        await #expect(throws: DecodeError(.unreadable, "segments[0]: expected an object with \"text\"")) {
            _ = try await read("bad.json", #"{"segments":[3]}"#)
        }
        await #expect(throws: DecodeError(.unreadable, "not UTF-8 text")) {
            _ = try await read("latin1.txt", bytes: Data([0x47, 0x72, 0xFC, 0xDF, 0x65]))
        }
    }
}
