import Foundation
import Logging
import Testing
import VoxCore
import VoxFieldService
import VoxModeration
import VoxTestSupport

/// ModerationItems: what items an upload becomes and what its sidecar says, without decoding it
/// (the header comes from the probe the declaring stage gives).
@Suite struct ModerationItemsTests {
    /// An upload `room.wav` (never read) with a sidecar of three reports about two seats.
    static func upload(_ sidecar: JSONValue) throws -> InputFile {
        let dir = temporaryDirectory()
        try sidecar.prettyData().write(to: dir.appendingPathComponent("room.json"))
        return InputFile(url: dir.appendingPathComponent("room.wav"), relativePath: "room.wav", outputName: "room")
    }

    static let sidecar: JSONValue = [
        "seats": ["0": "alice", "1": "bob"], "maxDurationMinutes": 1.5,
        "reports": [
            ["reportId": "R-1", "reportedUser": "bob", "offsetSeconds": 30],
            ["reportId": "R-2", "reportedUser": "bob", "offsetSeconds": 35],
            ["reportId": "R-3", "reportedUser": "alice", "offsetSeconds": 100, "seconds": 20],
        ],
    ]

    static func items(_ configuration: ModerationItems.Configuration) -> ModerationItems {
        ModerationItems(configuration, maxChannels: 8) { _ in ModerationItems.Header(channels: 2, seconds: 90) }
    }

    @Test func aSplitUploadBecomesEachSeatsReportWindowsWithTheTapsOfOneUserFoldedIntoOne() throws {
        let upload = try Self.upload(Self.sidecar)
        let items = try #require(try Self.items(.init(split: true)).expand(upload))
        #expect(items.map(\.outputName) == ["room/seat0-alice/R-3", "room/seat1-bob/R-1"])
        #expect(items.map(\.displayName) == ["room.wav#seat0-alice#R-3", "room.wav#seat1-bob#R-1"])
        #expect(
            items.map(\.seat) == [
                Seat(channel: 0, name: "seat0-alice", user: "alice"),
                Seat(
                    channel: 1, name: "seat1-bob", user: "bob"),
            ])
        // A window ends at its moment, clipped to the recording; a user's taps within
        // debounceSeconds share the first one's window.
        #expect(
            items.map(\.reportWindow) == [
                ReportWindow(name: "R-3", reportIDs: ["R-3"], end: 90, seconds: 20),
                ReportWindow(name: "R-1", reportIDs: ["R-1", "R-2"], end: 35, seconds: 300),
            ])
        // What the decoder reads of each: one channel, one stretch.
        #expect(items.map(\.part?.channel?.index) == [0, 1])
        #expect(items.map(\.part?.span) == [ItemPart.Span(start: 70, end: 90), ItemPart.Span(start: 0, end: 35)])
    }

    @Test func anUploadWhoseReportsNameNoMomentAndIsNotSplitStaysOneItem() throws {
        let upload = try Self.upload(["reportId": "R-9", "reportedUser": "bob"])
        #expect(try Self.items(.init()).expand(upload) == nil)
    }

    @Test func theSidecarIsLearntAsTheReportTheSessionAndTheItemsLengthLimit() throws {
        let upload = try Self.upload(Self.sidecar)
        let facts = ItemFacts()
        let part = try #require(try Self.items(.init(split: true)).expand(upload)?.first)
        try Self.items(.init(split: true)).learnFacts(of: part, into: facts, logger: Logger(label: "test"))
        #expect(facts[.moderationReport]?.fields["seats"] == ["0": "alice", "1": "bob"])
        #expect(facts[.session]?.maxDurationMinutes == 1.5)
        #expect(facts[.lengthLimit] == 90)
    }

    @Test func aWholeFileWhereSeatsAreAskedForFailsAsNotExpanded() throws {
        let upload = try Self.upload(Self.sidecar)
        #expect(
            throws: ModerationError(
                .notExpanded, "channels \"split\" needs the item's tracks (run it through the runner)")
        ) { try Self.items(.init(split: true)).learnFacts(of: upload, into: ItemFacts(), logger: Logger(label: "t")) }
    }
}
