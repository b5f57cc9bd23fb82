import VoxChunk
import VoxCore
import VoxDecode
import VoxResample
import VoxTranscribe
import VoxWrite

/// Every stage kind voxpipe knows. A new stage kind is one module and one line here.
func makeRegistry() -> StageRegistry {
    StageRegistry([
        StageKind(DecodeStage.self),
        StageKind(ResampleStage.self),
        StageKind(ChunkStage.self),
        StageKind(TranscribeStage.self),
        StageKind(WriteWAVStage.self),
        StageKind(WriteTranscriptStage.self),
    ])
}
