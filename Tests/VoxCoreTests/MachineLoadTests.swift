import Foundation
import Testing

@testable import VoxCore

/// Threads of other processes runnable now (a decode leaves their cores to them).
@Suite struct MachineLoadTests {
    @Test func theRunningCountAndAThreadsStateAreRead() {
        #expect(MachineLoad.running(loadavg: "0.52 0.58 0.59 3/250 12345\n") == 3)
        #expect(MachineLoad.running(loadavg: "7.00 6.10 5.20 1/1200 99") == 1)
        for broken in ["", "0.52 0.58 0.59", "0.52 0.58 0.59 x/250 1", "0.52 0.58 0.59 0/250 1", "a b c 250 1"] {
            #expect(MachineLoad.running(loadavg: broken) == nil, "\(broken)")
        }
        #expect(MachineLoad.state(stat: "1234 (voxpipe) R 1 1234 1234 0 -1") == "R")
        #expect(MachineLoad.state(stat: "77 (a (b) c) S 2 0 0") == "S")
        #expect(MachineLoad.state(stat: "no parenthesis") == nil)
        #expect(MachineLoad.parent(stat: "1234 (espeak-ng) R 4321 1234 1234 0 -1") == "4321")
        #expect(MachineLoad.parent(stat: "1234 (x)") == nil)
        // This machine's: readable, never negative.
        #expect((MachineLoad.runnableElsewhere() ?? -1) >= 0)
    }
}
