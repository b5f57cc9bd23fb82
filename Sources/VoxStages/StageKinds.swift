import VoxAgent
import VoxChunk
import VoxCore
import VoxDecode
import VoxReply
import VoxResample
import VoxSynthesize
import VoxTranscribe
import VoxWrite

/// Every stage kind voxpipe knows, in the order `voxpipe stages` lists them. A new stage kind is
/// one module and one line here; the command line and the fuzzer both take the list from here.
public let voxpipeStageKinds: [StageKind] = [
    StageKind(DecodeStage.self),
    StageKind(ReadTextStage.self),
    StageKind(ResampleStage.self),
    StageKind(ChunkStage.self),
    StageKind(TranscribeStage.self),
    StageKind(ReplyStage.self),
    StageKind(AgentStage.self),
    StageKind(SynthesizeStage.self),
    StageKind(WriteAudioStage.self),
    StageKind(WriteWAVStage.self),
    StageKind(WriteTranscriptStage.self),
    StageKind(WriteRepliesStage.self),
    StageKind(WriteEvidenceStage.self),
    StageKind(WriteMessageChunksStage.self),
    StageKind(WriteAgentLogStage.self),
    StageKind(WriteRecordsStage.self),
]
