import Foundation

/// The error VoxCore throws: a code that decides the exit status, and a message a user can act
/// on. Messages already carry their context (file, stage id, JSON path).
public typealias VoxError = ModuleError<VoxFailure>

/// What went wrong, in the terms of DESIGN.md's exit statuses.
public enum VoxFailure: Sendable, Equatable {
    /// The command line is wrong (exit 64).
    case usage
    /// The spec cannot be loaded or does not type-check (exit 65).
    case invalidSpec
    /// No input files were found (exit 66).
    case noInput
    /// A provider, model or resource is unavailable at prepare (exit 69).
    case unavailable
    /// An output file or folder cannot be created or written (exit 73, EX_CANTCREAT).
    case cannotCreate
    /// Another run holds the output folder's lock (exit 75).
    case locked
    /// One input item is bad: reported, counted, and the batch goes on.
    case badInput
    /// A bug or an unexpected system failure (exit 70).
    case `internal`
}

extension ModuleError where Code == VoxFailure {
    /// The process exit status for this error (sysexits.h values).
    public var exitCode: Int32 {
        switch code {
        case .usage: 64
        case .invalidSpec: 65
        case .noInput: 66
        case .unavailable: 69
        case .cannotCreate: 73
        case .locked: 75
        case .badInput: 1
        case .internal: 70
        }
    }
}

/// A failure inside one stage while it processed one item. The runner reports it as
/// `<file>: <stage id> (<kind>): <reason>` and goes on with the next item.
public struct StageFailure: Error, CustomStringConvertible, Sendable {
    public var stageID: String
    public var kind: String
    public var reason: String

    public init(stageID: String, kind: String, reason: String) {
        self.stageID = stageID
        self.kind = kind
        self.reason = reason
    }

    public var description: String { "\(stageID) (\(kind)): \(reason)" }
}

/// The user-facing text of any error: Foundation's localized text for its file errors, else the
/// error's `description` (every voxpipe error type has one that names its context).
public func describe(_ error: any Error) -> String {
    let ns = error as NSError
    if ns.domain == NSCocoaErrorDomain || ns.domain == NSPOSIXErrorDomain { return ns.localizedDescription }
    return String(describing: error)
}

/// The error type of a stage module: a code the module defines and a message that already
/// names its context. Each module has one, as `typealias DecodeError = ModuleError<DecodeFailure>`.
public struct ModuleError<Code: Sendable & Equatable>: Error, CustomStringConvertible, Sendable, Equatable {
    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
