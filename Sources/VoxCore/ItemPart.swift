import Foundation

/// Which part of its input file an item is, when the file becomes several items (an
/// `ItemExpansion`: one per seat of a multi-channel upload, one per report window): the names it
/// goes by, what of the file the decoder reads for it (one channel, a stretch of time), and what
/// the domain that made it knows about it (`details`, by typed key). VoxCore knows no domain: it
/// names, decodes and reports parts by these fields alone.
public struct ItemPart: Sendable, Hashable {
    /// One channel of a file, read as mono: its 0-based index and the name the part goes by.
    public struct Channel: Sendable, Hashable {
        public var index: Int
        public var name: String

        public init(index: Int, name: String) {
            self.index = index
            self.name = name
        }
    }

    /// A stretch of a recording, in seconds from its start.
    public struct Span: Sendable, Hashable {
        public var start: Double
        public var end: Double

        public init(start: Double, end: Double) {
            self.start = start
            self.end = end
        }
    }

    /// Its names, outermost first (`seat0-alice`, `R-17`): folders below the file's output folder,
    /// `#name` after the file's path in messages and reports.
    public var names: [String]
    /// The one channel of the file the item is; nil: every channel.
    public var channel: Channel?
    /// The stretch of the recording the item is; nil: all of it.
    public var span: Span?
    /// What the domain that made the part knows about it, by typed key (`ItemPartKey`).
    public var details: ItemPartDetails

    public init(names: [String] = [], channel: Channel? = nil, span: Span? = nil, details: ItemPartDetails = .init()) {
        self.names = names
        self.channel = channel
        self.span = span
        self.details = details
    }
}

/// A key for a detail of an item's part, as `ItemFactKey` is for an item fact: a domain module
/// declares its own (`part.details[.reportWindow]`), and VoxCore carries them without knowing them.
public typealias ItemPartKey<Value: Hashable & Sendable> = TypedKey<ItemPartDetails, Value>

/// The details of an item's part, by typed key. Two parts are equal when their details are.
public struct ItemPartDetails: Sendable, Hashable {
    private var values: [AnyTypedKey<ItemPartDetails>: any Hashable & Sendable] = [:]

    public init() {}

    /// The detail `key` names, when set.
    public subscript<Value: Hashable & Sendable>(_ key: ItemPartKey<Value>) -> Value? {
        get { values[key.erased] as? Value }
        set { values[key.erased] = newValue }
    }

    public static func == (a: ItemPartDetails, b: ItemPartDetails) -> Bool {
        a.values.count == b.values.count
            && a.values.allSatisfy { key, value in b.values[key].map { AnyHashable($0) == AnyHashable(value) } ?? false
            }
    }

    public func hash(into hasher: inout Hasher) {
        // Order-independent, as equality is.
        hasher.combine(values.reduce(0) { $0 ^ ($1.key.hashValue &+ 31 &* AnyHashable($1.value).hashValue) })
    }
}

extension InputFile {
    /// This item's part `name`: the same input (and the part this item already is, narrowed by
    /// `change`), in its own output folder below this item's.
    public func forPart(named name: String, _ change: (inout ItemPart) -> Void = { _ in }) -> InputFile {
        var narrowed = part ?? ItemPart()
        narrowed.names.append(name)
        change(&narrowed)
        return InputFile(url: url, relativePath: relativePath, outputName: "\(outputName)/\(name)", part: narrowed)
    }
}
