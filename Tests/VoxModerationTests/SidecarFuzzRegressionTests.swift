import Foundation
import Testing
import VoxCore
import VoxModeration
import VoxTestSupport

/// Report sidecars from Tests/Fixtures/fuzz-regressions/sidecar/ (`make fuzz`, target sidecar).
@Suite struct SidecarFuzzRegressionTests {
    /// `{"1": …, "01": …}` named channel 1 twice: building the seat map trapped on the
    /// duplicate key. Only keys written as channel numbers count now.
    @Test func twoKeysForOneChannelGiveOneSeatNotACrash() throws {
        let report = try ReportSidecar.load(fuzzRegression("sidecar", "seats-one-channel-twice.json"))
        #expect(report.seats == [1: "alice"])
    }

    /// A reportId beyond 64 bits (the fuzzer's 4.2e71) loads: a number is a valid id;
    /// write-evidence trapped writing it (voxpipeTests' EvidenceTests run it through a bag).
    @Test func aReportIDBeyond64BitsLoads() throws {
        let report = try ReportSidecar.load(fuzzRegression("sidecar", "report-id-beyond-64-bits.json"))
        #expect(report.fields["reportId"]?.numberValue == 4.2e71)
        #expect(report.seats.isEmpty)
    }
}
