import Foundation
import Logging
import VoxCore

/// What a moderation upload's sidecar (`X.json` beside `X.<ext>`) says about the report. Every
/// field it has is kept (`fields`) and flows into evidence (as the item fact `.moderationReport`);
/// these are the ones voxpipe reads.
public struct ReportSidecar: Sendable, Equatable {
    public var fields: [String: JSONValue]

    public var reportID: String? { fields["reportId"]?.stringValue }
    public var reportedUser: String? { fields["reportedUser"]?.stringValue }
    public var reportedAt: String? { fields["reportedAt"]?.stringValue }

    /// Channel index → user: `"seats": {"0": "alice", "3": "bob"}` or `"seats": ["alice", "bob"]`.
    /// Only keys written as channel numbers count ("3", not "03", "+3" or "-0"), so no two keys
    /// name the same channel.
    public var seats: [Int: String] {
        switch fields["seats"] {
        case .object(let map)?:
            return Dictionary(
                uniqueKeysWithValues: map.compactMap { key, value in
                    Int(key).flatMap { k in k >= 0 && String(k) == key ? value.stringValue.map { (k, $0) } : nil }
                })
        case .array(let list)?:
            return Dictionary(
                uniqueKeysWithValues: list.enumerated().compactMap { i, value in value.stringValue.map { (i, $0) } })
        default:
            return [:]
        }
    }

    /// One report: who was reported, the moment in the recording it is about (when the sidecar
    /// lets it be placed), how much audio before it to keep, and whether it is on legal hold.
    public struct Report: Sendable, Equatable {
        public var id: String
        public var reportedUser: String?
        /// Seconds into the recording: `offsetSeconds`, else `reportedAt` − `recordingStartedAt`.
        public var moment: Double?
        /// The window's length, when the report asks for one.
        public var seconds: Double?
        public var legalHold: Bool
        /// Every field of the report as the sidecar has it.
        public var fields: [String: JSONValue]
    }

    /// The reports: the `reports` list, else the sidecar itself as one report. A report's
    /// missing fields come from the sidecar's top level (`recordingStartedAt`, `reportedUser`).
    public var reports: [Report] {
        let list = fields["reports"]?.arrayValue?.compactMap(\.objectValue) ?? [fields]
        return list.enumerated().map { i, r in
            var merged = fields.filter { $0.key != "reports" && $0.key != "seats" }
            merged.merge(r) { _, b in b }
            let id =
                merged["reportId"].flatMap { $0.stringValue ?? $0.numberValue.map(Self.idText) } ?? "report\(i + 1)"
            return Report(
                id: id, reportedUser: merged["reportedUser"]?.stringValue, moment: Self.moment(merged),
                seconds: merged["seconds"]?.numberValue, legalHold: merged["legalHold"]?.boolValue ?? false, fields: r)
        }
    }

    /// A numeric report id as text: whole numbers without ".0" (any size: no trap beyond 64 bits).
    static func idText(_ number: Double) -> String {
        number.isFinite && number.rounded() == number && abs(number) < 9e15 ? String(Int64(number)) : String(number)
    }

    /// Whether any report is on legal hold.
    public var legalHold: Bool { reports.contains(where: \.legalHold) }

    static func moment(_ report: [String: JSONValue]) -> Double? {
        if let offset = report["offsetSeconds"]?.numberValue { return offset }
        guard let at = report["reportedAt"]?.stringValue.flatMap(parseDate),
            let start = report["recordingStartedAt"]?.stringValue.flatMap(parseDate)
        else { return nil }
        return at.timeIntervalSince(start)
    }

    /// ISO 8601 with or without fractional seconds.
    static func parseDate(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }

    /// Reads and checks a sidecar; throws with the reason when it is not a report. The sidecar is
    /// read inside its upload's folder (`ContainedFile`): a symbolic link (out of the folder or
    /// not) or a FIFO in its place is refused, never followed or waited on.
    public static func load(_ url: URL) throws -> ReportSidecar {
        let data: Data
        do {
            data = try ContainedFile.read(url.lastPathComponent, in: url.deletingLastPathComponent())
        } catch let error as VoxError {
            let reason = error.message == "missing" ? " is missing" : ": \(error.message)"
            throw ModerationError(.badSidecar, "report sidecar \(url.lastPathComponent)\(reason)")
        }
        guard let value = try? JSONValue.parse(data), let object = value.objectValue else {
            throw ModerationError(.badSidecar, "report sidecar \(url.lastPathComponent) is not a JSON object")
        }
        for key in ["reportId", "reportedUser", "reporter", "channel", "room", "reportedAt"] {
            guard let v = object[key] else { continue }
            guard v.stringValue != nil || v.numberValue != nil else {
                throw ModerationError(
                    .badSidecar,
                    "report sidecar \(url.lastPathComponent): \(key) should be a string, got \(v.typeDescription)")
            }
        }
        if let list = object["reports"] {
            guard let reports = list.arrayValue, !reports.isEmpty else {
                throw ModerationError(
                    .badSidecar,
                    "report sidecar \(url.lastPathComponent): reports should be a list of reports, got "
                        + "\(list.typeDescription)"
                )
            }
            for (i, r) in reports.enumerated() {
                guard r.objectValue != nil else {
                    throw ModerationError(
                        .badSidecar,
                        "report sidecar \(url.lastPathComponent): reports[\(i)] should be an object, got "
                            + "\(r.typeDescription)"
                    )
                }
            }
        }
        let sidecar = ReportSidecar(fields: object)
        for (i, report) in sidecar.reports.enumerated() {
            let at = object["reports"] == nil ? "" : "reports[\(i)]."
            for key in ["offsetSeconds", "seconds"] {
                if let v = report.fields[key], !(v.numberValue.map { $0.isFinite && $0 >= 0 } ?? false) {
                    throw ModerationError(
                        .badSidecar,
                        "report sidecar \(url.lastPathComponent): \(at)\(key) should be a number of seconds ≥ 0, got "
                            + "\(v.typeDescription == "a number" ? "a negative number" : v.typeDescription)"
                    )
                }
            }
            if let v = report.fields["legalHold"], v.boolValue == nil {
                throw ModerationError(
                    .badSidecar,
                    "report sidecar \(url.lastPathComponent): \(at)legalHold should be true or false, got "
                        + "\(v.typeDescription)"
                )
            }
            if let moment = report.moment, moment < 0 {
                throw ModerationError(
                    .badSidecar, "report sidecar \(url.lastPathComponent): \(at)reportedAt is before recordingStartedAt"
                )
            }
        }
        if let v = object["maxDurationMinutes"], !(v.numberValue.map { $0.isFinite && $0 > 0 } ?? false) {
            throw ModerationError(
                .badSidecar,
                "sidecar \(url.lastPathComponent): maxDurationMinutes should be a number of minutes > 0, got "
                    + "\(v.typeDescription == "a number" ? "\(v.numberValue ?? 0)" : v.typeDescription)")
        }
        if let seats = object["seats"], seats.objectValue == nil && seats.arrayValue == nil {
            throw ModerationError(
                .badSidecar,
                "report sidecar \(url.lastPathComponent): seats should map channel numbers to users, got "
                    + "\(seats.typeDescription)"
            )
        }
        return ReportSidecar(fields: object)
    }

    /// Reads `item`'s sidecar as `policy` says: nil when it is ignored, or optional and missing; an
    /// optional one that is malformed is logged (when there is a logger) and ignored.
    public static func load(for item: InputFile, policy: SidecarPolicy, logger: Logger?) throws -> ReportSidecar? {
        switch policy {
        case .ignore:
            return nil
        case .required:
            return try load(item.sidecarURL)
        case .optional:
            guard FileManager.default.fileExists(atPath: item.sidecarURL.path) else { return nil }
            do {
                return try load(item.sidecarURL)
            } catch {
                logger?.warning(
                    "ignoring a malformed report sidecar: \(describe(error))",
                    metadata: ["item.path": .string(item.relativePath)])
                return nil
            }
        }
    }
}

/// Whether an upload's report sidecar (`X.json` beside `X.<ext>`) must be there.
public enum SidecarPolicy: String, Sendable, CaseIterable, OptionValue {
    /// Read when present and well formed; a bad one is logged and ignored.
    case optional
    /// Missing or malformed fails the item.
    case required
    /// Never read.
    case ignore
}
