import Foundation

/// The error VoxCore throws: a code that decides the exit status, and a message a user can act
/// on. Messages already carry their context (file, stage id, JSON path).
public typealias VoxError = ModuleError<VoxFailure>

/// What went wrong, in the terms of DESIGN.md's exit statuses. Every module's failure code maps
/// to one of these (`FailureCode.category`), so any voxpipe error has an exit status.
public enum VoxFailure: String, Sendable, Equatable, Codable, CaseIterable, FailureCode {
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
    /// The output's file system takes nothing more (full, over quota, read-only): the item fails
    /// and the run starts no other item (exit 73).
    case outputFull
    /// Another run holds the output folder's lock (exit 75).
    case locked
    /// One input item is bad: reported, counted, and the batch goes on.
    case badInput
    /// A provider the stage called (a web API) broke its API while one item was processed: an
    /// answer it should not give, or a refusal of the request made from that item. The item
    /// fails and the batch goes on (exit 1, as for bad input), but the fault is the provider's,
    /// not the input's: serve answers 502, not 4xx.
    case upstream
    /// A bug or an unexpected system failure (exit 70).
    case `internal`
}

extension VoxFailure {
    public var category: VoxFailure { self }

    /// The process exit status for this category (sysexits.h values).
    public var exitCode: Int32 {
        switch self {
        case .usage: 64
        case .invalidSpec: 65
        case .noInput: 66
        case .unavailable: 69
        case .cannotCreate, .outputFull: 73
        case .locked: 75
        case .badInput, .upstream: 1
        case .internal: 70
        }
    }
}

extension VoxFailure {
    /// The category of a failed create, write or rename of an output, from its `errno`: the
    /// output is full for ENOSPC, EDQUOT and EROFS (no other file would fare better), else the
    /// one file cannot be created.
    public static func writing(errno code: Int32) -> VoxFailure {
        code == ENOSPC || code == EDQUOT || code == EROFS ? .outputFull : .cannotCreate
    }
}

/// The system's text for an `errno` value ("No space left on device").
public func systemReason(_ code: Int32) -> String { String(cString: strerror(code)) }

/// The `errno` behind a Foundation file error (`FileHandle`, `Data.write`), where it says.
public func posixCode(of error: any Error) -> Int32? {
    let ns = error as NSError
    if ns.domain == NSPOSIXErrorDomain { return Int32(ns.code) }
    if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
        return Int32(underlying.code)
    }
    return ns.domain == NSCocoaErrorDomain && ns.code == NSFileWriteOutOfSpaceError ? ENOSPC : nil
}

/// A module's failure code (`DecodeFailure`, `HTTPFailure`, …): which category, and so which exit
/// status, each of its cases falls in.
public protocol FailureCode: Sendable, Equatable {
    var category: VoxFailure { get }
}

/// Where an error happened: the stage (id and kind) and the item (input path), where known. The
/// runner fills these in as an error passes a stage or an item; the message never repeats them.
public struct ErrorContext: Sendable, Equatable {
    public var stageID: String?
    public var stageKind: String?
    public var item: String?

    public init(stageID: String? = nil, stageKind: String? = nil, item: String? = nil) {
        self.stageID = stageID
        self.stageKind = stageKind
        self.item = item
    }

    /// `<item>: stage '<id>' (<kind>): ` for what is known.
    var prefix: String {
        var parts: [String] = []
        if let item { parts.append(item) }
        if let stageID { parts.append("stage '\(stageID)'" + (stageKind.map { " (\($0))" } ?? "")) }
        return parts.map { $0 + ": " }.joined()
    }
}

/// Any error a voxpipe module throws: a category (the exit status), its context as fields, and
/// a one-line message. `exitCode(for:)` maps any error, so the command line has one path.
public protocol CategorizedError: Error, CustomStringConvertible, Sendable {
    var category: VoxFailure { get }
    /// The error's code as reports name it: its module's code (`decode.unreadable`), or the category.
    var codeName: String { get }
    var context: ErrorContext { get set }
    /// The reason, without the context.
    var message: String { get set }
}

extension CategorizedError {
    public var codeName: String { category.rawValue }

    /// The same error with the stage it passed through and the item it was processing recorded
    /// (what its context already names wins).
    public func within(stage id: String, kind: String, item: String? = nil) -> Self {
        var copy = self
        if copy.context.stageID == nil {
            copy.context.stageID = id
            copy.context.stageKind = kind
        }
        if copy.context.item == nil { copy.context.item = item }
        return copy
    }

    /// The same error, of the same type, code and context, with `reword` applied to its message
    /// (a spec's path put before it, a stage id after it).
    public func reworded(_ reword: (String) -> String) -> Self {
        var copy = self
        copy.message = reword(message)
        return copy
    }

    /// The exit status of this error's category.
    public var exitCode: Int32 { category.exitCode }
}

/// The exit status for any error: its category's for a voxpipe error, else 70 (internal).
public func exitCode(for error: any Error) -> Int32 {
    (error as? any CategorizedError)?.category.exitCode ?? VoxFailure.internal.exitCode
}

/// A failure inside one stage while it processed one item. The runner reports it as
/// `<file>: <stage id> (<kind>): <reason>` and goes on with the next item. In a report line it
/// is `{"stage": …, "kind": …, "reason": …}`.
public struct StageFailure: Error, CustomStringConvertible, Sendable, Equatable, Codable {
    public var stageID: String
    public var kind: String
    public var reason: String
    /// The category of the error behind it, when it had one (`.outputFull` ends the run); report
    /// lines carry it (`"category": "badInput"`).
    public var category: VoxFailure?
    /// The error behind it as its module threw it (its code), with the stage and item filled in
    /// its context, when a voxpipe module threw it. Not part of a report line.
    public var error: (any CategorizedError)?
    /// The error's code (`decode.unreadable`, or its category where it has no finer one).
    public var code: String?

    /// `category` defaults to `error`'s.
    public init(
        stageID: String, kind: String, reason: String, category: VoxFailure? = nil, error: (any CategorizedError)? = nil
    ) {
        self.stageID = stageID
        self.kind = kind
        self.reason = reason
        self.category = category ?? error?.category
        self.error = error
        code = error?.codeName ?? self.category?.rawValue
    }

    public var description: String { "\(stageID) (\(kind)): \(reason)" }

    /// Equal when the stage, kind and reason are: the category, code and error do not count.
    public static func == (a: StageFailure, b: StageFailure) -> Bool {
        (a.stageID, a.kind, a.reason) == (b.stageID, b.kind, b.reason)
    }

    enum CodingKeys: String, CodingKey {
        case stageID = "stage"
        case kind, reason, category, code
    }
}

/// The user-facing text of any error: Foundation's localized text for its file errors, else the
/// error's `description` (every voxpipe error type has one that names its context).
public func describe(_ error: any Error) -> String {
    let ns = error as NSError
    if ns.domain == NSCocoaErrorDomain || ns.domain == NSPOSIXErrorDomain { return oneLine(ns.localizedDescription) }
    return oneLine(String(describing: error))
}

/// The error type of a stage module: a code the module defines and a message that already
/// names its context. Each module has one, as `typealias DecodeError = ModuleError<DecodeFailure>`.
public struct ModuleError<Code: FailureCode>: CategorizedError, Equatable {
    public var code: Code
    public var message: String
    public var context: ErrorContext

    /// `message` is kept to one line: line breaks in it (a library's multi-line text) become "; ".
    /// `decode.unreadable`: the module (its code type's name less `Failure`, lowercased) and the
    /// code; a `VoxError`'s code is its category (`badInput`).
    public var codeName: String {
        if let category = code as? VoxFailure { return category.rawValue }
        let module = String(describing: Code.self).replacingOccurrences(of: "Failure", with: "")
        return "\(module.prefix(1).lowercased())\(module.dropFirst()).\(String(describing: code))"
    }

    public init(_ code: Code, _ message: String, context: ErrorContext = ErrorContext()) {
        self.code = code
        self.message = oneLine(message)
        self.context = context
    }

    public var category: VoxFailure { code.category }
    public var description: String { context.prefix + message }
}

/// Text on one line: runs of line breaks (and the spaces around them) become "; ".
public func oneLine(_ text: String) -> String {
    guard text.contains(where: \.isNewline) else { return text }
    return text.split(whereSeparator: \.isNewline)
        .map { $0.trimmingCharacters(in: .whitespaces) }
        .filter { !$0.isEmpty }
        .joined(separator: "; ")
}
