import Foundation
import Logging
import VoxChunk
import VoxCore
import VoxDecode
import VoxReply
import VoxResample
import VoxSynthesize
import VoxTranscribe
import VoxWrite

/// Every stage kind voxpipe knows. A new stage kind is one module and one line here.
func makeRegistry() -> StageRegistry {
    StageRegistry([
        StageKind(DecodeStage.self),
        StageKind(ReadTextStage.self),
        StageKind(ResampleStage.self),
        StageKind(ChunkStage.self),
        StageKind(TranscribeStage.self),
        StageKind(ReplyStage.self),
        StageKind(SynthesizeStage.self),
        StageKind(WriteWAVStage.self),
        StageKind(WriteTranscriptStage.self),
        StageKind(WriteRepliesStage.self),
        StageKind(WriteEvidenceStage.self),
        StageKind(WriteMessageChunksStage.self),
    ])
}

/// What every stage gets: the logger, libsoxr for rate conversion on the
/// side, the spec and its fingerprint and the library versions for provenance.
func makeContext(plan: Plan, fingerprint: String, logger: Logger, digests: DigestCache = DigestCache()) -> StageContext {
    let versions = ["voxpipe": voxpipeVersion].merging(DecodeStage.libraryVersions) { a, _ in a }.merging(ResampleStage.libraryVersions) { a, _ in a }
    return StageContext(logger: logger, rateConversion: SoxrRateConversion(),
                        provenance: Provenance(spec: plan.spec, specFingerprint: fingerprint, software: versions, stages: plan.provenance), digests: digests)
}
