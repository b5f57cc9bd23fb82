import VoxCore

/// A reply of `text` to a one-second voice turn starting at `start`, as the reply stage gives it.
func testReply(_ text: String, index: Int = 0, start: Double = 0, language: String = "en") -> Reply {
    let chunk = AudioChunk(
        format: AudioFormat(sampleRate: 16000, channels: 1), samples: [], start: start, end: start + 1, index: index,
        cut: .voice)
    return Reply(
        transcript: Transcript(chunk: chunk, text: "…", words: [], language: language, provider: "test", model: nil),
        text: text)
}

/// Each reply's speech whole: the parts of a reply spoken in parts joined into one Speech.
func wholeReplies(_ speech: [Speech]) -> [Speech] {
    var whole: [Speech] = []
    var joining = false
    for part in speech {
        if joining, var last = whole.popLast() {
            last.audio.samples += part.audio.samples
            last.audio.end = part.audio.end
            last.audio.continues = part.audio.continues
            whole.append(last)
        } else {
            whole.append(part)
        }
        joining = part.audio.continues
    }
    return whole
}
