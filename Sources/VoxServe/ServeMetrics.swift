import Foundation
import Prometheus

/// The server's metrics for `GET /metrics`, kept and rendered in Prometheus' text format by
/// swift-prometheus: requests by route and status, a latency histogram by route, requests in
/// flight, failures by reason, live sessions' answers by how they ended, and gauges of what runs
/// now (turns running and waiting, live sessions), read when the metrics are asked for.
final class ServeMetrics: Sendable {
    /// Histogram bucket bounds in seconds: loopback text turns take milliseconds, audio turns seconds.
    static let buckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]

    private static func name(_ name: String, _ unit: String = "", _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "voxpipe", subsystem: "serve", metricName: name, unitName: unit, helpText: help)
    }
    private static var requests: MetricNameDescriptor {
        name("requests", "total", "Requests answered, by route and status.")
    }
    private static var latency: MetricNameDescriptor {
        name("request", "seconds", "Time to answer a request, by route.")
    }
    private static var failures: MetricNameDescriptor {
        name("failures", "total", "Requests answered with an error, by reason.")
    }
    private static var liveResponses: MetricNameDescriptor {
        name("live_responses", "total", "Live sessions' answers, by how they ended.")
    }

    private let registry = PrometheusCollectorRegistry()
    private let inFlight: Gauge
    private let turnsRunning: Gauge
    private let turnsWaiting: Gauge
    private let liveSessions: Gauge

    init() {
        inFlight = registry.makeGauge(
            descriptor: Self.name("in_flight", "", "Requests being answered (pipeline requests waiting included)."))
        turnsRunning = registry.makeGauge(descriptor: Self.name("turns_running", "", "Turns running the pipeline now."))
        turnsWaiting = registry.makeGauge(descriptor: Self.name("turns_waiting", "", "Turns waiting for a slot."))
        liveSessions = registry.makeGauge(
            descriptor: Self.name("live_sessions", "", "Live sessions open (/v1/realtime)."))
    }

    func started() { inFlight.increment() }

    /// A live session's answer ended with `status`.
    func liveResponse(_ status: String) {
        registry.makeCounter(descriptor: Self.liveResponses, labels: [("status", status)]).increment()
    }

    /// One request answered: its route, status, seconds taken, and the failure's reason.
    func finished(route: String, status: Int, seconds: Double, failure: String?) {
        inFlight.decrement()
        registry.makeCounter(descriptor: Self.requests, labels: [("route", route), ("status", String(status))])
            .increment()
        registry.makeValueHistogram(descriptor: Self.latency, labels: [("route", route)], buckets: Self.buckets)
            .record(seconds)
        if let failure { registry.makeCounter(descriptor: Self.failures, labels: [("reason", failure)]).increment() }
    }

    /// The metrics as `GET /metrics` answers them, with the gauges of what runs now set first.
    func render(turnsRunning running: Int, turnsWaiting waiting: Int, liveSessions sessions: Int) -> String {
        turnsRunning.set(Double(running))
        turnsWaiting.set(Double(waiting))
        liveSessions.set(Double(sessions))
        return registry.emitToString()
    }
}
