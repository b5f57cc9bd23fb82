import Foundation
import Logging
import Synchronization
import VoxCore
import VoxDecode
import VoxFormats
import VoxRequest
import VoxWrite

/// The tutor's stages, loaded once from a spec and run per request: the same stages, providers,
/// models and rules as `voxpipe run` on that spec, so the same audio gets the same
/// transcription and reply.
///
/// A request is one turn. The plan is served as `Plan.servingOneTurn` makes it: every stage in its
/// one-turn configuration (a chunker takes the whole clip; no 8-s cutting), and the writers (and
/// what reads from them) left out: the answer goes back in the response, not to files. Requests
/// enter at a stage found by what it does (the first that gives transcripts from audio, replies,
/// speech), never by its kind's name.
///
///   audio ─▶ [decode] ─▶ [resample] ─▶ [chunk: whole] ─▶ [transcribe] ─▶ [reply] ─▶ [synthesize]
///   text ─────────────────────────────────────────────────────────────────┘
public final class TutorPipeline: Sendable {
    /// The plan as served (one turn a request, no writers).
    public let plan: Plan
    let runner: Runner
    /// The stages a request enters at: the root (audio), the reply stage (text), the speech stage.
    let rootID: String
    let replyID: String
    let synthesizeID: String
    /// The transcribe stage, where the transcription-only runs end.
    let transcribeID: String
    /// The runners of transcription alone, made on first use.
    let transcribers = Transcribers()
    let scratch: URL
    let logger: Logger
    let rateConversion: (any RateConversion)?
    /// The keys in use (the providers' and the clients'): redacted from every answer and log line.
    let secrets: Secrets
    /// What the pipeline was made from, to make a variant of it (`translating()`).
    let source: Source

    struct Source: Sendable {
        /// The checked plan as `run` would run it (before `servingOneTurn`).
        var plan: Plan
        var context: StageContext
        var maxClipSeconds: Double
    }

    /// Serves a checked plan (as `Planner` made it for `run`): takes it as `Plan.servingOneTurn`
    /// transforms it and prepares every stage once (models load here). Throws
    /// `TutorError(.unservableSpec)` for a plan without transcribe, reply and synthesize stages, and
    /// `.unavailable` for a provider that will not load, as `run` does.
    public init(plan checked: Plan, context: StageContext, maxClipSeconds: Double) async throws {
        source = Source(plan: checked, context: context, maxClipSeconds: maxClipSeconds)
        let plan = checked.servingOneTurn(maxSeconds: maxClipSeconds)
        self.plan = plan
        func first(_ name: String, giving output: PayloadType, from input: PayloadType? = nil) throws -> Plan.Node {
            guard let node = plan.firstStage(giving: output, from: input) else {
                throw TutorError(
                    .unservableSpec,
                    "serve answers with transcribe, reply and synthesize stages, but the spec has no \(name) stage")
            }
            return node
        }
        let transcribe = try first("transcribe", giving: .transcript, from: .audioChunk)
        let reply = try first("reply", giving: .reply), synthesize = try first("synthesize", giving: .speech)
        guard plan.descendants(of: transcribe.index).contains(reply.index),
            plan.descendants(of: reply.index).contains(synthesize.index)
        else {
            throw TutorError(
                .unservableSpec,
                "serve needs '\(reply.id)' (reply) to read from '\(transcribe.id)' (transcribe) and "
                    + "'\(synthesize.id)' (synthesize) from '\(reply.id)'")
        }
        rootID = plan.nodes.first { $0.parents.isEmpty }?.id ?? transcribe.id
        replyID = reply.id
        transcribeID = transcribe.id
        synthesizeID = synthesize.id
        logger = context.logger
        rateConversion = context.rateConversion
        secrets = context.secrets
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent(
            "voxpipe-serve-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        runner = try await Runner.prepare(
            plan, options: RunOptions(outputDirectory: scratch, jobs: 1), context: context)
    }

    deinit { try? FileManager.default.removeItem(at: scratch) }

    /// The same plan with its transcribe stages translating into English (`Plan.translating()`:
    /// whisper's `task` translate); nil when no transcribe stage's provider can.
    public func translating() async throws -> TutorPipeline? {
        guard let plan = source.plan.translating() else { return nil }
        return try await TutorPipeline(plan: plan, context: source.context, maxClipSeconds: source.maxClipSeconds)
    }

    /// What one turn gave.
    public struct Answer: Sendable {
        public var transcription: String
        public var reply: String
        /// The spoken reply (all of it, when the reply was spoken in parts); nil when there was
        /// no reply to speak.
        public var speech: AudioChunk?
        /// What the transcribe stage gave, in order (none for a text turn).
        public var transcripts: [Transcript] = []
    }

    /// Transcribes a clip (a file in any format the decoder reads) as one turn and answers it;
    /// `progress` gets each transcript, reply and piece of speech as the stages give it.
    public func answer(
        audioFile url: URL, conversation: Conversation, overrides: RequestOverrides = RequestOverrides(),
        progress: @escaping @Sendable (any Payload) -> Void = { _ in }
    ) async throws -> Answer {
        let item = InputFile(url: url, relativePath: url.lastPathComponent, outputName: "request")
        return try await run(
            item, value: item, at: rootID, conversation: conversation, overrides: overrides, progress: progress)
    }

    /// How a transcription-only run cuts its clip.
    public enum Chunking: Sendable {
        /// As the spec's chunk stage says, as `voxpipe run` cuts the same file.
        case asSpecified
        /// The clip whole, as a turn (the chunk stage's one-turn configuration).
        case wholeClip
    }

    /// Transcribes a clip with the stages up to the transcribe stage only (no reply, no speech);
    /// `progress` gets each transcript as it is made.
    public func transcribe(
        audioFile url: URL, chunking: Chunking, overrides: RequestOverrides = RequestOverrides(),
        progress: @escaping @Sendable (Transcript) -> Void = { _ in }
    ) async throws -> Answer {
        let runner = try await transcribers.runner(chunking) {
            let plan = chunking == .wholeClip ? self.plan : self.source.plan
            return try await Runner.prepare(
                plan.endingAt(self.transcribeID), options: RunOptions(outputDirectory: self.scratch, jobs: 1),
                context: self.source.context)
        }
        let item = InputFile(url: url, relativePath: url.lastPathComponent, outputName: "request")
        return try await run(
            item, value: item, at: rootID, conversation: Conversation(), overrides: overrides, runner: runner
        ) { payload in
            if let transcript = payload as? Transcript { progress(transcript) }
        }
    }

    /// Answers a text turn: the stages from reply on.
    public func answer(
        text: String, conversation: Conversation, overrides: RequestOverrides = RequestOverrides()
    ) async throws -> Answer {
        let chunk = AudioChunk(
            format: AudioFormat(sampleRate: 16000, channels: 1), samples: [], start: 0, end: 0, index: 0, cut: .text)
        let transcript = Transcript(chunk: chunk, text: text, words: [], language: nil, provider: "text", model: nil)
        return try await answer(transcript: transcript, conversation: conversation, overrides: overrides)
    }

    /// Answers what was heard (a transcript `transcribe` gave): the stages from reply on, so an
    /// audio turn answered in two steps gets the reply it gets in one.
    public func answer(
        transcript: Transcript, conversation: Conversation, overrides: RequestOverrides = RequestOverrides(),
        progress: @escaping @Sendable (any Payload) -> Void = { _ in }
    ) async throws -> Answer {
        let item = InputFile(url: URL(fileURLWithPath: "/dev/null"), relativePath: "text", outputName: "request")
        return try await run(
            item, value: transcript, at: replyID, conversation: conversation, overrides: overrides, progress: progress)
    }

    /// Speaks `text` as it is: the stages from synthesize on (no reply).
    public func speak(text: String, overrides: RequestOverrides = RequestOverrides()) async throws -> AudioChunk? {
        let chunk = AudioChunk(
            format: AudioFormat(sampleRate: 16000, channels: 1), samples: [], start: 0, end: 0, index: 0, cut: .text)
        let transcript = Transcript(chunk: chunk, text: text, words: [], language: nil, provider: "text", model: nil)
        let item = InputFile(url: URL(fileURLWithPath: "/dev/null"), relativePath: "speech", outputName: "request")
        let reply = Reply(transcript: transcript, text: text)
        return try await run(item, value: reply, at: synthesizeID, conversation: Conversation(), overrides: overrides)
            .speech
    }

    /// Raw 16-bit little-endian mono PCM at `rate` (OpenAI's `pcm`: 24 kHz).
    public func pcm16(_ speech: AudioChunk, rate: Int) throws -> Data {
        var samples = speech.samples
        let channels = speech.format.channels
        if channels > 1 {
            samples = stride(from: 0, to: samples.count - channels + 1, by: channels).map { start in
                samples[start..<start + channels].reduce(0, +) / Float(channels)
            }
        }
        let mono = AudioFormat(sampleRate: speech.format.sampleRate, channels: 1)
        if let converter = try AudioOutput(
            encoding: AudioEncoding(format: .wav), rate: rate, rateConversion: rateConversion
        )
        .converter(for: mono) {
            samples = try converter.convertAll(samples)
        }
        return WAVData.pcm16Bytes(samples)
    }

    func run(
        _ item: InputFile, value: any Payload, at start: String, conversation: Conversation,
        overrides: RequestOverrides, runner: Runner? = nil,
        progress: @escaping @Sendable (any Payload) -> Void = { _ in }
    ) async throws -> Answer {
        let folder = "request-\(UUID().uuidString)"
        let context = ItemContext(
            item: item, outputs: ItemOutputs(root: scratch, folderName: folder), logger: logger,
            request: overrides.values(conversation: conversation))
        defer { try? FileManager.default.removeItem(at: scratch.appendingPathComponent(folder)) }
        let collector = TurnCollector(progress: progress)
        try await (runner ?? self.runner).respond(to: value, at: start, context: context, sink: collector)
        return collector.answer(text: (value as? Transcript)?.text)
    }

    /// Encodes speech as a file of `encoding`'s format, at a rate its codec takes: written as
    /// `write-audio` writes a chunk (`AudioOutput`), so the answer is the file a batch run makes.
    /// Off the cooperative pool: an m4a answer waits for ffmpeg.
    public func encode(_ speech: AudioChunk, as encoding: AudioEncoding) async throws -> Data {
        let url = scratch.appendingPathComponent("speech-\(UUID().uuidString).\(encoding.format.ext)")
        defer { try? FileManager.default.removeItem(at: url) }
        let output = AudioOutput(encoding: encoding, rateConversion: rateConversion)
        return try await source.context.blocking.run {
            try output.write(speech, to: url)
            return try Data(contentsOf: url)
        }
    }

    /// A folder for request uploads, removed with the pipeline.
    var uploads: URL { scratch }

    /// Writes an upload into `uploads` as a file named with extension `ext`, and reads the length
    /// its header states (nil where libsndfile cannot tell): on the blocking executor.
    func store(upload data: Data, ext: String) async throws -> (url: URL, seconds: Double?) {
        let url = scratch.appendingPathComponent("upload-\(UUID().uuidString).\(ext)")
        return try await source.context.blocking.run {
            try data.write(to: url)
            return (url, AudioFileContents.duration(url))
        }
    }
}

/// Keeps what a turn's stages gave: transcripts, replies and speech, in order.
final class TurnCollector: OutputSink, Sendable {
    private struct Collected {
        var transcripts: [Transcript] = []
        var replies: [String] = []
        var speech: [AudioChunk] = []
    }

    private let collected = Mutex(Collected())
    /// Told of each payload as it is collected.
    private let progress: @Sendable (any Payload) -> Void

    init(progress: @escaping @Sendable (any Payload) -> Void = { _ in }) { self.progress = progress }

    func collect(_ payload: any Payload) {
        defer { progress(payload) }
        collected.withLock { c in
            switch payload {
            case let transcript as Transcript: c.transcripts.append(transcript)
            case let reply as Reply: c.replies.append(reply.text)
            case let spoken as Speech: c.speech.append(spoken.audio)
            default: break
            }
        }
    }

    /// The turn's answer; `text` is the transcription a text turn came with.
    func answer(text: String?) -> TutorPipeline.Answer {
        collected.withLock { c in
            let transcription = text ?? c.transcripts.map(\.text).joined(separator: " ")
            var audio: AudioChunk?
            if var first = c.speech.first {
                // A reply spoken in parts is one answer.
                for part in c.speech.dropFirst() where part.format == first.format {
                    first.samples += part.samples
                    first.end += part.end - part.start
                }
                audio = first
            }
            return TutorPipeline.Answer(
                transcription: transcription.trimmingCharacters(in: .whitespacesAndNewlines),
                reply: c.replies.joined(separator: " "), speech: audio, transcripts: c.transcripts)
        }
    }
}

/// The runners of transcription alone, one per way of chunking, prepared on first use (models
/// come from the shared engine cache: nothing loads twice).
actor Transcribers {
    private var runners: [TutorPipeline.Chunking: Task<Runner, any Error>] = [:]

    func runner(
        _ chunking: TutorPipeline.Chunking, make: @escaping @Sendable () async throws -> Runner
    ) async throws -> Runner {
        if let made = runners[chunking] { return try await made.value }
        let task = Task { try await make() }
        runners[chunking] = task
        return try await task.value
    }
}
