internal import CPocketSphinx
import Foundation
import Synchronization
import VoxCore
import VoxFormats

/// Offline transcription with CMU PocketSphinx and, by default, Debian's packaged en-US models.
/// Decoders are created once per worker (at most one per item in flight) and reused across
/// chunks and files. Audio is fed in 2048-sample blocks, as `pocketsphinx_continuous` does, so
/// cepstral mean normalisation adapts live across an item's chunks; it is reset to the model's
/// prior at the start of every item, so results never depend on which file a worker had before.
public final class PocketSphinxProvider: TranscriptionProvider, ProviderKind, Sendable {
    public static let name = "pocketsphinx"
    public static let summary = "CMU PocketSphinx, offline; takes 16 kHz mono."
    public static func make(_ settings: Settings, context: StageContext) -> any TranscriptionProvider {
        PocketSphinxProvider(settings: settings, blocking: context.blocking)
    }
    public static func streamFormat(_ settings: Settings) -> StreamFormat? {
        StreamFormat(sampleRate: 16000, channels: 1)
    }

    public struct Settings: Sendable, Equatable {
        public var acousticModel: URL
        public var languageModel: URL
        public var dictionary: URL
        public var language: String
    }

    public static let modelDirectory = URL(fileURLWithPath: "/usr/share/pocketsphinx/model/en-us")
    /// Each option, declared once.
    public enum Option {
        public static let acousticModel = StageOption<String>(
            "acousticModel", .path, default: modelDirectory.appendingPathComponent("en-us").path,
            help: "Acoustic model folder (-hmm).")
        public static let languageModel = StageOption<String>(
            "languageModel", .path, default: modelDirectory.appendingPathComponent("en-us.lm.bin").path,
            help: "Language model (-lm).")
        public static let dictionary = StageOption<String>(
            "dictionary", .path, default: modelDirectory.appendingPathComponent("cmudict-en-us.dict").path,
            help: "Pronunciation dictionary (-dict).")
        public static let language = StageOption<String>(
            "language", .string, default: "en", help: "Language code recorded in transcripts.")
    }

    public static let options: [OptionSpec] = [
        Option.acousticModel.spec, Option.languageModel.spec, Option.dictionary.spec, Option.language.spec,
    ]

    public static func settings(_ options: StageOptions) -> Settings {
        Settings(
            acousticModel: options.url(Option.acousticModel), languageModel: options.url(Option.languageModel),
            dictionary: options.url(Option.dictionary), language: options[Option.language])
    }

    let settings: Settings
    /// Where chunks are decoded: off the cooperative pool; a cancelled item stops within a block.
    let blocking: BlockingExecutor
    /// Decoders not in use, and how many were made.
    private let pool = Mutex<(idle: [PocketSphinxDecoder], created: Int)>(([], 0))

    /// How many decoders this provider has loaded (one per worker at most).
    public var decodersCreated: Int { pool.withLock { $0.created } }

    public init(settings: Settings, blocking: BlockingExecutor = BlockingExecutor()) {
        self.settings = settings
        self.blocking = blocking
    }

    public func prepare() async throws {
        for (what, url, isFolder) in [
            ("acoustic model", settings.acousticModel, true), ("language model", settings.languageModel, false),
            ("dictionary", settings.dictionary, false),
        ] {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory),
                isDirectory.boolValue == isFolder
            else {
                throw TranscribeError(
                    .modelUnavailable,
                    "pocketsphinx \(what) not found: \(url.path)"
                        + (url.path.hasPrefix(Self.modelDirectory.path) ? " (apt-get install pocketsphinx-en-us)" : ""))
            }
        }
        let decoder = try makeDecoder()
        pool.withLock { $0.idle.append(decoder) }
    }

    public func beginItem() async throws -> any TranscriptionSession {
        if let idle = pool.withLock({ $0.idle.popLast() }) {
            return Session(provider: self, decoder: idle, reset: true)
        }
        return Session(provider: self, decoder: try await blocking.run { [self] in try makeDecoder() }, reset: true)
    }

    private func makeDecoder() throws -> PocketSphinxDecoder {
        let decoder = try PocketSphinxDecoder(settings: settings)
        pool.withLock { $0.created += 1 }
        return decoder
    }

    fileprivate func giveBack(_ decoder: PocketSphinxDecoder) { pool.withLock { $0.idle.append(decoder) } }

    final class Session: TranscriptionSession {
        let provider: PocketSphinxProvider
        var decoder: PocketSphinxDecoder?

        init(provider: PocketSphinxProvider, decoder: PocketSphinxDecoder, reset: Bool) {
            self.provider = provider
            self.decoder = decoder
            decoder.resetNormalisation()
        }

        func transcribe(_ chunk: AudioChunk) async throws -> Transcript {
            guard let decoder else { throw TranscribeError(.decodeFailed, "session already ended") }
            let (text, words) = try await provider.blocking.run { job in try decoder.decode(chunk, job: job) }
            return Transcript(
                chunk: chunk, text: text, words: words, language: provider.settings.language, provider: "pocketsphinx",
                model: provider.settings.acousticModel.lastPathComponent)
        }

        func end() {
            if let decoder { provider.giveBack(decoder) }
            decoder = nil
        }
    }
}

/// One pocketsphinx decoder. Sendable by hand: a decoder is used by one item at a time (taken
/// from the provider's pool by its session, decoding on one executor thread while the session
/// waits, given back when the item ends); its C state is never touched by two threads at once.
final class PocketSphinxDecoder: @unchecked Sendable {
    private let ps: OpaquePointer
    private let frameRate: Double
    /// The cepstral mean the model starts from (feat.params' -cmninit).
    private var priorMean: [mfcc_t] = []

    init(settings: PocketSphinxProvider.Settings) throws {
        let arguments = [
            "-hmm", settings.acousticModel.path, "-lm", settings.languageModel.path, "-dict", settings.dictionary.path,
            "-logfn", "/dev/null",
        ]
        var cArgs = arguments.map { strdup($0) }
        defer { cArgs.forEach { free($0) } }
        let config = cArgs.withUnsafeMutableBufferPointer {
            cmd_ln_parse_r(nil, ps_args(), Int32($0.count), $0.baseAddress, 1)
        }
        guard let config else { throw TranscribeError(.modelUnavailable, "pocketsphinx rejected its configuration") }
        guard let ps = ps_init(config) else {
            cmd_ln_free_r(config)
            throw TranscribeError(
                .modelUnavailable,
                "pocketsphinx could not load its model from \(settings.acousticModel.path) (language model "
                    + "\(settings.languageModel.lastPathComponent), "
                    + "dictionary \(settings.dictionary.lastPathComponent))"
            )
        }
        cmd_ln_free_r(config)
        self.ps = ps
        frameRate = Double(cmd_ln_int_r(ps_get_config(ps), "-frate"))
        if let feat = ps_get_feat(ps), let cmn = feat.pointee.cmn_struct {
            priorMean = [mfcc_t](repeating: 0, count: Int(cmn.pointee.veclen))
            cmn_live_get(cmn, &priorMean)
        }
    }

    /// Puts the live cepstral mean back to the model's prior: the start of a new item.
    func resetNormalisation() {
        guard !priorMean.isEmpty, let feat = ps_get_feat(ps), let cmn = feat.pointee.cmn_struct else { return }
        cmn_live_set(cmn, priorMean)
    }

    deinit { ps_free(ps) }

    /// Decodes one chunk (16 kHz mono) as a whole utterance; words in the original file's time.
    /// Once `job` is cancelled it stops feeding audio and throws `CancellationError`.
    func decode(_ chunk: AudioChunk, job: BlockingJob? = nil) throws -> (String, [Word]) {
        guard chunk.format == AudioFormat(sampleRate: 16000, channels: 1) else {
            throw TranscribeError(.decodeFailed, "pocketsphinx takes 16 kHz mono, got \(chunk.format)")
        }
        let pcm = chunk.samples.map(WAVData.int16)
        guard ps_start_utt(ps) == 0 else {
            throw TranscribeError(.decodeFailed, "pocketsphinx could not start an utterance")
        }
        var status: Int32 = 0
        pcm.withUnsafeBufferPointer { buffer in
            var offset = 0
            while offset < buffer.count && status >= 0 && job?.isCancelled != true {
                let n = min(2048, buffer.count - offset)
                status = ps_process_raw(ps, buffer.baseAddress! + offset, n, 0, 0)
                offset += n
            }
        }
        let ended = ps_end_utt(ps)
        try job?.checkCancellation()
        guard ended == 0, status >= 0 else {
            throw TranscribeError(.decodeFailed, "pocketsphinx failed on this chunk")
        }
        let logmath = ps_get_logmath(ps)
        var words: [Word] = []
        var segment = ps_seg_iter(ps)
        while let seg = segment {
            if let raw = ps_seg_word(seg), let word = Self.spokenWord(String(cString: raw)) {
                var startFrame: Int32 = 0, endFrame: Int32 = 0
                ps_seg_frames(seg, &startFrame, &endFrame)
                var ascr: Int32 = 0, lscr: Int32 = 0, lback: Int32 = 0
                let posterior = ps_seg_prob(seg, &ascr, &lscr, &lback)
                let confidence = min(1, max(0, logmath_exp(logmath, posterior)))
                words.append(
                    Word(
                        text: word, start: chunk.start + Double(startFrame) / frameRate,
                        end: chunk.start + Double(endFrame + 1) / frameRate, confidence: confidence))
            }
            segment = ps_seg_next(seg)
        }
        return (words.map(\.text).joined(separator: " "), words)
    }

    /// The word as spoken: nil for silence and filler tokens (`<s>`, `<sil>`, `[NOISE]`,
    /// `++breath++`), and without alternate-pronunciation marks (`read(2)` → `read`).
    static func spokenWord(_ token: String) -> String? {
        guard let first = token.first, !"<[+".contains(first) else { return nil }
        if let paren = token.firstIndex(of: "("), token.hasSuffix(")") { return String(token[..<paren]) }
        return token
    }
}
