import Foundation
import VoxCore
import VoxFormats

extension ChunkStage {
    /// The engines of mode speakers, loaded once per run and shared by its items (the engine
    /// cache): the segmentation and embedding models, and the enrolled voices' embeddings. Throws
    /// exit 69 when a model is missing, 65 when a clip cannot be read or holds no speech (naming
    /// the option).
    func speakerEngines(_ settings: SpeakerSettings) async throws -> SpeakerEngines {
        try settings.models.checkPresent()
        let engines = engines, rateConversion = rateConversion
        return try await blocking.run {
            let segmentation = try engines.engine("speaker-segmentation:\(settings.models.segmentation.path)") {
                try SpeakerSegmentation(model: settings.models.segmentation)
            }
            let embedder = try engines.engine("speaker-embedding:\(settings.models.embedding.path)") {
                try SpeakerEmbedder(model: settings.models.embedding)
            }
            let loaded = SpeakerEngines(segmentation: segmentation, embedder: embedder, voices: [])
            let key = settings.voices.map { "\($0.name)=\($0.file.path)" }.joined(separator: "\n")
            let voices = try engines.engine("speaker-voices:\(settings.models.embedding.path)\n\(key)") {
                try settings.voices.map {
                    try Self.enroll($0, settings: settings, engines: loaded, rateConversion: rateConversion)
                }
            }
            return SpeakerEngines(segmentation: segmentation, embedder: embedder, voices: voices)
        }
    }

    /// An enrolled voice: the embedding of the speech the segmentation finds in its clip.
    static func enroll(
        _ clip: SpeakerSettings.VoiceClip, settings: SpeakerSettings, engines: SpeakerEngines,
        rateConversion: (any RateConversion)?
    ) throws -> SpeakerBook.Voice {
        func fail(_ why: String) -> VoxError {
            VoxError(.invalidSpec, "\(settings.voicesPath).\(clip.name): \(clip.file.path): \(why)")
        }
        guard let data = FileManager.default.contents(atPath: clip.file.path) else {
            throw VoxError(.noInput, "\(settings.voicesPath).\(clip.name): cannot read \(clip.file.path)")
        }
        guard let wav = WAVData.decodePCM16(data) else { throw fail("not a 16-bit PCM WAV file") }
        var samples = wav.samples
        if wav.format.channels > 1 {
            let ch = wav.format.channels
            samples = (0..<samples.count / ch).map { f in
                (0..<ch).reduce(Float(0)) { $0 + samples[f * ch + $1] } / Float(ch)
            }
        }
        if wav.format.sampleRate != SpeakerModels.sampleRate {
            guard let rateConversion else { throw fail("must be 16 kHz (it is \(wav.format.sampleRate) Hz)") }
            samples = try rateConversion.converter(
                channels: 1, from: wav.format.sampleRate, to: SpeakerModels.sampleRate
            )
            .convertAll(samples)
        }
        let diarizer = Diarizer(
            segmentation: engines.segmentation, embedder: engines.embedder, speakers: 1,
            threshold: settings.clusterThreshold, windowShift: settings.windowShift)
        let rate = Double(SpeakerModels.sampleRate)
        var speech: [Float] = []
        for segment in try diarizer.segments(samples[...]) {
            let from = max(0, Int((segment.start * rate).rounded()))
            let to = min(samples.count, Int((segment.end * rate).rounded()))
            if to > from { speech += samples[from..<to] }
        }
        guard Double(speech.count) >= 0.5 * rate, let embedding = engines.embedder.embedding(speech) else {
            throw fail("no speech found (an enrolled voice needs a clip of its speaker talking)")
        }
        return SpeakerBook.Voice(name: clip.name, embedding: embedding)
    }

    /// Mode speakers over one item's stream; counts each speaker's talk time and turns into
    /// `facts[.speakerTalk]` as it goes (whole at end of input).
    func runSpeakers(
        _ settings: SpeakerSettings, _ input: Inbox<AudioBlock>, _ output: Outbox<AudioChunk>, facts: ItemFacts
    )
        async throws
    {
        let loaded = try await speakerEngines(settings)
        var cutter: SpeakerCutter?
        for try await block in input {
            if cutter == nil {
                let format = block.format, blocking = blocking
                // Loading the models takes a moment: off the cooperative pool.
                cutter = try await blocking.run {
                    try SpeakerCutter(format: format, settings: settings, engines: loaded, blocking: blocking)
                }
            }
            guard let current = cutter else { continue }
            guard block.format == current.format else {
                throw ChunkError(
                    .unsupported, "the stream changed format mid-way (\(current.format) to \(block.format))")
            }
            let chunks = try await current.push(block)
            facts[.speakerTalk] = current.talk
            for chunk in chunks { try await output.send(chunk) }
        }
        guard let cutter else { return }
        let chunks = try await cutter.finish()
        facts[.speakerTalk] = cutter.talk
        for chunk in chunks { try await output.send(chunk) }
    }
}

/// What mode speakers runs on, loaded once per run: the two models and the enrolled voices.
struct SpeakerEngines: Sendable {
    var segmentation: SpeakerSegmentation
    var embedder: SpeakerEmbedder
    var voices: [SpeakerBook.Voice]
}
