internal import CEspeakNG
import Foundation
import Synchronization
import VoxCore
import VoxFormats
import VoxProcess

/// espeak-ng: libespeak-ng in the process for its voices and phonemes (it keeps all its state in
/// process globals, so there is exactly one engine per process and every call goes through its
/// lock), and the `espeak-ng` program for speech, a process per piece so that no utterance
/// inherits another's state (see `synthesize`).
final class EspeakEngine: Sendable {
    static let shared = EspeakEngine()

    /// The library's output rate once it is initialized; its lock is the lock of every call into
    /// the library.
    private let library = Mutex<Int?>(nil)

    /// Initializes the library once; returns its output sample rate.
    func start() throws -> Int {
        try library.withLock { sampleRate in
            if let sampleRate { return sampleRate }
            let rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, nil, Int32(espeakINITIALIZE_DONT_EXIT))
            guard rate > 0 else {
                throw SynthesizeError(
                    .engineUnavailable,
                    "espeak-ng could not start: its data is missing (apt-get install espeak-ng-data)")
            }
            sampleRate = Int(rate)
            return Int(rate)
        }
    }

    /// Whether espeak-ng has a voice by this name or language code.
    func hasVoice(_ name: String) throws -> Bool {
        _ = try start()
        return library.withLock { _ in
            espeak_SetVoiceByName(name) == EE_OK
        }
    }

    struct Voice: Sendable, Equatable {
        var name: String
        var rate: Int
        var pitch: Int
        var volume: Int
    }

    /// Speaks each piece of text in turn with `voice`; returns 16-bit samples at the engine's
    /// rate, all pieces one after the other. Each piece is spoken by a fresh `espeak-ng` process:
    /// the library carries state from one utterance into the next (its pitch flutter and wave
    /// phase run on), so in one process the same reply came out slightly different each time and
    /// a run's audio depended on the order its items reached the voice. A process per piece
    /// (about 20 ms) makes every reply's audio a function of its text and voice alone.
    func synthesize(_ pieces: [String], voice: Voice) throws -> [Float] {
        let rate = try start()
        guard let tool = ExternalTool.find("espeak-ng") else {
            throw SynthesizeError(
                .engineUnavailable, "the espeak-ng program is not installed (apt-get install espeak-ng)")
        }
        var samples: [Float] = []
        for piece in pieces {
            let arguments = [
                "-v", voice.name, "-s", String(voice.rate), "-p", String(voice.pitch), "-a", String(voice.volume),
                "-b", "1", "--stdin", "--stdout",
            ]
            let (status, wav, errors) = try ExternalTool.run(tool, arguments, input: Data((piece + "\n").utf8))
            guard status == 0 else {
                let reason = errors.split(separator: "\n").last.map(String.init) ?? "no message"
                throw SynthesizeError(.engine, "espeak-ng failed to synthesize (exit \(status)): \(reason)")
            }
            guard let pcm = Self.pcm16(wav, rate: rate) else {
                throw SynthesizeError(.engine, "espeak-ng gave no 16-bit mono WAV at \(rate) Hz")
            }
            samples += pcm
        }
        return samples
    }

    /// The samples of the WAV espeak-ng writes to a pipe (16-bit mono; its sizes are placeholders,
    /// so the data runs to the end); nil when it is not that at `rate`.
    static func pcm16(_ wav: Data, rate: Int) -> [Float]? {
        let bytes = [UInt8](wav)
        guard let (header, offset) = WAVData.header(of: bytes),
            header.format == AudioFormat(sampleRate: rate, channels: 1), header.bits == 16
        else {
            return nil
        }
        return WAVData.samples(pcm16: bytes[offset...])
    }

    /// IPA for `text` in espeak-ng's voice `voice`, clause by clause, each with the source text
    /// it consumed (which holds the clause's punctuation: Debian's 1.51 has no
    /// `espeak_TextToPhonemesWithTerminator`).
    func phonemes(_ text: String, voice: String) throws -> [(ipa: String, source: String)] {
        _ = try start()
        return try library.withLock { _ in
            guard espeak_SetVoiceByName(voice) == EE_OK else {
                throw SynthesizeError(.voice, "espeak-ng has no voice \"\(voice)\" to phonemize with")
            }
            var clauses: [(ipa: String, source: String)] = []
            let bytes = Array(text.utf8) + [0]
            bytes.withUnsafeBufferPointer { buffer in
                guard let base = buffer.baseAddress else { return }
                var position: UnsafeRawPointer? = UnsafeRawPointer(base)
                let end = UnsafeRawPointer(base) + (bytes.count - 1)
                // espeak-ng reads one character past a clause (and speaks it with the next one), so
                // a clause's source runs to where the pointer stops; nil at the end of the text.
                while let before = position {
                    let ipa = espeak_TextToPhonemes(&position, Int32(espeakCHARS_UTF8), Int32(espeakPHONEMES_IPA))
                    let after = position ?? end
                    let source = String(
                        decoding: UnsafeRawBufferPointer(start: before, count: max(0, after - before)), as: UTF8.self)
                    clauses.append((ipa.map { String(cString: $0) } ?? "", source))
                }
            }
            return clauses
        }
    }

    static var version: String {
        var path: UnsafePointer<CChar>?
        return espeak_Info(&path).map { String(cString: $0) } ?? "unknown"
    }
}
