import Foundation
import Testing
import VoxCore

@testable import VoxServe

/// A clip with no speech (the learner thinking) is a turn with nothing said, not an error
/// (issue 24); `noSpeechIsError` brings back the 422.
extension TutorServerTests {
    /// Two seconds of digital silence: a 16-kHz mono 16-bit WAV.
    static func silentWAV(seconds: Int = 2) -> Data {
        let samples = 16000 * seconds
        func le<T: FixedWidthInteger>(_ value: T) -> Data { withUnsafeBytes(of: value.littleEndian) { Data($0) } }
        var data = Data("RIFF".utf8) + le(UInt32(36 + samples * 2)) + Data("WAVEfmt ".utf8)
        data += le(UInt32(16)) + le(UInt16(1)) + le(UInt16(1)) + le(UInt32(16000)) + le(UInt32(32000))
        data += le(UInt16(2)) + le(UInt16(16)) + Data("data".utf8) + le(UInt32(samples * 2))
        return data + Data(count: samples * 2)
    }

    @Test(.needs(.whisperModels))
    func aSilentClipIsASuccessfulTurnWithNothingSaidAndNothingRemembered() async throws {
        let server = try await SharedServer.tutor.value
        let channel = "silence-\(UUID().uuidString)"
        let silent = Self.silentWAV().base64EncodedString()
        let answer = try await server.post(
            "\(api)/process-audio", ["audio": silent, "mimeType": "audio/wav", "channel": channel])
        #expect(answer.status == 200, "\(answer.json)")
        #expect(answer.json["success"] as? Bool == true)
        #expect(answer.json["transcription"] as? String == "")
        #expect(answer.json["reply"] as? String == "")
        #expect(answer.json["audio"] as? String == "")
        // The conversation did not move: the next turn is the channel's first.
        let next = try await server.post("\(api)/process-text", ["text": "Hallo!", "channel": channel])
        #expect(next.json["reply"] as? String == "Hallo! Schön, dass du da bist. Wie geht es dir heute?")
    }

    @Test(.needs(.whisperModels))
    func withNoSpeechIsErrorASilentClipIs422() async throws {
        let server = try await ServerFixture.start(spec: lessonTutor) { $0.noSpeechIsError = true }
        let answer = try await server.post(
            "\(api)/process-audio", ["audio": Self.silentWAV().base64EncodedString()])
        #expect(answer.status == 422)
        #expect(answer.json["error"] as? String == "audio: no speech was recognised in the clip")
    }
}
