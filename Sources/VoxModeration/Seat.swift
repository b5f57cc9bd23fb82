import VoxCore

/// One channel of a multi-channel upload (a voice-chat seat), processed as an item of its own.
public struct Seat: Sendable, Hashable, Codable {
    /// 0-based channel index in the file.
    public var channel: Int
    /// Folder name: `seat<N>-<user>` from the report's seat map, else `channel<N>`.
    public var name: String
    /// The user on that seat, when the report names one.
    public var user: String?

    public init(channel: Int, name: String, user: String?) {
        self.channel = channel
        self.name = name
        self.user = user
    }
}

/// A stretch of the recording one report is about: it ends at the reported moment and lasts
/// `seconds`, clipped at the recording's start. Reports of one user close together share one
/// window (`reportIDs` lists them all).
public struct ReportWindow: Sendable, Hashable, Codable {
    /// Folder name: the (first) report id, made safe for a path.
    public var name: String
    public var reportIDs: [String]
    /// The reported moment, in seconds into the recording.
    public var end: Double
    /// How long the window was asked to be.
    public var seconds: Double

    public init(name: String, reportIDs: [String], end: Double, seconds: Double) {
        self.name = name
        self.reportIDs = reportIDs
        self.end = end
        self.seconds = seconds
    }

    /// Where the window starts: `seconds` before the end, or the recording's start.
    public var start: Double { max(0, end - seconds) }
    /// Seconds the recording did not have before its start.
    public var shortfall: Double { max(0, seconds - end) }
}

extension ItemPartKey where Value == Seat {
    /// The seat an item is.
    public static var seat: Self { Self("seat") }
}

extension ItemPartKey where Value == ReportWindow {
    /// The report window an item is.
    public static var reportWindow: Self { Self("reportWindow") }
}

extension InputFile {
    /// The seat this item is, when its upload is split per channel.
    public var seat: Seat? { part?.details[.seat] }

    /// The report window this item is (set: the item reads that stretch of the recording, in the
    /// same output folder), when its upload's reports name moments.
    public var reportWindow: ReportWindow? {
        get { part?.details[.reportWindow] }
        set {
            var narrowed = part ?? ItemPart()
            narrowed.details[.reportWindow] = newValue
            narrowed.span = newValue.map { ItemPart.Span(start: $0.start, end: $0.end) }
            part = narrowed
        }
    }

    /// This file's item for one seat: same input, its own output folder; the decoder reads the
    /// seat's channel.
    public func forSeat(_ seat: Seat) -> InputFile {
        forPart(named: seat.name) { part in
            part.channel = ItemPart.Channel(index: seat.channel, name: seat.name)
            part.details[.seat] = seat
        }
    }

    /// This item's part for one report window: same input (and seat), its own output folder; the
    /// decoder reads the window's stretch.
    public func forWindow(_ window: ReportWindow) -> InputFile {
        forPart(named: window.name) { part in
            part.span = ItemPart.Span(start: window.start, end: window.end)
            part.details[.reportWindow] = window
        }
    }
}
