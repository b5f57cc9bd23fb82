import Foundation
import Logging
import VoxCore
import VoxFieldService

/// A moderation upload as the items a run processes (the `ItemExpansion` role, which the stage
/// reading uploads declares with these options): with `channels: split`, one item per channel,
/// named `seat<N>-<user>` from the sidecar's seat map (`channel<N>` where it names nobody; with
/// `seats: reported`, only reported users' seats); and when the sidecar's reports name moments,
/// one per report window (per seat), named by report id, reports of one user within
/// `debounceSeconds` folded into one.
///
/// Before an item runs, its sidecar is read both ways: as a moderation report
/// (`.moderationReport`, for evidence) and as a voice session (`.session`, for agents and their
/// logs; its `maxDurationMinutes` is the item's `.lengthLimit`).
public struct ModerationItems: ItemExpansion {
    public struct Configuration: Sendable {
        /// One item per channel (seat) instead of the file whole.
        public var split: Bool
        /// With split: only the seats of the reported user.
        public var reportedSeatsOnly: Bool
        public var sidecar: SidecarPolicy
        /// A report window's length when the report does not give one.
        public var windowSeconds: Double
        /// Reports of one user this close together share one window.
        public var debounceSeconds: Double

        public init(
            split: Bool = false, reportedSeatsOnly: Bool = false, sidecar: SidecarPolicy = .optional,
            windowSeconds: Double = 300, debounceSeconds: Double = 10
        ) {
            self.split = split
            self.reportedSeatsOnly = reportedSeatsOnly
            self.sidecar = sidecar
            self.windowSeconds = windowSeconds
            self.debounceSeconds = debounceSeconds
        }
    }

    /// What an upload's header says, read without decoding it: its channel count and its length
    /// in seconds (when the header gives one).
    public struct Header: Sendable {
        public var channels: Int
        public var seconds: Double?

        public init(channels: Int, seconds: Double?) {
            self.channels = channels
            self.seconds = seconds
        }
    }

    /// The spec options of the stage that declares this expansion (decode's, after its own).
    /// Each option, declared once.
    public enum Option {
        public static let channels = StageOption<String>(
            "channels", .choice(["keep", "split"]), default: "keep",
            help:
                "split: one item per channel (seat), named from the report's seat map; later stages and outputs run "
                + "per track.")
        public static let seats = StageOption<String>(
            "seats", .choice(["all", "reported"]), default: "all",
            help: "With split: every seat, or only the reported user's."
        ).only(where: channels, is: "split")
        public static let sidecar = StageOption<SidecarPolicy>(
            "sidecar", default: .optional,
            help:
                "The upload's report sidecar X.json: optional, required (missing or malformed fails the item) or "
                + "ignore.")
        public static let windowSeconds = StageOption<Double>(
            "windowSeconds", .number(1...86400), default: 300,
            help:
                "When the sidecar's reports name moments: each is an item of this many seconds before its moment (a "
                + "report's own \"seconds\" wins).")
        public static let debounceSeconds = StageOption<Double>(
            "debounceSeconds", .number(0...3600), default: 10,
            help: "Reports of one user whose moments are this close share one window (repeated taps).")
    }

    public static let options: [OptionSpec] = [
        Option.channels.spec, Option.seats.spec, Option.sidecar.spec, Option.windowSeconds.spec,
        Option.debounceSeconds.spec,
    ]

    /// Reads `options` (those of `options` above; the stage's own are its business).
    public static func configure(_ options: StageOptions) throws -> Configuration {
        let split = options[Option.channels] == "split"
        return Configuration(
            split: split, reportedSeatsOnly: options[Option.seats] == "reported", sidecar: options[Option.sidecar],
            windowSeconds: options[Option.windowSeconds], debounceSeconds: options[Option.debounceSeconds])
    }

    /// The sidecar read both ways, for the stage declaring the expansion to list with its own.
    public static let factsGiven = ItemFact.list(.moderationReport, .session)

    public let configuration: Configuration
    /// More channels than this fails a split upload.
    let maxChannels: Int
    /// Reads an upload's header: the declaring stage's business (decode knows the formats).
    let probe: @Sendable (URL) throws -> Header

    public init(_ configuration: Configuration, maxChannels: Int, probe: @escaping @Sendable (URL) throws -> Header) {
        self.configuration = configuration
        self.maxChannels = maxChannels
        self.probe = probe
    }

    /// The seats and report windows `item` becomes (see the type's doc); nil when it is split
    /// neither way. Reads the sidecar and the header only.
    public func expand(_ item: InputFile) throws -> [InputFile]? {
        let report =
            configuration.split || configuration.sidecar != .ignore
            ? try ReportSidecar.load(for: item, policy: configuration.sidecar, logger: nil) : nil
        let reports = report?.reports ?? []
        let placed = reports.contains { $0.moment != nil }
        guard configuration.split || placed else { return nil }
        let header = try probe(item.url)
        var items = [item]
        if configuration.split {
            guard (1...maxChannels).contains(header.channels) else {
                throw ModerationError(
                    .outOfBounds, "\(header.channels) channels is outside 1…maxChannels (\(maxChannels))")
            }
            let seats = report?.seats ?? [:]
            var all = (0..<header.channels).map { c in
                Seat(
                    channel: c, name: seats[c].map { "seat\(c)-\(Self.safeName($0))" } ?? "channel\(c)", user: seats[c])
            }
            if configuration.reportedSeatsOnly {
                let users = Set(reports.compactMap(\.reportedUser))
                guard !users.isEmpty else {
                    throw ModerationError(
                        .noReportedSeat, "seats \"reported\" needs a report sidecar naming the reportedUser")
                }
                all = all.filter { $0.user.map(users.contains) ?? false }
                guard !all.isEmpty else {
                    throw ModerationError(
                        .noReportedSeat,
                        "the report names \(users.sorted().joined(separator: ", ")), but no seat of the seat map is "
                            + "theirs"
                    )
                }
            }
            items = all.map(item.forSeat)
        }
        guard placed else { return items }
        return items.flatMap { part -> [InputFile] in
            // A seat's windows are the reports about its user; a seat nobody reported (or the
            // whole mix) gets every report's window.
            let own = reports.filter { $0.reportedUser != nil && $0.reportedUser == part.seat?.user }
            return windows(own.isEmpty ? reports : own, length: header.seconds).map(part.forWindow)
        }
    }

    /// The item's sidecar as `.moderationReport`, `.session` and `.lengthLimit`; throws when the
    /// sidecar is required and bad, or when a split upload's item comes whole.
    public func learnFacts(of item: InputFile, into facts: ItemFacts, logger: Logger) throws {
        if configuration.split && item.seat == nil {
            throw ModerationError(
                .notExpanded, "channels \"split\" needs the item's tracks (run it through the runner)")
        }
        let sidecar = try ReportSidecar.load(for: item, policy: configuration.sidecar, logger: logger)
        facts[.moderationReport] = sidecar.map { ModerationReport(fields: $0.fields) }
        let session = sidecar.map { SessionSidecar(fields: $0.fields) }
        facts[.session] = session
        if let minutes = session?.maxDurationMinutes, minutes > 0 { facts[.lengthLimit] = minutes * 60 }
    }

    /// Report windows: each ends at its report's moment (the end of the recording for a report
    /// without one); a user's reports within `debounceSeconds` of the one before fold into one
    /// window ending at the latest (as long as the longest asked), listing every id.
    func windows(_ reports: [ReportSidecar.Report], length: Double?) -> [ReportWindow] {
        var out: [ReportWindow] = []
        var lastOfUser: [String: (index: Int, moment: Double)] = [:]
        let ordered = reports.enumerated().map { (i, r) in (r, r.moment ?? length ?? 0, i) }.sorted {
            ($0.1, $0.2) < ($1.1, $1.2)
        }
        for (report, moment, _) in ordered {
            let seconds = report.seconds ?? configuration.windowSeconds
            let user = report.reportedUser ?? ""
            if let last = lastOfUser[user], moment - last.moment <= configuration.debounceSeconds {
                out[last.index].reportIDs.append(report.id)
                out[last.index].seconds = max(out[last.index].seconds, seconds)
                out[last.index].end = min(moment, length ?? moment)
                lastOfUser[user] = (last.index, moment)
                continue
            }
            var name = Self.safeName(report.id)
            while out.contains(where: { $0.name == name }) { name += "_" }
            out.append(
                ReportWindow(name: name, reportIDs: [report.id], end: min(moment, length ?? moment), seconds: seconds))
            lastOfUser[user] = (out.count - 1, moment)
        }
        return out
    }

    /// A user id as a folder-name part: letters, digits, '.', '-', '_' kept, the rest '_'.
    static func safeName(_ s: String) -> String {
        String(
            s.unicodeScalars.map {
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0))
                    ? Character($0) : "_"
            })
    }
}
