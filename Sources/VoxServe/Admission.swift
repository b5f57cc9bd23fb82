import Foundation
import Synchronization
import VoxCore

/// How many pipeline requests the server holds: `concurrency` turns run at once (the
/// `TurnScheduler`'s slots), `queue` more wait for one, and beyond them a request is refused at
/// once — as its body has arrived, before it is decoded or written anywhere, so a full server
/// answers 503 in the time it takes to say so.
///
/// A request holds a place from the end of its body to its answer (`enter`/`leave`). Places bound
/// everything the server holds for pipeline requests, so the scheduler's queue never overflows.
///
/// On a server, a place is taken on the connection's event loop as the request's body ends
/// (`RequestGate`: `enter(arrivingOn:)`), and the request's handler takes it over
/// (`claim(arrivedOn:)`); a handler that finds none enters itself.
final class Admission: Sendable {
    /// Requests the server holds at most: the turns that run at once and the queue.
    let places: Int
    private let taken = Atomic<Int>(0)
    /// Places taken on arrival that no handler has claimed yet, by connection.
    private let arrived = Mutex<[ObjectIdentifier: Int]>([:])
    /// Called once the server has held no request for `idleAfter` (it went idle and stayed so).
    private let onIdle: @Sendable () -> Void
    private let idleAfter: Duration

    init(
        concurrency: Int, queue: Int, idleAfter: Duration = .seconds(1),
        onIdle: @escaping @Sendable () -> Void = {}
    ) {
        places = max(1, concurrency) + max(0, queue)
        self.idleAfter = idleAfter
        self.onIdle = onIdle
    }

    /// Takes a place, without waiting; false when every one is taken (the request is refused).
    func enter() -> Bool {
        var current = taken.load(ordering: .relaxed)
        while current < places {
            let (exchanged, original) = taken.compareExchange(
                expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Takes a place for the request whose head just arrived on `connection`, without waiting;
    /// false when every one is taken. The request's handler claims the place (and gives it back
    /// when it ends); the gate gives back one that no handler claimed (`release(arrivedOn:)`).
    func enter(arrivingOn connection: ObjectIdentifier) -> Bool {
        guard enter() else { return false }
        arrived.withLock { $0[connection, default: 0] += 1 }
        return true
    }

    /// Takes over the place taken for this connection's request as it arrived: true when there
    /// was one (the caller now holds it and leaves when done), false when there was none.
    func claim(arrivedOn connection: ObjectIdentifier) -> Bool {
        arrived.withLock { unclaimed in
            guard let count = unclaimed[connection] else { return false }
            unclaimed[connection] = count > 1 ? count - 1 : nil
            return true
        }
    }

    /// Gives back the place taken for this connection's request as it arrived, unless its handler
    /// claimed it: the request was answered without it, or the connection ended first.
    func release(arrivedOn connection: ObjectIdentifier) {
        if claim(arrivedOn: connection) { leave() }
    }

    /// Gives a place back. The last one out starts the idle wait: the answer it is about to give
    /// (and the buffers it was read and written with) are freed by then.
    func leave() {
        guard taken.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        Task { [self] in
            try await Task.sleep(for: idleAfter)
            if held == 0 { onIdle() }
        }
    }

    /// Requests held now.
    var held: Int { taken.load(ordering: .relaxed) }
}

/// Gives the memory a burst of turns left behind back to the system when the server goes idle:
/// glibc keeps freed memory in its arenas (a thread per decode uses arenas of its own), so
/// without a trim a server's RSS stays near its peak long after the load.
public enum MemoryTrim {
    static func now() { Heap.returnFreeMemory() }

    /// Caps glibc's malloc arenas at `count` (its default is eight per core), unless the
    /// environment sets `MALLOC_ARENA_MAX`. Each arena keeps the small blocks a burst of turns
    /// left in it, which no trim can give back, so a server with an arena per busy thread stayed
    /// 23–37% above its starting RSS after 16 clients; with two arenas on 2 cores it came back to
    /// its start (`bench/tutor.sh`, part 2). Call before the work starts: arenas made earlier stay.
    public static func limitArenas(to count: Int) {
        #if os(Linux)
        guard ProcessInfo.processInfo.environment["MALLOC_ARENA_MAX"] == nil,
            let symbol = dlsym(nil, "mallopt")
        else { return }
        let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
        let arenaMax: Int32 = -8  // M_ARENA_MAX in malloc.h
        _ = mallopt(arenaMax, Int32(clamping: max(1, count)))
        #endif
    }
}
