import Testing

@testable import VoxServe

/// The session table and the join rate alone, on a clock the test moves.
@Suite struct SessionTableTests {
    func session(_ channel: String, anonymous: Bool = false) -> LearnerSession {
        LearnerSession(channel: channel, startedAt: .distantPast, anonymous: anonymous, clientKey: nil, lastUsed: 0)
    }

    @Test func aFullTableOfActiveSessionsRefusesANewOneInsteadOfEvictingAnyone() {
        var table = SessionTable(limit: 2, idleAfter: 60)
        #expect(table.start(session("a"), id: "A", now: 0) == [])
        #expect(table.start(session("b"), id: "B", now: 1) == [])
        // Both used within the last minute: a thousand joins later, both are still there.
        for n in 0..<1000 { #expect(table.start(session("x\(n)"), id: "X\(n)", now: 30) == nil) }
        #expect(table.use("A", now: 31).session?.channel == "a")
        #expect(table.use("B", now: 31).session?.channel == "b")
    }

    @Test func aNewSessionTakesThePlaceOfTheLeastRecentlyUsedIdleOne() throws {
        var table = SessionTable(limit: 2, idleAfter: 60)
        _ = table.start(session("a"), id: "A", now: 0)
        _ = table.start(session("b"), id: "B", now: 10)
        let started = table.start(session("c"), id: "C", now: 100)
        let removed = try #require(started)
        #expect(removed.map(\.channel) == ["a"])
        #expect(table.use("A", now: 100).session == nil)
        #expect(table.use("B", now: 100).session?.channel == "b")
    }

    @Test func aSessionWithATurnInFlightIsNeverEvictedHoweverLongTheTurn() {
        var table = SessionTable(limit: 1, idleAfter: 60)
        _ = table.start(session("a"), id: "A", now: 0)
        table.request("A", by: 1, now: 0)
        #expect(table.start(session("b"), id: "B", now: 1000) == nil)
        table.request("A", by: -1, now: 1000)
        #expect(table.start(session("b"), id: "B", now: 1061)?.map(\.channel) == ["a"])
    }

    @Test func idleAnonymousSessionsExpireAndGoBeforeNamedOnes() {
        var table = SessionTable(limit: 2, idleAfter: 60)
        _ = table.start(session("named"), id: "N", now: 0)
        _ = table.start(session("anon", anonymous: true), id: "A", now: 5)
        #expect(table.use("A", now: 30).session?.channel == "anon")
        // Idle past the limit: gone when next used.
        let expired = table.use("A", now: 200)
        #expect(expired.session == nil && expired.removed?.channel == "anon")
        _ = table.start(session("anon2", anonymous: true), id: "A2", now: 200)
        // Full, both idle at 400: the anonymous one goes first although the named one is older.
        #expect(table.start(session("new"), id: "new", now: 400)?.map(\.channel) == ["anon2"])
    }

    @Test func idsAreRandom128BitHexAndOnlyWellFormedOnesAreLookedUp() {
        let ids = (0..<100).map { _ in Sessions.makeID() }
        #expect(Set(ids).count == 100)
        #expect(ids.allSatisfy(Sessions.isWellFormed))
        #expect(!Sessions.isWellFormed("0"))
        #expect(!Sessions.isWellFormed(String(repeating: "G", count: 32)))
        let sessions = Sessions(limit: 4, idleAfter: 60)
        #expect(sessions.use("../../etc/passwd").session == nil)
    }

    @Test func joinsFromOneAddressAreLimitedToTheBurstThenTheRate() {
        var rate = JoinRate(perMinute: 6, burst: 3)
        for _ in 0..<3 { #expect(rate.take("10.0.0.1", now: 0) == nil) }
        let wait = rate.take("10.0.0.1", now: 0)
        #expect(wait == 10)
        // Another address has its own bucket.
        #expect(rate.take("10.0.0.2", now: 0) == nil)
        // Ten seconds later one more join.
        #expect(rate.take("10.0.0.1", now: 10) == nil)
        #expect(rate.take("10.0.0.1", now: 10) != nil)
    }

    @Test func theJoinRateForgetsTheLeastRecentlySeenAddressWhenFull() {
        var rate = JoinRate(perMinute: 0, burst: 1, clients: 2)
        #expect(rate.take("a", now: 0) == nil)
        #expect(rate.take("b", now: 1) == nil)
        #expect(rate.take("c", now: 2) == nil)
        // "a" was forgotten: it has a fresh bucket; "c" does not.
        #expect(rate.take("a", now: 3) == nil)
        #expect(rate.take("c", now: 4) != nil)
    }
}
