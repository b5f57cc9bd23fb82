import VoxCore

// A field-service voice session's sidecar (`X.json` beside `X.<ext>`), as a typed item fact: the
// stage that reads the input file sets it, the agent and write-agent-log read named fields.

extension ItemFactKey where Value == SessionSidecar {
    /// The voice session the upload's sidecar describes (type, language, device, dates), when it
    /// has one.
    public static var session: Self { Self("session") }
}

/// A voice session's sidecar: every field (an agent log's header records them all), and the
/// ones stages read by name.
public struct SessionSidecar: Sendable, Equatable {
    /// Every field of the sidecar.
    public var fields: [String: JSONValue]

    public init(fields: [String: JSONValue]) { self.fields = fields }

    /// The session's language (`de`, `en`), when the sidecar says.
    public var language: String? { fields["language"]?.stringValue }

    /// How long the session may last: audio past it is not decoded.
    public var maxDurationMinutes: Double? { fields["maxDurationMinutes"]?.numberValue }

    /// The texts of the fields that may date the session, in order of preference: `startedAt`,
    /// `recordedAt`, `recordingStartedAt`, `date`.
    public var dates: [String] {
        ["startedAt", "recordedAt", "recordingStartedAt", "date"].compactMap { fields[$0]?.stringValue }
    }
}
