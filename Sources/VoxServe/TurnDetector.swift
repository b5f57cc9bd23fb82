/// Server VAD for a live session, as OpenAI's `turn_detection` of type `server_vad` describes it:
/// a turn starts at the first speech window (its `audio_start_ms` `prefixPadding` earlier) and
/// stops once `silenceDuration` has passed without speech (its `audio_end_ms` at that point, the
/// silence included). A pure state machine over the speech probabilities of consecutive 32-ms
/// windows (Silero's, at 16 kHz): the same probabilities give the same turns, whatever blocks the
/// audio came in.
struct TurnDetector: Sendable, Equatable {
    struct Settings: Sendable, Equatable {
        /// A window whose speech probability reaches this is speech (OpenAI's `threshold`, 0-1).
        var threshold: Double = 0.5
        /// Audio kept before the first speech window (`prefix_padding_ms`).
        var prefixPaddingMs = 300
        /// Silence that ends a turn (`silence_duration_ms`).
        var silenceDurationMs = 500
    }

    enum Change: Sendable, Equatable {
        /// Speech began; the turn's audio starts at `sample` (16 kHz, counted from the session's start).
        case started(sample: Int)
        /// The turn ended at `sample` (the silence window included); its speech ended at `speechEnd`.
        case stopped(sample: Int, speechEnd: Int)
        /// The speech has paused for `pauseMs` (a turn may be ending there: its audio up to
        /// `speechEnd` can be transcribed ahead, as a guess).
        case paused(speechEnd: Int)
        /// Speech came back after a pause: the guess is wrong.
        case resumed
    }

    static let sampleRate = 16000
    /// Samples per window (Silero's, at 16 kHz).
    static let window = 512

    var settings: Settings
    /// Inside a turn.
    private(set) var speaking = false
    /// Where the turn's audio starts (the padding included).
    private(set) var turnStart = 0
    /// The end of the last window that was speech.
    private(set) var lastSpeech = 0
    /// A pause was announced since the last speech.
    private var pauseAnnounced = false

    init(settings: Settings) { self.settings = settings }

    /// Once speaking, a window stays speech down to this (Silero's hysteresis: 0.15 below).
    private var continuing: Double { max(0.01, settings.threshold - 0.15) }

    /// The silence after which a turn may be ending: 200 ms, or half a shorter silence window.
    var pauseMs: Int { min(200, settings.silenceDurationMs / 2) }

    /// The window ending at sample `end` had speech probability `probability`.
    mutating func window(probability: Double, endingAt end: Int) -> Change? {
        if !speaking {
            guard probability >= settings.threshold else { return nil }
            speaking = true
            lastSpeech = end
            turnStart = max(0, end - Self.window - settings.prefixPaddingMs * Self.sampleRate / 1000)
            return .started(sample: turnStart)
        }
        if probability >= continuing {
            lastSpeech = end
            defer { pauseAnnounced = false }
            return pauseAnnounced ? .resumed : nil
        }
        if end - lastSpeech >= settings.silenceDurationMs * Self.sampleRate / 1000 {
            speaking = false
            pauseAnnounced = false
            return .stopped(sample: end, speechEnd: lastSpeech)
        }
        guard !pauseAnnounced, end - lastSpeech >= pauseMs * Self.sampleRate / 1000 else { return nil }
        pauseAnnounced = true
        return .paused(speechEnd: lastSpeech)
    }

    /// The turn was committed or cleared by the client: the next speech starts a new one.
    mutating func reset() {
        speaking = false
        pauseAnnounced = false
    }
}
