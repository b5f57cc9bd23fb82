import Foundation
import Testing
import VoxCore
import VoxFormats
import VoxSynthesize
import VoxTestSupport

/// Speech answers from Tests/Fixtures/fuzz-regressions/http/ (`make fuzz`, target http).
@Suite struct SpeechFuzzRegressionTests {
    func decodeError(_ fixture: String) throws -> (any CategorizedError)? {
        do {
            _ = try OpenAISpeaker.decode(try Data(contentsOf: fuzzRegression("http", fixture)), format: "wav")
            return nil
        } catch let error as any CategorizedError {
            return error
        }
    }

    /// A WAV answer whose header says 1 Hz: 4 KB became 96 million samples at write-wav's 48 kHz.
    @Test func aSpeechAnswerAt1HzIsRefused() throws {
        let error = try decodeError("speech-1-hz.wav")
        #expect(error?.category == .upstream)
        #expect(error?.message == "the speech answer is 1 Hz, 1 ch; expected mono at 8–192 kHz")
    }

    /// A WAV answer with 0 channels: no frames to write, whatever the samples. (WAVData refuses
    /// such a header outright, so the answer is "not a 16-bit PCM WAV".)
    @Test func aSpeechAnswerWithNoChannelsIsRefused() throws {
        let error = try decodeError("speech-no-channels.wav")
        #expect(error?.category == .upstream)
        #expect(error?.message.hasPrefix("the speech answer is not a 16-bit PCM WAV") == true)
    }
}
