import Foundation
import Logging
import VoxChunk
import VoxCore
import VoxDecode
import VoxReply
import VoxResample
import VoxStages
import VoxSynthesize
import VoxTranscribe
import VoxWrite

/// Every stage kind voxpipe knows (VoxStages holds the list).
func makeRegistry() -> StageRegistry { StageRegistry(voxpipeStageKinds) }

/// What every stage gets: the logger, libsoxr for rate conversion on the
/// side, the spec and its fingerprint and the library versions for provenance.
func makeContext(plan: Plan, fingerprint: String, logger: Logger, digests: DigestCache = DigestCache()) -> StageContext
{
    let versions = ["voxpipe": voxpipeVersion].merging(DecodeStage.libraryVersions) { a, _ in a }.merging(
        ResampleStage.libraryVersions
    ) { a, _ in a }
    var context = StageContext(
        logger: logger, rateConversion: SoxrRateConversion(),
        provenance: Provenance(
            spec: plan.spec, specFingerprint: fingerprint, software: versions, stages: plan.plannedStages),
        digests: digests)
    context.secrets = processSecrets
    return context
}
