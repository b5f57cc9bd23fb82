import VoxCore

/// Why a writer failed: the file it was writing and libsndfile's or the system's reason.
public typealias WriteError = ModuleError<WriteFailure>

public enum WriteFailure: Sendable, Equatable { case cannotCreate, writeFailed, unsupported }
