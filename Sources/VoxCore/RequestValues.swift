import Foundation

/// A request value's typed key: `item.request[.speech]` is a `SpeechRequest?`. Keys are declared
/// in the domain module that owns what a served request may ask (VoxRequest: the conversation a
/// turn continues, voice and speed, language, a client's API key), which the stage modules that
/// honour them and serve import; VoxCore names none of them.
public typealias RequestKey<Value: Sendable> = TypedKey<RequestValues, Value>

/// What one served request asks of an item's stages, by typed key; empty in a batch run. Set by
/// whoever runs the item (`voxpipe serve`), read by the stages that honour a value (the reply
/// stage: the conversation) through `ItemContext.request`. A provider deep inside a stage that
/// never sees the item (an HTTP client's key, a recogniser's language) reads `RequestValues.current`,
/// which the runner binds to the item's values for its stages, and only it: one task-local with
/// typed keys, in the idiom of swift-service-context's `ServiceContext.current`.
public struct RequestValues: Sendable {
    private var values = TypedValues<RequestValues>()

    public init() {}

    /// The value `key` names, when the request set one.
    public subscript<Value>(_ key: RequestKey<Value>) -> Value? {
        get { values[key] }
        set { values[key] = newValue }
    }

    /// The values of the item whose stages are running (empty outside one, and in a batch run).
    @TaskLocal public static var current = RequestValues()

    /// Runs `body` with these values as `current`: the runner does this for an item's stages.
    public func applied<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        try await Self.$current.withValue(self) { try await body() }
    }
}
