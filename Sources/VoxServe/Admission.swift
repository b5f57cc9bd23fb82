import Foundation
import Synchronization
import VoxCore

/// Who gets a turn: `concurrency` turns run at once (`slots`), `queue` more wait for a slot, and
/// beyond them a request is refused at once — on arrival, before its body is read, decoded or
/// written anywhere, so a full server answers 503 in the time it takes to say so.
///
/// A request holds a place from arrival to its answer (`enter`/`leave`), its body's reading
/// included; a turn holds a slot while its stages run. Places bound everything the server holds
/// for pipeline requests, so the slots' queue can never overflow.
final class Admission: Sendable {
    /// Turns that run at once; the others wait here, first come first served.
    let slots: AsyncSemaphore
    /// Requests the server holds at most: the slots and the queue.
    let places: Int
    private let taken = Atomic<Int>(0)
    /// Called once the server has held no request for `idleAfter` (it went idle and stayed so).
    private let onIdle: @Sendable () -> Void
    private let idleAfter: Duration

    init(
        concurrency: Int, queue: Int, idleAfter: Duration = .seconds(1),
        onIdle: @escaping @Sendable () -> Void = {}
    ) {
        slots = AsyncSemaphore(permits: concurrency)
        places = slots.permits + max(0, queue)
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
enum MemoryTrim {
    static func now() {
        #if os(Linux)
        _ = trim?(0)
        #endif
    }

    #if os(Linux)
    /// glibc's `malloc_trim` (malloc.h is not in Swift's Glibc module), looked up once.
    private static let trim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()
    #endif
}
