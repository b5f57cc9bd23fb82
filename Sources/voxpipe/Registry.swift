import Foundation
import Logging
import VoxCore
import VoxStages

/// Every stage kind voxpipe knows (VoxStages holds the list).
func makeRegistry() -> StageRegistry { voxpipeRegistry() }

/// What every stage gets (`BatchRun.context`), with this process's secrets to redact.
func makeContext(plan: Plan, fingerprint: String, logger: Logger, digests: DigestCache = DigestCache()) -> StageContext
{
    var context = BatchRun.context(
        plan: plan, fingerprint: fingerprint, version: voxpipeVersion, logger: logger, digests: digests)
    context.secrets = processSecrets
    return context
}
