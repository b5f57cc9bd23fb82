import Foundation

/// A stage kind with its types erased, so a registry can hold them all in one array and the
/// planner and runner can work from a spec's strings.
public struct StageKind: Sendable {
    public let kind: String
    public let summary: String
    public let inputs: [PayloadType]
    public let output: PayloadType
    public let options: [OptionSpec]
    public let factsGiven: [ItemFact]
    /// What a first stage of this kind reads, by extension.
    public let inputExtensions: Set<String>
    public let factsUsed: [ItemFact]
    /// What a stage of this kind needs declared by every stage it reads from.
    public let declarationsUsed: [StageDeclaration]
    let configure: @Sendable (StageOptions) throws -> any Sendable
    let outputFormat: @Sendable (any Sendable, StreamFormat) throws -> StreamFormat
    let instantiate: @Sendable (String, any Sendable, StageContext) throws -> any StageRunner
    let plannedOutputs: @Sendable (any Sendable, String, PayloadType) -> [String]
    let demand: @Sendable (any Sendable) -> StreamDemand
    let identityFiles: @Sendable (any Sendable) -> [URL]
    let provenance: @Sendable (any Sendable) -> [String: JSONValue]?
    let oneTurn: @Sendable (any Sendable, Double) -> any Sendable
    let declarations: @Sendable (any Sendable) -> StageDeclarations

    public init<S: Stage>(_ type: S.Type) {
        kind = S.kind
        summary = S.summary
        inputs = S.Input.accepted
        output = S.Output.payloadType
        options = S.options
        factsGiven = S.factsGiven
        inputExtensions = S.inputExtensions
        factsUsed = S.factsUsed
        declarationsUsed = S.declarationsUsed
        configure = { try S.configure($0) }
        outputFormat = { configuration, input in
            guard let c = configuration as? S.Configuration else {
                throw VoxError(.internal, "configuration type mismatch for \(S.kind)")
            }
            return try S.outputFormat(c, input: input)
        }
        identityFiles = { configuration in (configuration as? S.Configuration).map(S.identityFiles) ?? [] }
        provenance = { configuration in (configuration as? S.Configuration).flatMap(S.provenance) }
        oneTurn = { configuration, seconds in
            (configuration as? S.Configuration).map { S.oneTurn($0, maxSeconds: seconds) } ?? configuration
        }
        declarations = { configuration in
            (configuration as? S.Configuration).map(S.declarations) ?? StageDeclarations()
        }
        demand = { configuration in (configuration as? S.Configuration).map(S.demand) ?? .whole }
        plannedOutputs = { configuration, id, input in
            (configuration as? S.Configuration).map { S.plannedOutputs($0, id: id, input: input) } ?? []
        }
        instantiate = { id, configuration, context in
            guard let c = configuration as? S.Configuration else {
                throw VoxError(.internal, "configuration type mismatch for \(S.kind)")
            }
            return StageBox(stage: try S(id: id, configuration: c, context: context))
        }
    }

    /// The input types as people read them: "AudioBlock | AudioChunk".
    public var inputDescription: String { inputs.map(\.rawValue).joined(separator: " | ") }

    /// Whether a stage of this kind can be fed a value of type `type`.
    public func accepts(_ type: PayloadType) -> Bool { inputs.contains { type.carries($0) } }
}

/// A stage instance with its types erased: what the runner drives.
public protocol StageRunner: Sendable {
    func prepare() async throws
    func run(input: PayloadChannel, output: [PayloadChannel], sink: (any OutputSink)?, item: ItemContext) async throws
}

struct StageBox<S: Stage>: StageRunner {
    let stage: S

    func prepare() async throws { try await stage.prepare() }

    func run(input: PayloadChannel, output: [PayloadChannel], sink: (any OutputSink)?, item: ItemContext) async throws {
        try await stage.run(Inbox<S.Input>(input), Outbox<S.Output>(channels: output, sink: sink), item)
    }
}

/// Every stage kind the executable knows, by `kind` string.
public struct StageRegistry: Sendable {
    public let kinds: [StageKind]

    public init(_ kinds: [StageKind]) { self.kinds = kinds }

    public subscript(kind: String) -> StageKind? { kinds.first { $0.kind == kind } }
}
