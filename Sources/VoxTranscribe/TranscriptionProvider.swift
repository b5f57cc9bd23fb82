import VoxCore

/// A speech-to-text engine behind the `transcribe` stage. Providers are chosen by the spec's
/// provider block (`{"name": "pocketsphinx", …}`); a new one is a type conforming to this and to
/// `ProviderKind`, and a line in `TranscribeStage.providers`.
public protocol TranscriptionProvider: Sendable {
    /// Checks models or endpoints before data flows; throws an error of category `.unavailable`.
    func prepare() async throws
    /// Starts one item: engines that keep state are borrowed here, per worker.
    func beginItem() throws -> any TranscriptionSession
}

/// One item's transcription: chunks in order, then `end()`.
public protocol TranscriptionSession {
    func transcribe(_ chunk: AudioChunk) async throws -> Transcript
    /// Returns borrowed engines; called on success and failure alike.
    func end()
}
