internal import CSherpaOnnx
import Foundation
import VoxCore
import VoxProcess

/// One Piper voice loaded into sherpa-onnx (onnxruntime on the CPU), shared by every worker of
/// a process: generating is a `const` call on the model, and onnxruntime runs a session from
/// several threads at once. Phonemes come from espeak-ng (`EspeakEngine`, one per process, behind
/// its lock); sherpa-onnx 2.0 takes them as IPA codepoints, one call per sentence.
final class PiperEngine: @unchecked Sendable {
    let voice: PiperVoice
    let config: PiperVoice.Config
    private let tts: OpaquePointer
    /// The rate the model speaks at.
    let sampleRate: Int
    let speakers: Int

    /// Loads the voice: its `.onnx.json`, and the model with the tokens file and metadata
    /// sherpa-onnx reads (from a temporary copy unless the model already has them). Throws
    /// `SynthesizeError(.voice)` naming what is wrong.
    init(voice: PiperVoice) throws {
        self.voice = voice
        do {
            config = try PiperVoice.Config(Data(contentsOf: voice.config))
        } catch {
            throw SynthesizeError(.voice, "the Piper voice's \(voice.config.path) cannot be read: \(error)")
        }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent(
            "voxpipe-piper-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        var model = voice.model
        let tokens = scratch.appendingPathComponent("tokens.txt")
        let session = scratch.appendingPathComponent("session.config")
        do {
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            try Data(config.tokens.utf8).write(to: tokens)
            try Data(Self.sessionConfig.utf8).write(to: session)
            if !PiperVoice.hasMetadata(voice.model) {
                model = scratch.appendingPathComponent("model.onnx")
                try PiperVoice.writeModel(from: voice.model, to: model, metadata: config.metadata)
            }
        } catch {
            throw SynthesizeError(.voice, "cannot prepare the Piper voice \(voice.model.path) for loading: \(error)")
        }
        let config = self.config
        let created: OpaquePointer? = model.path.withCString { modelPath in
            tokens.path.withCString { tokensPath in
                "cpu:\(session.path)".withCString { cpu in
                    var c = SherpaOnnxOfflineTtsConfig()
                    c.model.vits.model = modelPath
                    c.model.vits.tokens = tokensPath
                    // Noise off, so the same text always gives the same samples: sherpa-onnx reads 0
                    // as "the default" (0.667), and the smallest positive float scales the model's
                    // random normal draws to nothing (they vanish when added to anything larger).
                    c.model.vits.noise_scale = .leastNonzeroMagnitude
                    c.model.vits.noise_scale_w = .leastNonzeroMagnitude
                    c.model.vits.length_scale = Float(config.lengthScale)
                    c.model.num_threads = 1
                    c.model.provider = cpu
                    c.max_num_sentences = 1
                    return SherpaOnnxCreateOfflineTts(&c)
                }
            }
        }
        guard let created else {
            throw SynthesizeError(
                .voice, "sherpa-onnx could not load the Piper voice \(voice.model.path) (see its message above)")
        }
        tts = created
        sampleRate = Int(SherpaOnnxOfflineTtsSampleRate(created))
        speakers = Int(SherpaOnnxOfflineTtsNumSpeakers(created))
    }

    deinit { SherpaOnnxDestroyOfflineTts(tts) }

    /// onnxruntime's session options, as sherpa-onnx reads them from the file a provider names
    /// (`cpu:<file>`). No CPU memory arena: the arena keeps the most the phrases ever took for the
    /// life of the process (one long phrase had left 4.7 GB held after its request; bounded ones
    /// still 0.4 GB); without it a phrase's tensors are freed when it has been spoken. The cost
    /// is fresh pages for each phrase's tensors (five times the page faults), not measurably
    /// more time for ordinary sentences.
    static let sessionConfig = "EnableCpuMemArena=0\n"

    /// The longest phrase the model is given at once, in characters of espeak-ng's IPA (about
    /// 1.5 a letter of English text: some 130 letters, 6-7 s of speech). The model's working
    /// memory grows with the phrase, about 0.75 MiB an IPA character: a 4-KB text without
    /// punctuation, one "sentence", had taken 4.7 GB; a phrase of this length takes 0.15 GB.
    /// Sentences of ordinary replies are far shorter and are spoken whole, as before.
    static let maxPhonemes = 200

    /// The sentences of `text` as the model's phonemes: espeak-ng's IPA clause by clause, each
    /// clause's punctuation kept (`,` `;` `:` pause, `.` `?` `!` end a sentence, as Piper's own
    /// phonemizer does), decomposed (NFD) and without symbols the voice lacks; a sentence longer
    /// than `maxPhonemes` in parts (`TextPieces.bounded`: after a clause's punctuation, else
    /// between words, else hard).
    func sentences(_ text: String) throws -> [[Int32]] {
        let clauses = try EspeakEngine.shared.phonemes(text, voice: config.espeakVoice)
        return Self.sentences(clauses, known: config.phonemeIDs)
    }

    static func sentences(
        _ clauses: [(ipa: String, source: String)], known: [Unicode.Scalar: Int], maxPhonemes: Int = maxPhonemes
    ) -> [[Int32]] {
        var sentences: [[Int32]] = []
        var current = ""
        func close() {
            sentences += TextPieces.bounded(current, maxCharacters: maxPhonemes).map { codepoints($0, known: known) }
            current = ""
        }
        for clause in clauses {
            let ipa = clause.ipa.trimmingCharacters(in: .whitespacesAndNewlines)
            let mark = terminator(clause.source)
            if !ipa.isEmpty {
                if !current.isEmpty && !current.hasSuffix(" ") { current += " " }
                current += ipa
                if let mark { current.append(mark) }
            }
            if mark == nil || ",;:".contains(mark ?? " ") {
                continue
            }
            close()
        }
        close()
        return sentences.filter { !$0.isEmpty }
    }

    /// The punctuation that ends a clause's source: the last of `. , ? ! ; :` that is followed
    /// by a space, a closing quote or bracket, or the end (so `9:30` and `p.m` inside do not count).
    static func terminator(_ source: String) -> Character? {
        let chars = Array(source)
        for i in chars.indices.reversed() where ".,?!;:".contains(chars[i]) {
            if i + 1 == chars.count || chars[i + 1].isWhitespace || "\"')]”’".contains(chars[i + 1]) {
                return chars[i]
            }
        }
        return nil
    }

    static func codepoints(_ ipa: String, known: [Unicode.Scalar: Int]) -> [Int32] {
        let text = ipa.trimmingCharacters(in: .whitespaces)
        return text.decomposedStringWithCanonicalMapping.unicodeScalars.filter { known[$0] != nil }.map {
            Int32(bitPattern: $0.value)
        }
    }

    /// Speech for one sentence's phonemes (mono, at `sampleRate`); blocks for the time it takes.
    func generate(_ phonemes: [Int32], speed: Double, speaker: Int) throws -> [Float] {
        guard !phonemes.isEmpty else { return [] }
        let audio: UnsafePointer<SherpaOnnxGeneratedAudio>? = phonemes.withUnsafeBufferPointer { codepoints in
            withUnsafePointer(to: Int32(phonemes.count)) { length in
                "".withCString { empty in
                    var g = SherpaOnnxGenerationConfig()
                    g.speed = Float(speed)
                    g.sid = Int32(speaker)
                    g.silence_scale = 0.2
                    g.phoneme_codepoints = codepoints.baseAddress
                    g.phoneme_codepoints_lens = length
                    g.phoneme_codepoints_num_sentences = 1
                    return SherpaOnnxOfflineTtsGenerateWithConfig(tts, empty, &g, nil, nil)
                }
            }
        }
        guard let audio else { throw SynthesizeError(.engine, "sherpa-onnx failed to synthesize a sentence") }
        defer { SherpaOnnxDestroyOfflineTtsGeneratedAudio(audio) }
        let count = Int(audio.pointee.n)
        guard count > 0, let samples = audio.pointee.samples else { return [] }
        return Array(UnsafeBufferPointer(start: samples, count: count))
    }

    /// sherpa-onnx's version string (`2.0.1`).
    static var version: String { String(cString: SherpaOnnxGetVersionStr()) }

    /// The runtime's libraries, for the item key (after a voice is loaded they are mapped).
    static var libraryFiles: [URL] {
        _ = version
        return LoadedLibraries.files(named: ["libsherpa-onnx-c-api.so", "libonnxruntime.so"])
    }
}
