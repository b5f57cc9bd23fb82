import VoxCore

extension ItemFactKey where Value == ModerationReport {
    /// The moderation report the upload's sidecar holds, when it has one.
    public static var moderationReport: Self { Self("moderationReport") }
}

/// A moderation upload's report, as its sidecar gives it: every field (evidence records them all
/// in report.json), and the ones evidence reads by name.
public struct ModerationReport: Sendable, Equatable {
    /// Every field of the sidecar.
    public var fields: [String: JSONValue]

    public init(fields: [String: JSONValue]) { self.fields = fields }

    /// `reportId` as text: a string as it is, a whole number without a fraction (one too large
    /// for 64 bits as the number it is); nil when the sidecar has none.
    public var reportID: String? {
        fields["reportId"].map { value in
            value.stringValue ?? value.numberValue.map { Int64(exactly: $0).map(String.init) ?? String($0) } ?? ""
        }
    }

    /// `reportedAt` (ISO 8601), when it is a string.
    public var reportedAt: String? { fields["reportedAt"]?.stringValue }
}
