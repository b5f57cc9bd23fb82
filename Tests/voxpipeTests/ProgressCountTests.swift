import Foundation
import Testing
import VoxCore

@testable import voxpipe

/// ProgressCount: what the progress line counts while items run, split files included.
@Suite struct ProgressCountTests {
    static func file(_ name: String) -> InputFile {
        InputFile(url: URL(fileURLWithPath: "/in/\(name).wav"), relativePath: "\(name).wav", outputName: name)
    }

    static func result(_ item: InputFile, _ status: ItemResult.Status = .done) -> RunEvent {
        .itemFinished(ItemResult(item: item, status: status))
    }

    /// The counts after each event, as the progress line would show them.
    static func counts(_ events: [RunEvent], total: Int) -> [(finished: Int, total: Int, running: Int, failed: Int)] {
        var count = ProgressCount(total: total)
        return events.map { event in
            count.count(event)
            return (count.finished, count.total, count.running, count.failed)
        }
    }

    @Test func aFileSplitIntoReportWindowsCountsEachWindowAndRunsUntilTheLast() {
        // Given an upload whose reports make three windows (no seats), beside a plain file.
        let upload = Self.file("room")
        let windows = ["R-1", "R-2", "R-3"].map { name in
            upload.forPart(named: name) { $0.span = ItemPart.Span(start: 5, end: 10) }
        }
        let plain = Self.file("plain")
        // When the runner reports them as it runs them.
        let events: [RunEvent] =
            [.started(total: 2), .itemStarted(upload), .itemStarted(plain), .itemSplit(upload, parts: 3)]
            + windows.prefix(2).map { Self.result($0) } + [Self.result(plain, .failed), Self.result(windows[2])]
        let counts = Self.counts(events, total: 2)
        // Then the total counts each window, no count ever goes below zero, and at the end
        // nothing runs.
        #expect(counts.allSatisfy { $0.running >= 0 && $0.finished <= $0.total })
        #expect(counts.map(\.running) == [0, 1, 2, 2, 2, 2, 1, 0])
        #expect(counts.last.map { [$0.finished, $0.total, $0.running, $0.failed] } == [4, 4, 0, 1])
    }

    @Test func aFileSplitIntoSeatsAndWindowsRunsUntilItsLastItemAndOneSplitIntoNoneStops() {
        let upload = Self.file("room")
        let parts = [(0, "R-1"), (0, "R-2"), (1, "R-1")].map { channel, window in
            upload.forPart(named: "seat\(channel)") {
                $0.channel = ItemPart.Channel(index: channel, name: "seat\(channel)")
            }
            .forPart(named: window) { $0.span = ItemPart.Span(start: 0, end: 1) }
        }
        let empty = Self.file("empty")
        let events: [RunEvent] =
            [.itemStarted(upload), .itemSplit(upload, parts: 3), .itemStarted(empty), .itemSplit(empty, parts: 0)]
            + parts.map { Self.result($0) }
        let counts = Self.counts(events, total: 2)
        #expect(counts.map(\.running) == [1, 1, 2, 1, 1, 1, 0])
        #expect(counts.last.map { [$0.finished, $0.total, $0.running, $0.failed] } == [3, 3, 0, 0])
    }
}
