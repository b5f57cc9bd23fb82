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
        StageKind(ResampleStage.self),
        StageKind(ChunkStage.self),
        StageKind(TranscribeStage.self),
        StageKind(ReplyStage.self),
        StageKind(SynthesizeStage.self),
        StageKind(WriteWAVStage.self),
        StageKind(WriteTranscriptStage.self),
        StageKind(WriteRepliesStage.self),
    ])
}
