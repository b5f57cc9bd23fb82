import Foundation
import VoxCore
import VoxFormats
import VoxReports

// The hand-written readers of formats outside the spine: a WAV header read from memory (HTTP
// speech answers, enrolment clips, serve's uploads) and the Prometheus textfile voxpipe merges
// its metrics into (`--metrics`, `voxpipe report --merge`).

/// `WAVData.header(of:)`: nil, or a header whose samples start inside the bytes and whose promised
/// frames are not negative; reading it again from the same bytes gives the same answer.
struct WAVTarget: FuzzTarget {
    func run(_ data: Data) throws {
        let bytes = [UInt8](data)
        guard let (header, samplesAt) = WAVData.header(of: bytes) else { return }
        guard samplesAt >= 12, samplesAt <= bytes.count else {
            throw VoxError(.internal, "the samples start at \(samplesAt), outside the \(bytes.count) bytes")
        }
        if let frames = header.promisedFrames, frames < 0 {
            throw VoxError(.internal, "the header promises \(frames) frames")
        }
        guard let again = WAVData.header(of: bytes), again.samplesAt == samplesAt else {
            throw VoxError(.internal, "a second read of the same bytes gave another header")
        }
    }
}

/// `RunMetrics.parse`: whatever a textfile holds, the jobs it finds render to text that parses
/// back to the same jobs with the same item counts (the merge rewrites the file this way; a
/// status the file did not name is written as 0).
struct MetricsTarget: FuzzTarget {
    func run(_ data: Data) throws {
        let found = RunMetrics.parse(String(decoding: data, as: UTF8.self))
        func counts(_ m: RunMetrics) -> [ItemResult.Status: Int] { m.items.filter { $0.value != 0 } }
        for metrics in found {
            let again = RunMetrics.parse(metrics.prometheus())
            guard again.count == 1, let back = again.first, back.job == metrics.job, counts(back) == counts(metrics),
                back.success == metrics.success,
                (back.lastSuccessTimestamp == nil) == (metrics.lastSuccessTimestamp == nil)
            else {
                throw VoxError(
                    .internal, "job \(metrics.job.debugDescription) did not survive its own rendering: \(again)")
            }
        }
    }
}
