import Foundation

/// One engine a stage can drive (whisper, pocketsphinx, openai, espeak-ng, rules…), declared in
/// one place: its name, summary and options, how it reads its settings from the spec's provider
/// block (when the spec is loaded, so a bad block exits 65), and how it is made. A new provider
/// is one type conforming to this and one line in its stage's `ProviderRegistry`.
public protocol ProviderKind {
    /// What the stage drives (`any TranscriptionProvider`).
    associatedtype Engine
    /// The provider's settings, read from the spec.
    associatedtype Settings: Sendable

    /// The provider block's `name`.
    static var name: String { get }
    /// One line for `voxpipe stages`.
    static var summary: String { get }
    /// The provider block's options (besides `name`).
    static var options: [OptionSpec] { get }
    /// Reads the settings from validated options; throws `VoxError(.invalidSpec)` for values
    /// that do not make sense together.
    static func settings(_ options: StageOptions) throws -> Settings
    /// Makes the engine for one stage instance.
    static func make(_ settings: Settings, context: StageContext) throws -> Engine
    /// The audio format the engine needs (a recogniser) or gives (a synthesizer), where it
    /// fixes one. The default fixes none.
    static func streamFormat(_ settings: Settings) -> StreamFormat?
    /// Files whose content decides what the engine gives though no path option names them (a
    /// model resolved from a short name), for the item key. The default is none.
    static func identityFiles(_ settings: Settings) -> [URL]
    /// What the engine contributes to provenance records besides its name (a model). The default is nothing.
    static func provenance(_ settings: Settings) -> [String: JSONValue]
}

extension ProviderKind {
    public static func streamFormat(_ settings: Settings) -> StreamFormat? { nil }
    public static func identityFiles(_ settings: Settings) -> [URL] { [] }
    public static func provenance(_ settings: Settings) -> [String: JSONValue] { [:] }
}

/// A provider kind with its types erased, as a stage lists it.
public struct ProviderEntry<Engine>: Sendable {
    public let spec: ProviderSpec
    let settings: @Sendable (StageOptions) throws -> any Sendable
    let make: @Sendable (any Sendable, StageContext) throws -> Engine
    let streamFormat: @Sendable (any Sendable) -> StreamFormat?
    let identityFiles: @Sendable (any Sendable) -> [URL]
    let provenance: @Sendable (any Sendable) -> [String: JSONValue]

    public init<P: ProviderKind>(_ type: P.Type) where P.Engine == Engine {
        spec = ProviderSpec(name: P.name, summary: P.summary, options: P.options)
        settings = { try P.settings($0) }
        make = { settings, context in
            guard let s = settings as? P.Settings else {
                throw VoxError(.internal, "settings type mismatch for provider \(P.name)")
            }
            return try P.make(s, context: context)
        }
        streamFormat = { ($0 as? P.Settings).flatMap(P.streamFormat) }
        identityFiles = { ($0 as? P.Settings).map(P.identityFiles) ?? [] }
        provenance = { ($0 as? P.Settings).map(P.provenance) ?? [:] }
    }
}

/// The provider a spec chose for a stage, with its settings read.
public struct ChosenProvider<Engine>: Sendable {
    public let entry: ProviderEntry<Engine>
    public let settings: any Sendable

    public var name: String { entry.spec.name }
    /// Makes the engine (once per stage instance).
    public func make(_ context: StageContext) throws -> Engine { try entry.make(settings, context) }
    public var streamFormat: StreamFormat? { entry.streamFormat(settings) }
    public var identityFiles: [URL] { entry.identityFiles(settings) }
    /// `{"provider": name, …what the provider adds}`, for a stage's `provenance`.
    public var provenance: [String: JSONValue] {
        entry.provenance(settings).merging(["provider": .string(name)]) { _, b in b }
    }
}

/// The providers of one stage kind.
public struct ProviderRegistry<Engine>: Sendable {
    public let entries: [ProviderEntry<Engine>]

    public init(_ entries: [ProviderEntry<Engine>]) { self.entries = entries }

    /// For the stage's `provider` option declaration.
    public var specs: [ProviderSpec] { entries.map(\.spec) }

    /// The provider the spec's provider block (option `key`) names, with its settings read.
    public func choose(_ options: StageOptions, key: String = "provider") throws -> ChosenProvider<Engine> {
        guard let (name, providerOptions) = options.provider(key),
            let entry = entries.first(where: { $0.spec.name == name })
        else {
            throw options.error(
                key, "expected a provider block naming one of: \(specs.map(\.name).joined(separator: ", "))")
        }
        return ChosenProvider(entry: entry, settings: try entry.settings(providerOptions))
    }
}
