import Foundation
import Synchronization
import VoxChunk
import VoxCore
import VoxFormats
import VoxRequest

/// One `/v1/realtime` connection, in OpenAI's Realtime API (the GA event names).
///
/// Client events: `session.update`, `input_audio_buffer.append` / `.commit` / `.clear`,
/// `response.cancel`. Server events: `session.created` / `.updated`,
/// `input_audio_buffer.speech_started` / `.speech_stopped` / `.committed` / `.cleared`,
/// `conversation.item.input_audio_transcription.delta` / `.completed` / `.failed`, and in a
/// conversation `response.created`, `response.output_audio_transcript.delta` / `.done`,
/// `response.output_audio.delta` / `.done`, `response.done`; `error` for what cannot be done (the
/// session goes on).
///
/// Input is 16-bit mono PCM at 24 kHz (`audio/pcm`, as OpenAI sends it) or 16 kHz, kept at
/// 16 kHz. With `server_vad` turn detection (the default) Silero's speech probabilities, run on the
/// stream as it comes with the network's state kept per session, cut turns (`TurnDetector`); with
/// `turn_detection: null` the client commits. A committed turn is a clip of the served spec's:
/// a transcription session runs the stages up to transcribe on it (the clip whole, as a REST
/// turn), a conversation runs the tutor's stages and streams the reply's text and speech, sentence
/// by sentence as it is synthesized. Speech that starts while the tutor answers cancels the answer.
/// Turns run one at a time, in order, as the server's turn scheduler admits them.
actor LiveSession {
    enum Kind: String, Sendable {
        case transcription
        case realtime
    }

    /// What the server gives a session.
    struct Environment: Sendable {
        let pipeline: TutorPipeline
        /// The Silero model; nil when it is not installed (server VAD is then refused).
        let vadModel: URL?
        let rateConversion: (any RateConversion)?
        /// The most input audio a session holds uncommitted.
        let maxBufferSeconds: Double
        /// Runs a turn's work as serve runs a request's: in its session's order, in a slot, within
        /// the timeout; failures as `ServeError`s.
        /// Counts an answer's ending (completed, cancelled, failed).
        let answered: @Sendable (String) -> Void
        /// Whether the server has CPU to spare for a guess now (`LiveSession.mayGuess`).
        let mayGuess: @Sendable () -> Bool
        let runTurn:
            @Sendable (
                _ session: String, _ work: @escaping @Sendable (RequestOverrides) async throws -> TutorPipeline.Answer
            )
                async throws -> TutorPipeline.Answer
    }

    static let inputRates = [24000, 16000]
    static let rate = TurnDetector.sampleRate

    let id: String
    let kind: Kind
    let environment: Environment
    /// Sends a server event (they go out in the order given).
    let send: @Sendable (JSONValue) -> Void

    private var inputRate = 24000
    private var outputRate = 24000
    private var detection: TurnDetector.Settings? = TurnDetector.Settings()
    private var language: String?
    private var voice: String?

    private var converter: (any RateConverter)?
    private var vad: SileroVAD?
    private var detector = TurnDetector(settings: .init())
    /// 16-kHz samples received (the session's clock).
    private var received = 0
    /// The uncommitted input, at 16 kHz, from session sample `bufferStart` on.
    private var buffer: [Float] = []
    private var bufferStart = 0
    /// Samples not yet in a whole VAD window.
    private var pending: [Float] = []
    /// The item the turn in progress will be.
    private var speechItem: String?
    private var previousItem: String?
    /// The turns, each after the one before.
    private var lastTurn: Task<Void, Never>?
    private var responding: (id: String, task: Task<Void, Never>)?
    /// A transcription begun when the speech paused, in case the turn ends there: its audio ends
    /// where the speech did, as the turn's will if no speech comes back before the silence is
    /// long enough. Dropped when speech comes back.
    private var guess: (speechEnd: Int, task: Task<TutorPipeline.Answer, any Error>, answer: GuessedAnswer?)?
    /// Committed conversation turns whose answers have not ended.
    private var answering = 0

    /// A conversation's answer to a guessed turn, made on a copy of the conversation with its
    /// events held back: sent, and the copy adopted, only if the turn is confirmed.
    struct GuessedAnswer: Sendable {
        let responseID: String
        let relay: EventRelay
        let scratch: Conversation
        let task: Task<Void, Never>
    }
    private var turns: [Task<Void, Never>] = []
    private let conversation = Conversation()

    init(kind: Kind, environment: Environment, send: @escaping @Sendable (JSONValue) -> Void) {
        self.id = "sess_" + Self.randomID()
        self.kind = kind
        self.environment = environment
        self.send = send
    }

    /// Two or three lowercase letters (whisper's language names).
    static func isLanguageCode(_ code: String) -> Bool {
        (2...3).contains(code.count) && code.allSatisfy { $0.isASCII && $0.isLowercase }
    }

    static func randomID() -> String {
        (0..<12).map { _ in String("0123456789abcdefghijklmnopqrstuvwxyz".randomElement()!) }.joined()
    }

    // MARK: the session

    /// Sends `session.created`; starts the VAD when the model is there.
    func start() {
        if environment.vadModel == nil { detection = nil }
        send(["type": "session.created", "event_id": event(), "session": sessionObject()])
    }

    /// The session as OpenAI describes it.
    private func sessionObject() -> JSONValue {
        var input: [String: JSONValue] = [
            "format": ["type": "audio/pcm", "rate": .number(Double(inputRate))],
            "transcription": [
                "model": .string(environment.pipeline.plan.name),
                "language": language.map(JSONValue.string) ?? .null,
            ],
            "turn_detection": detection.map { settings in
                [
                    "type": "server_vad", "threshold": .number(settings.threshold),
                    "prefix_padding_ms": .number(Double(settings.prefixPaddingMs)),
                    "silence_duration_ms": .number(Double(settings.silenceDurationMs)),
                    "create_response": .bool(kind == .realtime), "interrupt_response": .bool(kind == .realtime),
                ]
            } ?? .null,
        ]
        input["noise_reduction"] = .null
        var audio: [String: JSONValue] = ["input": .object(input)]
        var session: [String: JSONValue] = [
            "type": .string(kind.rawValue), "id": .string(id), "object": "realtime.session",
        ]
        if kind == .realtime {
            audio["output"] = [
                "format": ["type": "audio/pcm", "rate": .number(Double(outputRate))],
                "voice": voice.map(JSONValue.string) ?? .null,
            ]
            session["model"] = .string(environment.pipeline.plan.name)
            session["output_modalities"] = ["audio"]
        }
        session["audio"] = .object(audio)
        return .object(session)
    }

    private var events = 0
    private func event() -> JSONValue {
        events += 1
        return .string("event_\(id.dropFirst(5))\(events)")
    }

    /// An `error` event for the client event `clientEvent` (its `event_id`, when it had one).
    private func refuse(_ code: String, _ message: String, param: String? = nil, clientEvent: String? = nil) {
        var error: [String: JSONValue] = [
            "type": "invalid_request_error", "code": .string(code), "message": .string(message),
            "param": param.map(JSONValue.string) ?? .null,
        ]
        if let clientEvent { error["event_id"] = .string(clientEvent) }
        send(["type": "error", "event_id": event(), "error": .object(error)])
    }

    // MARK: client events

    /// A text frame.
    func receive(text: String) {
        guard let data = text.data(using: .utf8), let value = try? JSONDecoder().decode(JSONValue.self, from: data),
            let object = value.objectValue
        else {
            return refuse("invalid_json", "the event is not a JSON object")
        }
        let eventID = object["event_id"]?.stringValue
        guard let type = object["type"]?.stringValue else {
            return refuse("invalid_event", "the event has no type", param: "type", clientEvent: eventID)
        }
        switch type {
        case "session.update":
            update(object["session"]?.objectValue ?? [:], eventID: eventID)
        case "input_audio_buffer.append":
            guard let audio = object["audio"]?.stringValue else {
                return refuse("invalid_event", "audio: expected base64 audio", param: "audio", clientEvent: eventID)
            }
            append(base64: audio, eventID: eventID)
        case "input_audio_buffer.commit":
            commitByClient(eventID: eventID)
        case "input_audio_buffer.clear":
            buffer = []
            bufferStart = received
            detector.reset()
            dropGuess()
            speechItem = nil
            send(["type": "input_audio_buffer.cleared", "event_id": event()])
        case "response.cancel":
            guard kind == .realtime else {
                return refuse("invalid_event", "a transcription session has no responses", clientEvent: eventID)
            }
            guard let responding else {
                return refuse("response_cancel_not_active", "no response is in progress", clientEvent: eventID)
            }
            responding.task.cancel()
        case "response.create", "conversation.item.create", "conversation.item.delete", "conversation.item.truncate",
            "conversation.item.retrieve", "output_audio_buffer.clear":
            refuse(
                "unsupported_event", "\(type) is not supported: voxpipe answers each committed turn itself",
                param: "type", clientEvent: eventID)
        default:
            refuse("invalid_event", "unknown event type \"\(type)\"", param: "type", clientEvent: eventID)
        }
    }

    /// A binary frame: the protocol sends audio as base64 in `input_audio_buffer.append`.
    func receiveBinary() {
        refuse("invalid_event", "binary frames are not events: send audio as base64 in input_audio_buffer.append")
    }

    private func update(_ session: [String: JSONValue], eventID: String?) {
        if let type = session["type"]?.stringValue, type != kind.rawValue {
            return refuse(
                "invalid_value", "session.type: this is a \(kind.rawValue) session, not \(type)",
                param: "session.type", clientEvent: eventID)
        }
        let audio = session["audio"]?.objectValue ?? [:]
        let input = audio["input"]?.objectValue ?? [:]
        var rate = inputRate
        if let format = input["format"]?.objectValue {
            guard format["type"]?.stringValue ?? "audio/pcm" == "audio/pcm" else {
                return refuse(
                    "unsupported_audio_format",
                    "session.audio.input.format.type: only audio/pcm (16-bit mono) is supported",
                    param: "session.audio.input.format.type", clientEvent: eventID)
            }
            if let asked = format["rate"]?.numberValue {
                guard Self.inputRates.contains(Int(asked)), Double(Int(asked)) == asked else {
                    return refuse(
                        "unsupported_audio_format", "session.audio.input.format.rate: 24000 or 16000",
                        param: "session.audio.input.format.rate", clientEvent: eventID)
                }
                rate = Int(asked)
            }
        }
        var newDetection = detection
        if let turn = input["turn_detection"] {
            if turn == .null {
                newDetection = nil
            } else {
                guard let object = turn.objectValue, object["type"]?.stringValue ?? "server_vad" == "server_vad" else {
                    return refuse(
                        "unsupported_turn_detection", "session.audio.input.turn_detection: server_vad or null",
                        param: "session.audio.input.turn_detection.type", clientEvent: eventID)
                }
                guard environment.vadModel != nil else {
                    return refuse(
                        "server_vad_unavailable",
                        "server_vad needs the Silero VAD model (make setup installs it); set turn_detection to null",
                        param: "session.audio.input.turn_detection", clientEvent: eventID)
                }
                var settings = detection ?? TurnDetector.Settings()
                if let threshold = object["threshold"]?.numberValue {
                    guard (0...1).contains(threshold) else {
                        return refuse(
                            "invalid_value", "turn_detection.threshold: from 0 to 1",
                            param: "session.audio.input.turn_detection.threshold", clientEvent: eventID)
                    }
                    settings.threshold = threshold
                }
                for (key, path) in [
                    ("prefix_padding_ms", \TurnDetector.Settings.prefixPaddingMs),
                    ("silence_duration_ms", \TurnDetector.Settings.silenceDurationMs),
                ] {
                    guard let ms = object[key]?.numberValue else { continue }
                    guard (0...10000).contains(ms) else {
                        return refuse(
                            "invalid_value", "turn_detection.\(key): from 0 to 10000",
                            param: "session.audio.input.turn_detection.\(key)", clientEvent: eventID)
                    }
                    settings[keyPath: path] = Int(ms)
                }
                newDetection = settings
            }
        }
        var language = self.language
        if let transcription = input["transcription"]?.objectValue, let asked = transcription["language"] {
            guard asked == .null || asked.stringValue.map(Self.isLanguageCode) == true else {
                return refuse(
                    "invalid_value",
                    "session.audio.input.transcription.language: an ISO-639-1 code such as en, or null",
                    param: "session.audio.input.transcription.language", clientEvent: eventID)
            }
            language = asked.stringValue
        }
        if kind == .realtime, let output = audio["output"]?.objectValue {
            if let format = output["format"]?.objectValue {
                guard format["type"]?.stringValue ?? "audio/pcm" == "audio/pcm",
                    let asked = format["rate"]?.numberValue.map(Int.init) ?? Optional(outputRate),
                    Self.inputRates.contains(asked)
                else {
                    return refuse(
                        "unsupported_audio_format", "session.audio.output.format: audio/pcm at 24000 or 16000",
                        param: "session.audio.output.format", clientEvent: eventID)
                }
                outputRate = asked
            }
            if let voice = output["voice"]?.stringValue { self.voice = voice }
        }
        self.language = language
        if rate != inputRate {
            inputRate = rate
            converter = nil
        }
        if newDetection != detection {
            detection = newDetection
            detector = TurnDetector(settings: newDetection ?? .init())
            speechItem = nil
        }
        send(["type": "session.updated", "event_id": event(), "session": sessionObject()])
    }

    private func append(base64: String, eventID: String?) {
        guard let bytes = Data(base64Encoded: base64) else {
            return refuse("invalid_base64", "audio: not valid base64", param: "audio", clientEvent: eventID)
        }
        guard bytes.count % 2 == 0 else {
            return refuse(
                "invalid_audio", "audio: 16-bit PCM has an even number of bytes, this has \(bytes.count)",
                param: "audio", clientEvent: eventID)
        }
        var samples = WAVData.samples(pcm16: [UInt8](bytes))
        if inputRate != Self.rate {
            do {
                if converter == nil {
                    guard let conversion = environment.rateConversion else {
                        throw ServeError(500, "no_rate_conversion", "no rate converter is configured")
                    }
                    converter = try conversion.converter(channels: 1, from: inputRate, to: Self.rate)
                }
                samples = try converter?.process(samples) ?? samples
            } catch {
                return refuse("invalid_audio", "audio: could not be converted to 16 kHz: \(describe(error))")
            }
        }
        let limit = Int(environment.maxBufferSeconds * Double(Self.rate))
        if buffer.count + samples.count > limit, detection == nil || !detector.speaking {
            return refuse(
                "input_audio_buffer_full",
                "the input audio buffer holds at most \(Int(environment.maxBufferSeconds)) s: commit or clear it",
                clientEvent: eventID)
        }
        buffer += samples
        received += samples.count
        guard detection != nil else { return }
        pending += samples
        detect()
        // A turn that reaches the limit ends there.
        if detector.speaking, buffer.count >= limit { endTurn(at: received, speechEnd: received) }
    }

    /// Runs the VAD over the whole windows that have come, and acts on the turns it finds.
    private func detect() {
        let windows = pending.count / TurnDetector.window
        guard windows > 0 else { return }
        let whole = pending[..<(windows * TurnDetector.window)]
        let first = received - pending.count
        pending.removeFirst(windows * TurnDetector.window)
        let probabilities: [Float]
        do {
            if vad == nil, let model = environment.vadModel { vad = try SileroVAD(modelFile: model) }
            probabilities = try vad?.probabilities(whole) ?? []
        } catch {
            detection = nil
            return refuse("server_vad_unavailable", "server VAD stopped: \(describe(error)); commit turns yourself")
        }
        for (i, probability) in probabilities.enumerated() {
            let end = first + (i + 1) * TurnDetector.window
            switch detector.window(probability: Double(probability), endingAt: end) {
            case .started(let sample):
                let item = "item_" + Self.randomID()
                speechItem = item
                send([
                    "type": "input_audio_buffer.speech_started", "event_id": event(), "item_id": .string(item),
                    "audio_start_ms": .number(Double(sample * 1000 / Self.rate)),
                ])
                // The learner speaks: the tutor stops.
                responding?.task.cancel()
            case .stopped(let sample, let speechEnd):
                endTurn(at: sample, speechEnd: speechEnd)
            case .paused(let speechEnd):
                guess(upTo: speechEnd)
            case .resumed:
                dropGuess()
            case nil:
                break
            }
        }
        // Between turns only the padding a turn would start with is kept.
        if !detector.speaking {
            let keep = (detection?.prefixPaddingMs ?? 0) * Self.rate / 1000 + TurnDetector.window
            let drop = buffer.count - keep
            if drop > 0 {
                buffer.removeFirst(drop)
                bufferStart += drop
            }
        }
    }

    /// The turn's audio: from its start (the padding included) to the pause after its speech
    /// (`TurnDetector.pauseMs`: Whisper hears a clip cut tight at the last word worse), which has
    /// arrived when the pause is announced, so a guess and the committed turn hear the same audio.
    private func turnClip(upTo speechEnd: Int) -> [Float] {
        let end = speechEnd + detector.pauseMs * Self.rate / 1000
        let from = max(0, detector.turnStart - bufferStart), to = min(buffer.count, end - bufferStart)
        return from < to ? Array(buffer[from..<to]) : []
    }

    /// The speech paused at `speechEnd`: the turn so far is transcribed before the silence is
    /// long enough to end it (the turn's text, when it ends there, is ready that much sooner; it
    /// is the same text either way). In a conversation with no answer running, the tutor's answer
    /// is made ahead too, on a copy of the conversation, its events held back: a guess that is
    /// dropped changes nothing the client or the conversation sees.
    private func guess(upTo speechEnd: Int) {
        dropGuess()
        guard environment.mayGuess() else { return }
        let clip = turnClip(upTo: speechEnd)
        let (session, language, environment) = (id, language, environment)
        let recognition = Task { try await Self.recognise(clip, session: session, language: language, environment) }
        var answer: GuessedAnswer?
        if kind == .realtime, answering == 0, let item = speechItem {
            let responseID = "resp_" + Self.randomID()
            let relay = EventRelay(send)
            let scratch = conversation.copy()
            let (speech, outputRate) = (SpeechRequest(voice: voice, speed: nil), outputRate)
            let task = Task {
                await withTaskCancellationHandler {
                    await Self.respond(
                        to: recognition, clip: clip, item: item, responseID: responseID, session: session,
                        speech: speech, outputRate: outputRate, conversation: scratch, environment: environment,
                        send: relay.send, answered: { if relay.isReleased { environment.answered($0) } })
                } onCancel: {
                    recognition.cancel()
                }
            }
            answer = GuessedAnswer(responseID: responseID, relay: relay, scratch: scratch, task: task)
        }
        guess = (speechEnd, recognition, answer)
    }

    /// Whether a turn may be transcribed ahead: only with CPU to spare, since a guess that is
    /// dropped costs a decode the committed turns of every session would have had. Not while a
    /// turn waits for a slot or every slot is taken, nor, with other live sessions, under
    /// sustained CPU pressure on the server's cgroup (the signal whisper's threads go by,
    /// `CPUPressure`): beside two CPU hogs, four sessions that guessed fell behind. A session
    /// alone starves no other (its own decodes are the pressure), and an idle server always guesses.
    static func mayGuess(running: Int, waiting: Int, slots: Int, liveSessions: Int, coresToLeave: Int) -> Bool {
        waiting == 0 && running < slots && (liveSessions <= 1 || coresToLeave == 0)
    }

    private func dropGuess() {
        guess?.task.cancel()
        guess?.answer?.task.cancel()
        guess = nil
    }

    /// The VAD's turn ends at session sample `end`; its speech ended at `speechEnd`.
    private func endTurn(at end: Int, speechEnd: Int) {
        let item = speechItem ?? "item_" + Self.randomID()
        speechItem = nil
        send([
            "type": "input_audio_buffer.speech_stopped", "event_id": event(), "item_id": .string(item),
            "audio_end_ms": .number(Double(end * 1000 / Self.rate)),
        ])
        let clip = turnClip(upTo: speechEnd)
        let made = guess?.speechEnd == speechEnd ? guess : nil
        if made == nil { dropGuess() }
        guess = nil
        detector.reset()
        let to = min(buffer.count, max(0, end - bufferStart))
        buffer.removeFirst(to)
        bufferStart += to
        commit(clip, item: item, recognised: made?.task, answered: made?.answer)
    }

    private func commitByClient(eventID: String?) {
        // OpenAI's minimum: 100 ms.
        guard buffer.count >= Self.rate / 10 else {
            return refuse(
                "input_audio_buffer_commit_empty",
                "the input audio buffer holds \(buffer.count * 1000 / Self.rate) ms: at least 100 ms to commit",
                clientEvent: eventID)
        }
        let clip = buffer
        bufferStart = received
        buffer = []
        pending = []
        detector.reset()
        dropGuess()
        let item = speechItem ?? "item_" + Self.randomID()
        speechItem = nil
        commit(clip, item: item)
    }

    // MARK: turns

    private func commit(
        _ clip: [Float], item: String, recognised: Task<TutorPipeline.Answer, any Error>? = nil,
        answered guessed: GuessedAnswer? = nil
    ) {
        send([
            "type": "input_audio_buffer.committed", "event_id": event(), "item_id": .string(item),
            "previous_item_id": previousItem.map(JSONValue.string) ?? .null,
        ])
        previousItem = item
        let before = lastTurn
        let session = id
        let environment = environment
        let send = send
        let task: Task<Void, Never>
        switch kind {
        case .transcription:
            let language = language
            let recognition =
                recognised ?? Task { try await Self.recognise(clip, session: session, language: language, environment) }
            task = Task {
                await withTaskCancellationHandler {
                    await before?.value
                    await Self.transcribed(recognition, clip: clip, item: item, send: send)
                } onCancel: {
                    recognition.cancel()
                }
            }
        case .realtime:
            let conversation = conversation
            let responseID: String
            if let guessed {
                // The guess was right: its answer goes out (what it held back first) and its copy
                // of the conversation becomes the conversation when it ends.
                responseID = guessed.responseID
                guessed.relay.release()
                task = Task {
                    await withTaskCancellationHandler {
                        await guessed.task.value
                        conversation.adopt(guessed.scratch)
                    } onCancel: {
                        guessed.task.cancel()
                    }
                }
            } else {
                responseID = "resp_" + Self.randomID()
                let overrides = SpeechRequest(voice: voice, speed: nil)
                let language = language
                let outputRate = outputRate
                let recognition =
                    recognised
                    ?? Task { try await Self.recognise(clip, session: session, language: language, environment) }
                task = Task {
                    await withTaskCancellationHandler {
                        await before?.value
                        guard !Task.isCancelled else { return }
                        await Self.respond(
                            to: recognition, clip: clip, item: item, responseID: responseID, session: session,
                            speech: overrides, outputRate: outputRate, conversation: conversation,
                            environment: environment, send: send, answered: environment.answered)
                    } onCancel: {
                        recognition.cancel()
                    }
                }
            }
            answering += 1
            responding = (responseID, task)
            Task { [weak self] in
                await task.value
                await self?.finished(responseID)
            }
        }
        lastTurn = task
        turns.removeAll { $0.isCancelled }
        turns.append(task)
    }

    private func finished(_ responseID: String) {
        answering -= 1
        if responding?.id == responseID { responding = nil }
    }

    /// The client has gone: nothing more runs for it.
    func end() {
        dropGuess()
        for turn in turns { turn.cancel() }
        responding?.task.cancel()
    }

    /// Writes a turn's clip as a 16-kHz WAV among the uploads.
    private static func store(_ clip: [Float], pipeline: TutorPipeline) async throws -> URL {
        let data = WAVData.pcm16(clip, format: AudioFormat(sampleRate: rate, channels: 1))
        return try await pipeline.store(upload: data, ext: "wav").url
    }

    /// Transcribes a turn's clip with the stages up to transcribe (the clip whole, as a REST turn).
    private static func recognise(
        _ clip: [Float], session: String, language: String?, _ environment: Environment
    ) async throws -> TutorPipeline.Answer {
        let pipeline = environment.pipeline
        let upload = try await store(clip, pipeline: pipeline)
        defer { try? FileManager.default.removeItem(at: upload) }
        return try await environment.runTurn(session) { overrides in
            var overrides = overrides
            if let language { overrides.transcription = TranscriptionRequest(language: language) }
            return try await pipeline.transcribe(audioFile: upload, chunking: .wholeClip, overrides: overrides)
        }
    }

    /// Sends a committed turn's transcription: its text as a delta, then `completed` (or `failed`).
    private static func transcribed(
        _ recognition: Task<TutorPipeline.Answer, any Error>, clip: [Float], item: String,
        send: @escaping @Sendable (JSONValue) -> Void
    ) async {
        do {
            let answer = try await recognition.value
            if !answer.transcription.isEmpty {
                send([
                    "type": "conversation.item.input_audio_transcription.delta", "event_id": .string(newEvent()),
                    "item_id": .string(item), "content_index": 0, "delta": .string(answer.transcription),
                ])
            }
            send([
                "type": "conversation.item.input_audio_transcription.completed", "event_id": .string(newEvent()),
                "item_id": .string(item), "content_index": 0, "transcript": .string(answer.transcription),
                "usage": ["type": "duration", "seconds": .number(Double(clip.count) / Double(rate))],
            ])
        } catch {
            send(failed(item: item, error: error))
        }
    }

    private static func failed(item: String, error: any Error) -> JSONValue {
        let failure = ServeError.from(error)
        return [
            "type": "conversation.item.input_audio_transcription.failed", "event_id": .string(newEvent()),
            "item_id": .string(item), "content_index": 0,
            "error": [
                "type": .string(failure.status >= 500 ? "server_error" : "invalid_request_error"),
                "code": .string(failure.reason), "message": .string(failure.message), "param": .null,
            ],
        ]
    }

    /// An event id for events sent from a turn's task.
    static func newEvent() -> String { "event_" + randomID() }

    /// A conversation's turn: what was heard (`recognition`), then the tutor's answer to it from
    /// the reply stage on, its text and speech sent as they are made.
    private static func respond(
        to recognition: Task<TutorPipeline.Answer, any Error>, clip: [Float], item: String, responseID: String,
        session: String, speech: SpeechRequest, outputRate: Int, conversation: Conversation,
        environment: Environment, send: @escaping @Sendable (JSONValue) -> Void,
        answered: @escaping @Sendable (String) -> Void
    ) async {
        let pipeline = environment.pipeline
        let answerItem = "item_" + randomID()
        func response(_ status: String, transcript: String?) -> JSONValue {
            var response: [String: JSONValue] = [
                "id": .string(responseID), "object": "realtime.response", "status": .string(status),
                "output_modalities": ["audio"],
                "audio": ["output": ["format": ["type": "audio/pcm", "rate": .number(Double(outputRate))]]],
            ]
            if let transcript {
                response["output"] = [
                    [
                        "id": .string(answerItem), "type": "message", "object": "realtime.item", "role": "assistant",
                        "status": .string(status == "completed" ? "completed" : "incomplete"),
                        "content": [["type": "output_audio", "transcript": .string(transcript)]],
                    ]
                ]
            } else {
                response["output"] = []
            }
            return [
                "type": .string(status == "in_progress" ? "response.created" : "response.done"),
                "event_id": .string(newEvent()), "response": .object(response),
            ]
        }
        send(response("in_progress", transcript: nil))
        let said = TextSoFar()
        do {
            let heard = try await recognition.value
            send([
                "type": "conversation.item.input_audio_transcription.completed",
                "event_id": .string(newEvent()), "item_id": .string(item), "content_index": 0,
                "transcript": .string(heard.transcription),
                "usage": ["type": "duration", "seconds": .number(Double(clip.count) / Double(rate))],
            ])
            var replies: [String] = []
            // Nothing said, nothing answered (as a REST turn with no speech).
            for transcript in heard.transcripts where !transcript.text.allSatisfy(\.isWhitespace) {
                let answer = try await environment.runTurn(session) { overrides in
                    var overrides = overrides
                    if speech.voice != nil { overrides.speech = speech }
                    return try await pipeline.answer(
                        transcript: transcript, conversation: conversation, overrides: overrides
                    ) { payload in
                        guard !Task.isCancelled else { return }
                        switch payload {
                        case let reply as Reply:
                            let delta = said.add(reply.text)
                            send([
                                "type": "response.output_audio_transcript.delta", "event_id": .string(newEvent()),
                                "response_id": .string(responseID), "item_id": .string(answerItem), "output_index": 0,
                                "content_index": 0, "delta": .string(delta),
                            ])
                        case let spoken as Speech:
                            guard let pcm = try? pipeline.pcm16(spoken.audio, rate: outputRate) else { return }
                            // At most a second of audio an event.
                            let step = outputRate * 2
                            for start in stride(from: 0, to: pcm.count, by: step) {
                                send([
                                    "type": "response.output_audio.delta", "event_id": .string(newEvent()),
                                    "response_id": .string(responseID), "item_id": .string(answerItem),
                                    "output_index": 0, "content_index": 0,
                                    "delta": .string(pcm[start..<min(pcm.count, start + step)].base64EncodedString()),
                                ])
                            }
                        default:
                            break
                        }
                    }
                }
                replies.append(answer.reply)
            }
            try Task.checkCancellation()
            let reply = replies.filter { !$0.isEmpty }.joined(separator: " ")
            let common: [String: JSONValue] = [
                "response_id": .string(responseID), "item_id": .string(answerItem), "output_index": 0,
                "content_index": 0,
            ]
            send(
                .object(common.merging(["type": "response.output_audio.done", "event_id": .string(newEvent())]) { $1 }))
            send(
                .object(
                    common.merging([
                        "type": "response.output_audio_transcript.done", "event_id": .string(newEvent()),
                        "transcript": .string(reply),
                    ]) { $1 }))
            send(response("completed", transcript: reply))
            answered("completed")
        } catch {
            if Task.isCancelled || error is CancellationError {
                send(response("cancelled", transcript: said.text))
                answered("cancelled")
            } else {
                let failure = ServeError.from(error)
                send(TutorServer.errorEvent(failure, eventID: nil))
                send(response("failed", transcript: said.text))
                answered("failed")
            }
        }
    }
}

/// A guessed answer's events: held back until the turn is confirmed, then sent in order, and
/// those that come after sent at once.
final class EventRelay: Sendable {
    private let forward: @Sendable (JSONValue) -> Void
    private let state = Mutex((released: false, held: [JSONValue]()))

    init(_ forward: @escaping @Sendable (JSONValue) -> Void) { self.forward = forward }

    var isReleased: Bool { state.withLock { $0.released } }

    @Sendable func send(_ event: JSONValue) {
        state.withLock { state in
            if state.released { forward(event) } else { state.held.append(event) }
        }
    }

    func release() {
        state.withLock { state in
            state.released = true
            for event in state.held { forward(event) }
            state.held = []
        }
    }
}

/// The reply text sent so far in a response, and each delta's leading space.
final class TextSoFar: Sendable {
    private let said = Mutex("")

    var text: String { said.withLock { $0 } }

    /// Adds a reply's text; returns the delta to send.
    func add(_ text: String) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return said.withLock { said in
            let delta = said.isEmpty ? trimmed : " " + trimmed
            said += delta
            return delta
        }
    }
}
