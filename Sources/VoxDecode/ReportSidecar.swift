import Foundation
import VoxCore

/// What a moderation upload's sidecar (`X.json` beside `X.<ext>`) says about the report. Every
/// field it has is kept (`fields`) and flows into evidence (as the item fact `report`); these are the ones voxpipe reads.
public struct ReportSidecar: Sendable, Equatable {
    public var fields: [String: JSONValue]

    public var reportID: String? { fields["reportId"]?.stringValue }
    public var reportedUser: String? { fields["reportedUser"]?.stringValue }
    public var reportedAt: String? { fields["reportedAt"]?.stringValue }

    /// Channel index → user: `"seats": {"0": "alice", "3": "bob"}` or `"seats": ["alice", "bob"]`.
    public var seats: [Int: String] {
        switch fields["seats"] {
        case .object(let map)?:
            return Dictionary(uniqueKeysWithValues: map.compactMap { key, value in Int(key).flatMap { k in value.stringValue.map { (k, $0) } } })
        case .array(let list)?:
            return Dictionary(uniqueKeysWithValues: list.enumerated().compactMap { i, value in value.stringValue.map { (i, $0) } })
        default:
            return [:]
        }
    }

    /// Reads and checks a sidecar; throws with the reason when it is not a report.
    public static func load(_ url: URL) throws -> ReportSidecar {
        guard let data = FileManager.default.contents(atPath: url.path) else { throw VoxError(.badInput, "report sidecar \(url.lastPathComponent) is missing") }
        guard let value = try? JSONValue.parse(data), let object = value.objectValue else {
            throw VoxError(.badInput, "report sidecar \(url.lastPathComponent) is not a JSON object")
        }
        for key in ["reportId", "reportedUser", "reporter", "channel", "room", "reportedAt"] {
            guard let v = object[key] else { continue }
            guard v.stringValue != nil || v.numberValue != nil else {
                throw VoxError(.badInput, "report sidecar \(url.lastPathComponent): \(key) should be a string, got \(v.typeDescription)")
            }
        }
        if let seats = object["seats"], seats.objectValue == nil && seats.arrayValue == nil {
            throw VoxError(.badInput, "report sidecar \(url.lastPathComponent): seats should map channel numbers to users, got \(seats.typeDescription)")
        }
        return ReportSidecar(fields: object)
    }
}
