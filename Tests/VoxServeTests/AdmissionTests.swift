import Synchronization
import Testing
import VoxTestSupport

@testable import VoxServe

@Suite struct AdmissionTests {
    @Test func placesAreTheSlotsAndTheQueueAndTheNextOneIsRefused() {
        let admission = Admission(concurrency: 2, queue: 1)
        #expect((0..<3).map { _ in admission.enter() } == [true, true, true])
        #expect(!admission.enter())
        admission.leave()
        #expect(admission.enter(), "a place given back takes the next request")
        #expect(admission.held == 3)
    }

    @Test func theServerGoingIdleAndStayingSoIsToldOnce() async throws {
        let idle = Atomic<Int>(0)
        let admission = Admission(concurrency: 1, queue: 0, idleAfter: .milliseconds(10)) {
            idle.add(1, ordering: .relaxed)
        }
        #expect(admission.enter())
        admission.leave()
        #expect(try await eventually { idle.load(ordering: .relaxed) > 0 })
        #expect(idle.load(ordering: .relaxed) == 1)
    }
}
