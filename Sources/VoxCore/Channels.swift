import AsyncAlgorithms
import Foundation
import Synchronization

/// The channel type between two stages: bounded (a `send` waits for the consumer) and failable.
public typealias PayloadChannel = AsyncThrowingChannel<any Payload, any Error>

/// A stage's typed view of its input channel. The channel ending is the end of input; a failed
/// channel throws the upstream failure.
public struct Inbox<Input: StageInput>: AsyncSequence, Sendable {
    public typealias Element = Input
    let channel: PayloadChannel
    let counter: ReadCounter?

    /// `counting` tallies the values the stage takes (the stage harness checks none is left unread).
    public init(_ channel: PayloadChannel, counting counter: ReadCounter? = nil) {
        self.channel = channel
        self.counter = counter
    }

    public func makeAsyncIterator() -> Iterator { Iterator(base: channel.makeAsyncIterator(), counter: counter) }

    public struct Iterator: AsyncIteratorProtocol {
        var base: PayloadChannel.Iterator
        let counter: ReadCounter?

        public mutating func next() async throws -> Input? {
            while let payload = try await base.next() {
                counter?.increment()
                if let value = Input(payload: payload) { return value }
                // A leading part carries only its audio; the last part carries the rest.
                if payload.isLeadingPart { continue }
                // The planner checked this edge; reaching here is a bug, not bad input.
                throw VoxError(
                    .internal,
                    "a \(type(of: payload).payloadType) reached a stage that takes "
                        + "\(Input.accepted.map(\.rawValue).joined(separator: " | "))"
                )
            }
            return nil
        }
    }
}

/// How many values a stage has taken from its inbox.
public final class ReadCounter: Sendable {
    private let count = Mutex(0)

    public init() {}

    public var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
}

/// Receives what terminal stages (those nothing reads from) give: the runner collects artifacts.
public protocol OutputSink: Sendable {
    func collect(_ payload: any Payload)
}

/// A stage's typed view of its output: one value goes to every stage fed from it (fan-out), each
/// `send` waiting for its consumer (back-pressure).
public struct Outbox<Output: Payload>: Sendable {
    let channels: [PayloadChannel]
    let sink: (any OutputSink)?

    public init(channels: [PayloadChannel], sink: (any OutputSink)?) {
        self.channels = channels
        self.sink = sink
    }

    /// Sends one value downstream; throws `CancellationError` when the item was abandoned. The
    /// sink sees it first, so what it collects comes in the order it was made (a transcript
    /// before the reply to it).
    public func send(_ value: Output) async throws {
        try Task.checkCancellation()
        sink?.collect(value)
        for channel in channels { await channel.send(value) }
        try Task.checkCancellation()
    }
}
