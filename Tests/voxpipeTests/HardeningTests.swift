import Foundation
import Testing
import VoxCore
import VoxTestSupport

/// What an adversarial sweep of `run` and `validate` found (issue 27, items 4, 6 and 7), from the
/// command line.
@Suite struct HardeningTests {
    @Test(.timeLimit(.minutes(1)))
    func aTwentyThousandStageSpecValidates() throws {
        let dir = temporaryDirectory()
        var stages = [#"{"id":"decode","kind":"decode"}"#]
        stages += (1..<19_999).map {
            #"{"id":"r\#($0)","kind":"resample","rate":\#($0 % 2 == 0 ? 8000 : 16000),"channels":1}"#
        }
        stages.append(#"{"id":"audio","kind":"write-wav"}"#)
        let spec = try writeSpec(#"{"name":"long","stages":["# + stages.joined(separator: ",") + "]}", in: dir)
        let result = try voxpipe(["validate", spec.path])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.first == "plan 'long': 20000 stages")
        #expect(lines.last?.hasSuffix("from 'r19998'") == true)
    }
}
