import Foundation
import Synchronization

/// The server's counters for `GET /metrics`, in Prometheus' text format: requests by route and
/// status, a latency histogram by route, requests in flight, and failures by reason.
final class ServeMetrics: Sendable {
    /// Histogram bucket bounds in seconds: loopback text turns take milliseconds, audio turns seconds.
    static let buckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]

    private struct Latency {
        var counts = [Int](repeating: 0, count: ServeMetrics.buckets.count)
        var sum = 0.0
        var count = 0
    }

    private struct Counters {
        var requests: [String: [Int: Int]] = [:]
        var latency: [String: Latency] = [:]
        var failures: [String: Int] = [:]
        var inFlight = 0
        /// Live sessions' answers by how they ended (completed, cancelled, failed).
        var liveResponses: [String: Int] = [:]
    }

    private let counters = Mutex(Counters())

    func started() { counters.withLock { $0.inFlight += 1 } }

    /// A live session's answer ended with `status`.
    func liveResponse(_ status: String) { counters.withLock { $0.liveResponses[status, default: 0] += 1 } }

    /// One request answered: its route, status, seconds taken, and the failure's reason.
    func finished(route: String, status: Int, seconds: Double, failure: String?) {
        counters.withLock { c in
            c.inFlight -= 1
            c.requests[route, default: [:]][status, default: 0] += 1
            var l = c.latency[route] ?? Latency()
            for (i, bound) in Self.buckets.enumerated() where seconds <= bound { l.counts[i] += 1 }
            l.sum += seconds
            l.count += 1
            c.latency[route] = l
            if let failure { c.failures[failure, default: 0] += 1 }
        }
    }

    func render() -> String {
        counters.withLock { c in
            var lines: [String] = []
            func header(_ name: String, _ type: String, _ help: String) {
                lines.append("# HELP \(name) \(help)")
                lines.append("# TYPE \(name) \(type)")
            }
            header("voxpipe_serve_requests_total", "counter", "Requests answered, by route and status.")
            for route in c.requests.keys.sorted() {
                for (status, n) in c.requests[route, default: [:]].sorted(by: { $0.key < $1.key }) {
                    lines.append("voxpipe_serve_requests_total{route=\"\(route)\",status=\"\(status)\"} \(n)")
                }
            }
            header("voxpipe_serve_request_seconds", "histogram", "Time to answer a request, by route.")
            for route in c.latency.keys.sorted() {
                guard let l = c.latency[route] else { continue }
                let bucket = "voxpipe_serve_request_seconds_bucket{route=\"\(route)\""
                for (i, bound) in Self.buckets.enumerated() {
                    lines.append("\(bucket),le=\"\(format(bound))\"} \(l.counts[i])")
                }
                lines.append("voxpipe_serve_request_seconds_bucket{route=\"\(route)\",le=\"+Inf\"} \(l.count)")
                lines.append("voxpipe_serve_request_seconds_sum{route=\"\(route)\"} \(format(l.sum))")
                lines.append("voxpipe_serve_request_seconds_count{route=\"\(route)\"} \(l.count)")
            }
            header("voxpipe_serve_in_flight", "gauge", "Requests being answered (pipeline requests waiting included).")
            lines.append("voxpipe_serve_in_flight \(c.inFlight)")
            header("voxpipe_serve_failures_total", "counter", "Requests answered with an error, by reason.")
            for (reason, n) in c.failures.sorted(by: { $0.key < $1.key }) {
                lines.append("voxpipe_serve_failures_total{reason=\"\(reason)\"} \(n)")
            }
            header("voxpipe_serve_live_responses_total", "counter", "Live sessions' answers, by how they ended.")
            for (status, n) in c.liveResponses.sorted(by: { $0.key < $1.key }) {
                lines.append("voxpipe_serve_live_responses_total{status=\"\(status)\"} \(n)")
            }
            return lines.joined(separator: "\n") + "\n"
        }
    }

    private func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
