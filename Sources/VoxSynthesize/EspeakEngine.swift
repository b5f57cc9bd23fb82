internal import CEspeakNG
import Foundation
import VoxCore

/// libespeak-ng, which keeps all its state in process globals (one voice, one parameter set,
/// one callback). So there is exactly one engine per process, and every call goes through its
/// lock: synthesis is serialized across workers. This is the one shared instance in voxpipe,
/// because the C library itself is one.
final class EspeakEngine: @unchecked Sendable {
    static let shared = EspeakEngine()

    private let lock = NSLock()
    private var sampleRate: Int?
    /// The voice and parameters espeak-ng holds now; set again only when they change, because
    /// loading a voice costs more than speaking a sentence.
    private var current: Voice?

    /// Initializes the library once; returns its output sample rate.
    func start() throws -> Int {
        try lock.withLock {
            if let sampleRate { return sampleRate }
            let rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, nil, Int32(espeakINITIALIZE_DONT_EXIT))
            guard rate > 0 else {
                throw VoxError(
                    .unavailable, "espeak-ng could not start: its data is missing (apt-get install espeak-ng-data)")
            }
            espeak_SetSynthCallback(synthCallback)
            sampleRate = Int(rate)
            return Int(rate)
        }
    }

    /// Whether espeak-ng has a voice by this name or language code.
    func hasVoice(_ name: String) throws -> Bool {
        _ = try start()
        return lock.withLock {
            current = nil
            return espeak_SetVoiceByName(name) == EE_OK
        }
    }

    struct Voice: Sendable, Equatable {
        var name: String
        var rate: Int
        var pitch: Int
        var volume: Int
    }

    /// Speaks each piece of text in turn with `voice`; returns 16-bit samples at the engine's
    /// rate, all pieces one after the other.
    func synthesize(_ pieces: [String], voice: Voice) throws -> [Int16] {
        _ = try start()
        return try lock.withLock {
            if current != voice {
                current = nil
                guard espeak_SetVoiceByName(voice.name) == EE_OK else {
                    throw SynthesizeError(.voice, "espeak-ng has no voice \"\(voice.name)\"")
                }
                espeak_SetParameter(espeakRATE, Int32(voice.rate), 0)
                espeak_SetParameter(espeakPITCH, Int32(voice.pitch), 0)
                espeak_SetParameter(espeakVOLUME, Int32(voice.volume), 0)
                current = voice
            }
            let collector = SampleCollector()
            let context = Unmanaged.passRetained(collector)
            defer { context.release() }
            for piece in pieces {
                let status = piece.withCString { cText in
                    espeak_Synth(
                        cText, strlen(cText) + 1, 0, POS_CHARACTER, 0, UInt32(espeakCHARS_UTF8), nil, context.toOpaque()
                    )
                }
                guard status == EE_OK else {
                    throw SynthesizeError(.engine, "espeak-ng failed to synthesize (error \(status.rawValue))")
                }
            }
            espeak_Synchronize()
            return collector.samples
        }
    }

    /// IPA for `text` in espeak-ng's voice `voice`, clause by clause, each with the source text
    /// it consumed (which holds the clause's punctuation: Debian's 1.51 has no
    /// `espeak_TextToPhonemesWithTerminator`). The engine's own voice is set again before it next speaks.
    func phonemes(_ text: String, voice: String) throws -> [(ipa: String, source: String)] {
        _ = try start()
        return try lock.withLock {
            current = nil
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

/// Receives samples from the synthesis callback.
final class SampleCollector {
    var samples: [Int16] = []
}

private func synthCallback(
    _ wav: UnsafeMutablePointer<Int16>?, _ count: Int32, _ events: UnsafeMutablePointer<espeak_EVENT>?
) -> Int32 {
    guard let events, let user = events.pointee.user_data else { return 0 }
    let collector = Unmanaged<SampleCollector>.fromOpaque(user).takeUnretainedValue()
    if let wav, count > 0 { collector.samples.append(contentsOf: UnsafeBufferPointer(start: wav, count: Int(count))) }
    return 0
}
