import Hummingbird
import NIOCore
import Synchronization

/// The request context of serve's routes: Hummingbird's, and the connection the request came on,
/// so a turn can stop when its client goes away (Hummingbird 2 runs a handler to its end however
/// the connection fares: the connection's task is cancelled only when the server shuts down).
struct ServeRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The request's connection.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// Calls `onGone` once when the client of a connection goes away while a turn runs: the
/// connection closes, or the client closes its side of it (a client that gave up closes its
/// socket; the server allows half-closed connections, so that arrives as input closed, as it
/// does for Go's net/http, whose request context is cancelled on it too).
///
/// Added first in the connection's pipeline, ahead of the HTTP decoder and the async channel,
/// which would swallow the event while the handler is busy with the turn; removed when the turn
/// ends.
final class ClientGoneWatcher: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny

    private let onGone: @Sendable () -> Void
    private let fired = Atomic<Bool>(false)

    init(onGone: @escaping @Sendable () -> Void) { self.onGone = onGone }

    func channelInactive(context: ChannelHandlerContext) {
        fire()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .some(.inputClosed) = event as? ChannelEvent { fire() }
        context.fireUserInboundEventTriggered(event)
    }

    func fire() {
        if !fired.exchange(true, ordering: .relaxed) { onGone() }
    }

    /// Whether the client went away.
    var hasFired: Bool { fired.load(ordering: .relaxed) }

    /// Runs `body` with a watcher on `channel` that calls `onGone` if the client leaves meanwhile
    /// (at once when it already has); a failure of `body` after the client left is `ClientGone`.
    /// Without a channel (tests calling routes directly), just runs `body`.
    static func watching<T>(
        _ channel: (any Channel)?, onGone: @escaping @Sendable () -> Void, _ body: () async throws -> T
    ) async throws -> T {
        guard let channel else { return try await body() }
        let watcher = ClientGoneWatcher(onGone: onGone)
        let added = (try? await channel.pipeline.addHandler(watcher, position: .first).get()) != nil
        if !added || !channel.isActive { watcher.fire() }
        defer { if added { channel.pipeline.removeHandler(watcher, promise: nil) } }
        do {
            return try await body()
        } catch {
            if watcher.hasFired { throw ClientGone() }
            throw error
        }
    }
}

/// A turn ended because its client went away (its work was cancelled).
struct ClientGone: Error {}
