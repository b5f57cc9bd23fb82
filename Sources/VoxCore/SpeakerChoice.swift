import Foundation

/// The `speaker` option of the stages that answer or read transcripts (`reply`, `agent`),
/// declared once: only the turns of one speaker are answered (the learner, not the tutor who
/// also speaks in the lesson; the customer, not the field agent). The speaker is a label that
/// `chunk` mode `speakers` gives (`Speaker 2`) or the name of a voice enrolled there (`Customer`).
/// The other transcripts are passed over: they are still transcribed and written, and a stage's
/// memory of the conversation holds only the turns it answered.
public enum SpeakerChoice {
    public static let option = StageOption<String?>(
        "speaker", .string,
        help:
            "Only transcripts of this speaker: a label chunk mode speakers gives (\"Speaker 2\") or a voice "
            + "enrolled there (\"Customer\"); the others are passed over (unset: every transcript).")

    /// The speaker the spec names, nil for every speaker; an empty name is a spec error.
    public static func configure(_ options: StageOptions) throws -> String? {
        guard let speaker = options[option] else { return nil }
        guard !speaker.allSatisfy(\.isWhitespace) else {
            throw options.error(option, "names no speaker (leave it out to take every transcript)")
        }
        return speaker
    }
}

extension Transcript {
    /// Whether the transcript is of `speaker`'s turn: every transcript is when `speaker` is nil;
    /// one whose chunk has no speaker label is no named speaker's.
    public func isSpoken(by speaker: String?) -> Bool {
        speaker.map { chunk.speaker == $0 } ?? true
    }
}
