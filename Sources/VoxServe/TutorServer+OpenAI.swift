import Foundation
import Hummingbird
import NIOCore
import Synchronization
import VoxCore
import VoxDecode
import VoxRequest
import VoxWrite

/// OpenAI's audio API on the same server, answered by the served spec's stages (transcription:
/// up to its transcribe stage; speech: its synthesize stage), so any OpenAI client can use
/// voxpipe's offline recogniser and voice:
///
///   GET  /v1/models                 → {object: "list", data: [{id, object: "model", owned_by}]}
///   POST /v1/audio/transcriptions   multipart: file, model, language, prompt, temperature,
///                                   response_format (json, text, srt, vtt, verbose_json),
///                                   timestamp_granularities[] (segment, word); with
///                                   stream=true, server-sent events: transcript.text.delta a
///                                   segment as each chunk is transcribed, then transcript.text.done
///
///   POST /v1/audio/translations     as transcriptions, into English (a whisper transcribe stage)
///   POST /v1/audio/speech           JSON: input, model, voice, speed, response_format (mp3, opus,
///                                   aac, flac, wav, pcm: 16-bit mono at 24 kHz)
///
/// Errors are OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`.
extension TutorServer {
    /// The formats `/v1/audio/transcriptions` answers in.
    enum TranscriptionFormat: String, CaseIterable {
        case json, text, srt, vtt
        case verboseJSON = "verbose_json"
    }

    func addOpenAIRoutes(to router: Router<ServeRequestContext>) {
        router.get("/v1/models") { request, _ in
            if let refused = self.unauthorized(request) { return self.openAIError(refused) }
            return self.encoded(200, ModelList(data: [.init(id: self.pipeline.plan.name)]))
        }
        for route in OpenAIRoute.allCases {
            router.post(RouterPath(route.rawValue)) { request, context in
                await self.counted(route.rawValue) {
                    if let refused = self.unauthorized(request) { return (self.openAIError(refused), refused) }
                    // Every one runs the pipeline: refused on arrival, unread, when every place is taken (its
                    // connection's gate took the place as it arrived, or refused it there).
                    guard self.admission.claim(arrivedOn: ObjectIdentifier(context.channel)) || self.admission.enter()
                    else { return (self.openAIError(Self.overloaded), Self.overloaded) }
                    // Given back as the answer is made, or, for a stream, as its last event is sent.
                    let place = AdmissionPlace(self.admission)
                    defer { place.releaseUnlessKept() }
                    do {
                        let connection = context.channel
                        let answer =
                            switch route {
                            case .speech: try await self.speech(request, connection: connection)
                            case .transcriptions:
                                try await self.transcription(request, connection: connection, place: place)
                            case .translations:
                                try await self.transcription(
                                    request, translate: true, connection: connection, place: place)
                            }
                        return (answer, nil)
                    } catch {
                        let failure =
                            ServeError.from(error)
                        return (self.openAIError(failure), failure)
                    }
                }
            }
        }
    }

    /// A transcription, or with `translate` an English translation (the spec's whisper stage with
    /// task translate, made on first use).
    func transcription(
        _ request: Request, translate: Bool = false, connection: (any Channel)? = nil, place: AdmissionPlace? = nil
    ) async throws -> Response {
        let type = request.headers[.contentType] ?? ""
        guard type.lowercased().hasPrefix("multipart/form-data"), let boundary = Multipart.boundary(type) else {
            throw ServeError.badRequest("bad_request", "expected a multipart/form-data body with a file")
        }
        let body = try await readData(request)
        guard let parts = Multipart.parse(body, boundary: boundary) else {
            throw ServeError.badRequest("bad_request", "the multipart body could not be read")
        }
        func field(_ name: String) -> String? {
            parts.first { $0.name == name }.map { String(decoding: $0.data, as: UTF8.self) }
        }
        guard let file = parts.first(where: { $0.name == "file" }), !file.data.isEmpty else {
            throw ServeError.badRequest("bad_request", "file: expected the audio as a file part")
        }
        let formatName = field("response_format") ?? "json"
        guard let format = TranscriptionFormat(rawValue: formatName) else {
            throw ServeError.badRequest(
                "bad_request",
                "response_format: \"\(formatName)\" is not one of "
                    + TranscriptionFormat.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let granularities = Set(
            parts.filter { $0.name == "timestamp_granularities[]" }.map {
                String(decoding: $0.data, as: UTF8.self)
            })
        let head = [UInt8](file.data.prefix(512))
        guard head.count >= FileSniffer.minimumBytes, let sniffed = FileSniffer.format(of: head) else {
            throw ServeError(415, "unknown_audio", "file: not a known audio format")
        }
        let pipeline = translate ? try await translator.pipeline(from: self.pipeline) : self.pipeline
        guard let pipeline else {
            throw ServeError.badRequest(
                "cannot_translate", "the served spec's transcribe provider cannot translate (whisper can)")
        }
        let (upload, length) = try await pipeline.store(upload: file.data, ext: Self.ext(sniffed))
        let removeUpload: @Sendable () -> Void = { try? FileManager.default.removeItem(at: upload) }
        // A clip over --max-clip is refused from its header, before it is queued or decoded.
        do { try refuseLong(length) } catch {
            removeUpload()
            throw error
        }
        // `language` over the spec's (whisper honours it; an unknown code fails the turn, 422).
        let language = field("language").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .flatMap { $0.isEmpty ? nil : TranscriptionRequest(language: $0) }
        if field("stream") == "true" {
            place?.keep()
            let logprobs = parts.contains {
                $0.name == "include[]" && String(decoding: $0.data, as: UTF8.self) == "logprobs"
            }
            return streamedTranscription(
                upload: upload, pipeline: pipeline, language: language, logprobs: logprobs, connection: connection
            ) {
                removeUpload()
                place?.release()
            }
        }
        defer { removeUpload() }
        // The transcribe stage and those before it: a transcription is no tutor turn.
        let answer = try await runPipeline(
            upload: upload, order: "openai-\(UUID().uuidString)", call: OpenAICall(connection: connection)
        ) {
            var overrides = $0
            overrides.transcription = language
            return try await pipeline.transcribe(audioFile: upload, chunking: .wholeClip, overrides: overrides)
        }
        let transcripts = answer.transcripts.filter { !$0.text.allSatisfy(\.isWhitespace) }
        switch format {
        case .json:
            return encoded(200, TranscriptionText(text: answer.transcription))
        case .text:
            return text(answer.transcription + "\n", type: "text/plain; charset=utf-8")
        case .srt:
            return text(TranscriptFormat.srt.render(transcripts), type: "application/x-subrip")
        case .vtt:
            return text(TranscriptFormat.vtt.render(transcripts), type: "text/vtt")
        case .verboseJSON:
            var segments: [VerboseTranscription.Segment] = []
            for transcript in transcripts {
                let spans =
                    transcript.segments.isEmpty
                    ? [
                        TranscriptSegment(
                            text: transcript.text, start: transcript.chunk.start, end: transcript.chunk.end)
                    ]
                    : transcript.segments
                for span in spans {
                    segments.append(
                        .init(
                            id: segments.count, start: span.start, end: span.end,
                            text: span.text.trimmingCharacters(in: .whitespaces)))
                }
            }
            let words = transcripts.flatMap(\.words).map {
                VerboseTranscription.Word(word: $0.text, start: $0.start, end: $0.end)
            }
            return encoded(
                200,
                VerboseTranscription(
                    task: translate ? "translate" : "transcribe",
                    language: transcripts.first?.language ?? field("language") ?? "",
                    duration: transcripts.last?.chunk.end ?? 0, text: answer.transcription, segments: segments,
                    words: granularities.contains("word") ? words : nil))
        }
    }

    /// `stream=true`: server-sent events as OpenAI sends them. The clip is cut as the spec's chunk
    /// stage cuts it (as `voxpipe run` does), and as soon as a chunk is transcribed each of its
    /// segments is a `transcript.text.delta` (with `logprobs` per word, from the recogniser's word
    /// probabilities, when `include[]=logprobs`); then one `transcript.text.done` with the whole
    /// text (the deltas joined) and `usage` (the audio's seconds). A failure after the events have
    /// begun is an `error` event. `finished` runs when the last event is sent or the client goes.
    func streamedTranscription(
        upload: URL, pipeline: TutorPipeline, language: TranscriptionRequest?, logprobs: Bool,
        connection: (any Channel)?,
        finished: @escaping @Sendable () -> Void
    ) -> Response {
        let (events, continuation) = AsyncStream<ByteBuffer>.makeStream()
        let secrets = pipeline.secrets
        @Sendable func send(_ event: JSONValue) {
            continuation.yield(
                ByteBuffer(bytes: Data("data: ".utf8) + secrets.redact(event.canonicalData()) + Data("\n\n".utf8)))
        }
        let work = Task {
            defer {
                continuation.finish()
                finished()
            }
            let text = Mutex("")
            do {
                let answer = try await runPipeline(
                    upload: upload, order: "openai-\(UUID().uuidString)", call: OpenAICall(connection: connection)
                ) { overrides in
                    var overrides = overrides
                    overrides.transcription = language
                    return try await pipeline.transcribe(
                        audioFile: upload, chunking: .asSpecified, overrides: overrides
                    ) {
                        transcript in
                        for piece in Self.deltas(transcript) {
                            let delta = text.withLock { text in
                                let delta = text.isEmpty ? piece.text : " " + piece.text
                                text += delta
                                return delta
                            }
                            var event: [String: JSONValue] = [
                                "type": "transcript.text.delta", "delta": .string(delta),
                            ]
                            if logprobs { event["logprobs"] = Self.logprobs(piece.words) }
                            send(.object(event))
                        }
                    }
                }
                let seconds = answer.transcripts.map(\.chunk.end).max() ?? 0
                var done: [String: JSONValue] = [
                    "type": "transcript.text.done", "text": .string(text.withLock { $0 }),
                    "usage": ["type": "duration", "seconds": .number((seconds * 1000).rounded() / 1000)],
                ]
                if logprobs { done["logprobs"] = Self.logprobs(answer.transcripts.flatMap(\.words)) }
                send(.object(done))
            } catch {
                let failure = ServeError.from(error)
                send(Self.errorEvent(failure))
            }
        }
        continuation.onTermination = { _ in work.cancel() }
        return Response(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: ResponseBody(asyncSequence: events))
    }

    /// A chunk's text as the deltas of a stream: one a segment the recogniser heard (Whisper's
    /// segments: the transcript files' cues, each with the words that start in it); the whole
    /// text as one delta when the segments do not make it up (a provider without them). Joined
    /// with spaces, the deltas are the chunk's text.
    static func deltas(_ transcript: Transcript) -> [(text: String, words: [Word])] {
        let said = transcript.text.trimmingCharacters(in: .whitespacesAndNewlines)
        let cues = TranscriptFormat.cues([transcript]).map {
            (text: $0.text.trimmingCharacters(in: .whitespacesAndNewlines), words: $0.words)
        }
        guard cues.count > 1, cues.map(\.text).joined(separator: " ") == said else {
            return said.isEmpty ? [] : [(said, transcript.words)]
        }
        return cues
    }

    /// OpenAI's `logprobs`: a token each (here a word), its log probability and its UTF-8 bytes.
    static func logprobs(_ words: [Word]) -> JSONValue {
        .array(
            words.compactMap { word in
                guard let p = word.confidence, p > 0 else { return nil }
                return [
                    "token": .string(word.text), "logprob": .number(log(p)),
                    "bytes": .array(word.text.utf8.map { .number(Double($0)) }),
                ]
            })
    }

    /// An `error` event in OpenAI's shape (the streams' and the realtime sessions').
    static func errorEvent(_ failure: ServeError, eventID: String? = nil) -> JSONValue {
        var error: [String: JSONValue] = [
            "type": .string(failure.status >= 500 ? "server_error" : "invalid_request_error"),
            "code": .string(failure.reason), "message": .string(failure.message), "param": .null,
        ]
        if let eventID { error["event_id"] = .string(eventID) }
        return ["type": "error", "error": .object(error)]
    }

    /// The formats `/v1/audio/speech` answers in, and the file format each is written as.
    enum SpeechFormat: String, CaseIterable {
        case mp3, opus, aac, flac, wav, pcm

        var file: AudioFileFormat? {
            switch self {
            case .mp3: .mp3
            case .opus: .opus
            case .aac: .m4a
            case .flac: .flac
            case .wav: .wav
            case .pcm: nil
            }
        }
    }

    /// `{input, model, voice, response_format, speed}` → the input spoken by the spec's
    /// synthesize stage: `voice` when its provider has one by that name (espeak-ng: `de`,
    /// `en-us`, …; OpenAI's names such as `alloy` keep the spec's voice), `speed` (0.25-4) scaling
    /// its rate.
    func speech(_ request: Request, connection: (any Channel)? = nil) async throws -> Response {
        guard let body = try await readBody(request, as: OpenAISpeechRequest.self, required: true) else {
            throw ServeError.badRequest("empty_body", "empty body: expected a JSON object")
        }
        let input = body.input
        guard let format = SpeechFormat(rawValue: body.responseFormat ?? "mp3") else {
            throw ServeError.badRequest(
                "bad_request",
                "response_format: \"\(body.responseFormat ?? "")\" is not one of "
                    + SpeechFormat.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let request = SpeechRequest(voice: body.voice, speed: body.speed)
        let speech = try await runPipeline(
            upload: nil, order: "openai-\(UUID().uuidString)", call: OpenAICall(connection: connection)
        ) {
            var answer = TutorPipeline.Answer(transcription: input, reply: input)
            var overrides = $0
            overrides.speech = request
            answer.speech = try await self.pipeline.speak(text: input, overrides: overrides)
            return answer
        }.speech
        guard let speech, speech.frames > 0 else {
            throw ServeError(422, "no_speech", "input: the synthesizer gave no speech for this text")
        }
        guard let file = format.file else {
            return audio(try pipeline.pcm16(speech, rate: 24000), type: "audio/pcm")
        }
        return audio(try await pipeline.encode(speech, as: AudioEncoding(format: file)), type: file.mimeType)
    }

    func audio(_ data: Data, type: String) -> Response {
        Response(status: .ok, headers: [.contentType: type], body: .init(byteBuffer: ByteBuffer(data: data)))
    }

    /// 401 when the server has keys and the request's bearer token is none of them.
    func unauthorized(_ request: Request) -> ServeError? {
        unauthorized(authorization: request.headers[.authorization])
    }

    /// The 401 for a request whose Authorization header is `header`, if it is refused.
    func unauthorized(authorization header: String?) -> ServeError? {
        guard !settings.apiKeys.isEmpty else { return nil }
        let header = header ?? ""
        guard header.lowercased().hasPrefix("bearer ") else {
            return ServeError(401, "invalid_api_key", "missing API key: send Authorization: Bearer <key>")
        }
        let token = Array(header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces).utf8)
        // Compared in time that does not depend on where a guess goes wrong.
        let known = settings.apiKeys.contains { key in
            let bytes = Array(key.utf8)
            return bytes.count == token.count && zip(bytes, token).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
        }
        return known ? nil : ServeError(401, "invalid_api_key", "incorrect API key provided")
    }

    /// A failure in OpenAI's error shape.
    func openAIError(_ failure: ServeError) -> Response { encoded(failure.status, OpenAIFailure(failure)) }

    func text(_ body: String, type: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: type],
            body: .init(byteBuffer: ByteBuffer(data: pipeline.secrets.redact(Data(body.utf8)))))
    }
}

/// `GET /v1/models`.
struct ModelList: Encodable, Sendable {
    struct Model: Encodable, Sendable {
        var id: String
        var object = "model"
        var created = 0
        var ownedBy = "voxpipe"

        enum CodingKeys: String, CodingKey {
            case id, object, created
            case ownedBy = "owned_by"
        }
    }

    var object = "list"
    var data: [Model]
}

/// A transcription as `response_format` `json` gives it.
struct TranscriptionText: Encodable, Sendable {
    var text: String
}

/// A transcription as `verbose_json` gives it: segments, and words when asked for.
struct VerboseTranscription: Encodable, Sendable {
    struct Segment: Encodable, Sendable {
        var id: Int
        var start: Double
        var end: Double
        var text: String
    }

    struct Word: Encodable, Sendable {
        var word: String
        var start: Double
        var end: Double
    }

    var task: String
    var language: String
    var duration: Double
    var text: String
    var segments: [Segment]
    /// Omitted unless `timestamp_granularities[]=word`.
    var words: [Word]?
}

/// OpenAI's error shape: `{"error": {"message", "type", "param", "code"}}`.
struct OpenAIFailure: Encodable, Sendable {
    struct Body: Encodable, Sendable {
        var message: String
        var type: String
        @EncodesNull var param: String?
        var code: String
    }

    var error: Body

    init(_ failure: ServeError) {
        error = Body(
            message: failure.message, type: failure.status >= 500 ? "server_error" : "invalid_request_error",
            param: nil, code: failure.reason)
    }
}

/// The admission place an OpenAI request took: given back once, by its handler, or, when the
/// handler keeps it for a stream, by the stream as it ends.
final class AdmissionPlace: Sendable {
    private let admission: Admission
    private let state = Mutex((kept: false, released: false))

    init(_ admission: Admission) { self.admission = admission }

    /// The answer streams on after its handler returns: the stream releases the place.
    func keep() { state.withLock { $0.kept = true } }

    func releaseUnlessKept() {
        if state.withLock({ $0.kept }) { return }
        release()
    }

    func release() {
        let leave = state.withLock { state in
            defer { state.released = true }
            return !state.released
        }
        if leave { admission.leave() }
    }
}

/// An OpenAI route's request, as a turn sees it: no client key (the bearer key is the server's).
struct OpenAICall: CallContext {
    var clientKey: String? { nil }
    let connection: (any Channel)?
}

/// `POST /v1/audio/speech`: `{input, model, voice, speed, response_format}`.
struct OpenAISpeechRequest: Decodable, Sendable {
    var input: String
    var voice: String?
    var speed: Double?
    var responseFormat: String?

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyKey.self)
        guard let input = try? c.decode(String.self, forKey: "input"), !input.allSatisfy(\.isWhitespace) else {
            throw ServeError.badRequest("bad_request", "input: expected the text to speak as a non-empty string")
        }
        guard input.count <= 4096 else {
            throw ServeError.badRequest("bad_request", "input: at most 4096 characters")
        }
        self.input = input
        if c.contains("response_format") {
            guard let name = try? c.decode(String.self, forKey: "response_format") else {
                throw ServeError.badRequest("bad_request", "response_format: expected a string")
            }
            responseFormat = name
        }
        if c.contains("speed") {
            guard let speed = try? c.decode(Double.self, forKey: "speed"), (0.25...4).contains(speed) else {
                throw ServeError.badRequest("bad_request", "speed: expected a number from 0.25 to 4")
            }
            self.speed = speed
        }
        voice = (try? c.decodeIfPresent(String.self, forKey: "voice")) ?? nil
    }
}

/// OpenAI's routes that run the pipeline: admitted or refused on arrival, as the tutor's turns.
enum OpenAIRoute: String, CaseIterable {
    case speech = "/v1/audio/speech"
    case transcriptions = "/v1/audio/transcriptions"
    case translations = "/v1/audio/translations"
}

/// The served spec translating, made on first use (it loads its stages as serve did at start).
actor Translator {
    private var made: Task<TutorPipeline?, any Error>?

    func pipeline(from served: TutorPipeline) async throws -> TutorPipeline? {
        let task = made ?? Task { try await served.translating() }
        made = task
        return try await task.value
    }
}
