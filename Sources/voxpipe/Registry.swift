import VoxCore
import VoxDecode
import VoxResample
import VoxWrite

/// Every stage kind voxpipe knows. A new stage kind is one module and one line here.
func makeRegistry() -> StageRegistry {
    StageRegistry([
        StageKind(DecodeStage.self),
        StageKind(ResampleStage.self),
        StageKind(WriteWAVStage.self),
    ])
}
