import Foundation

// An upload's sidecar (`X.json` beside `X.<ext>`) read two ways: as a moderation report (for
// evidence) and as a voice session's settings (for agents and their logs). Each reading is its own
// typed fact, so a stage states which it records and reads named fields, not a dictionary's keys.
// Both stay in VoxCore until moderation and agent details move to modules of their own: the stage
// that gives them (decode) and the stages that use them (write-evidence, agent) are in different
// modules, which never import each other.

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
