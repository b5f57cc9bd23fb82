import Foundation

/// How many threads a CPU-bound engine (a Whisper decode) runs on here, and why: the cores this
/// process may run on (its affinity), capped by the tightest CPU quota of its cgroup and the
/// cgroups above it, less one core when its own cgroup reports clear, sustained CPU pressure.
/// Never from host-wide counts (`/proc/loadavg`, `/proc/pressure/cpu`): in a container they count
/// every process of the host, whatever the container's quota. Only speed depends on it, never a
/// result. `CPUReader` reads it from this process's files; the decision itself is here, pure.
public struct CPUBudget: Sendable, Equatable, CustomStringConvertible {
    /// The CPUs the process may run on, as the kernel lists them (`Cpus_allowed_list`, the
    /// `sched_getaffinity` mask): "0-1"; nil where that could not be read.
    public var affinity: String?
    /// How many CPUs that is (where it could not be read: the processors the system reports).
    public var allowedCores: Int
    /// The tightest CPU quota on the way from the process's cgroup up to the root; nil: none.
    public var quota: CPUQuota?
    /// The cgroup folders looked in for a quota, the process's own first.
    public var quotaSearched: [String]
    /// The CPU pressure of the process's own cgroup; nil where there is none to read (cgroup v1
    /// only, or PSI off): then other load is not judged at all.
    public var pressure: CPUPressure?

    /// A budget from what was read.
    public init(
        affinity: String?, allowedCores: Int, quota: CPUQuota?, quotaSearched: [String] = [],
        pressure: CPUPressure?
    ) {
        self.affinity = affinity
        self.allowedCores = max(1, allowedCores)
        self.quota = quota
        self.quotaSearched = quotaSearched
        self.pressure = pressure
    }

    /// The cores the process may use: its affinity, capped by its quota rounded up
    /// (min(cores, ceil(quota / period))); at least one.
    public var cores: Int { max(1, min(allowedCores, quota?.cores ?? allowedCores)) }

    /// Cores left to other work now: one under sustained pressure (if there are two or more).
    public var coresLeft: Int { cores > 1 ? pressure?.coresToLeave ?? 0 : 0 }

    /// Threads for a decode alone: every core the process may use, less those left to others.
    public var threads: Int { cores - coresLeft }

    /// What was chosen and why, one line each: the threads, the cores, the pressure.
    public var description: String {
        let why =
            coresLeft > 0 ? "one core left to other work (sustained CPU pressure)" : "every core this process may use"
        let allowed =
            affinity.map { "affinity \($0): \(allowedCores)" } ?? "\(allowedCores) processors (affinity unread)"
        let limit: String
        if let quota {
            let cpus = String(format: "%.2f", quota.cpus)
            limit = "CPU quota \(quota.quota)/\(quota.period) µs = \(cpus) CPUs in \(quota.file)"
        } else if quotaSearched.isEmpty {
            limit = "no cgroup found"
        } else {
            limit = "no CPU quota in \(quotaSearched.joined(separator: ", "))"
        }
        let load: String
        if let pressure {
            let verdict = pressure.isSustained ? "sustained: leaves a core" : "not sustained"
            load =
                "some avg10 \(String(format: "%.2f", pressure.someAvg10))% avg60 "
                + "\(String(format: "%.2f", pressure.someAvg60))% in \(pressure.file) (\(verdict); a core is left at "
                + "avg10 ≥ \(Int(CPUPressure.sustainedAvg10))% and avg60 ≥ \(Int(CPUPressure.sustainedAvg60))%)"
        } else {
            load = "none readable for this process's cgroup (no cgroup v2 cpu.pressure): other load not judged"
        }
        return "threads \(threads): \(why)\ncores: \(cores) (\(allowed); \(limit))\npressure: \(load)"
    }
}

/// A cgroup's CPU bandwidth limit: `quota` microseconds of CPU time per `period`.
public struct CPUQuota: Sendable, Equatable {
    /// CPU time allowed per period, in microseconds.
    public var quota: Int
    /// The period, in microseconds.
    public var period: Int
    /// The file it was read from.
    public var file: String

    /// A quota of `quota` µs per `period` µs read from `file`.
    public init(quota: Int, period: Int, file: String) {
        self.quota = quota
        self.period = period
        self.file = file
    }

    /// From cgroup v2's `cpu.max`: "150000 100000" is 1.5 CPUs; "max 100000" (no limit) and
    /// anything unreadable are nil.
    public init?(cpuMax: String, file: String) {
        let fields = cpuMax.split(whereSeparator: \.isWhitespace)
        guard fields.count == 2, let quota = Int(fields[0]), let period = Int(fields[1]) else { return nil }
        self.init(checked: quota, period: period, file: file)
    }

    /// From cgroup v1's `cpu.cfs_quota_us` ("-1": no limit) and `cpu.cfs_period_us`.
    public init?(cfsQuota: String, cfsPeriod: String, file: String) {
        guard let quota = Int(cfsQuota.trimmingCharacters(in: .whitespacesAndNewlines)),
            let period = Int(cfsPeriod.trimmingCharacters(in: .whitespacesAndNewlines))
        else { return nil }
        self.init(checked: quota, period: period, file: file)
    }

    private init?(checked quota: Int, period: Int, file: String) {
        guard quota > 0, period > 0 else { return nil }
        self.init(quota: quota, period: period, file: file)
    }

    /// The CPUs it allows: quota / period.
    public var cpus: Double { Double(quota) / Double(period) }

    /// Whole cores it allows: quota / period rounded up (1.5 CPUs keep two threads busy part time).
    public var cores: Int { max(1, quota / period + (quota % period == 0 ? 0 : 1)) }
}

/// Pressure stall information for CPU (`cpu.pressure`): the share of recent time in which at
/// least one task of the cgroup was runnable but waiting for a CPU ("some"), over 10 s and 60 s.
public struct CPUPressure: Sendable, Equatable {
    /// "some avg10": percent of the last ~10 s.
    public var someAvg10: Double
    /// "some avg60": percent of the last ~60 s.
    public var someAvg60: Double
    /// The file it was read from.
    public var file: String

    /// avg10 at or above this, with avg60 at or above `sustainedAvg60`, is sustained pressure.
    /// PSI's averages decay every 2 s, so 100% waiting for 4 s reads avg10 33%, avg60 6%; 6 s,
    /// 45% and 10%: a core is left only after some 6 s of waiting, never for a burst.
    public static let sustainedAvg10 = 40.0
    /// See `sustainedAvg10`.
    public static let sustainedAvg60 = 10.0

    /// Pressure read from `file`.
    public init(someAvg10: Double, someAvg60: Double, file: String) {
        self.someAvg10 = someAvg10
        self.someAvg60 = someAvg60
        self.file = file
    }

    /// From a `cpu.pressure` text ("some avg10=28.06 avg60=7.54 avg300=2.13 total=8291313" and a
    /// "full" line); nil without a readable "some" line.
    public init?(text: String, file: String) {
        guard let some = text.split(separator: "\n").first(where: { $0.hasPrefix("some ") }) else { return nil }
        var values: [Substring: Double] = [:]
        for field in some.split(separator: " ").dropFirst() {
            guard let equals = field.firstIndex(of: "=") else { continue }
            values[field[..<equals]] = Double(field[field.index(after: equals)...])
        }
        guard let avg10 = values["avg10"], let avg60 = values["avg60"], avg10 >= 0, avg60 >= 0 else { return nil }
        self.init(someAvg10: avg10, someAvg60: avg60, file: file)
    }

    /// Tasks of the cgroup kept waiting for a CPU for a good part of the last 10 s and of the
    /// last minute: a decode's threads would wait for each other at every step of its graph.
    public var isSustained: Bool { someAvg10 >= Self.sustainedAvg10 && someAvg60 >= Self.sustainedAvg60 }

    /// Cores to leave to the waiting work: one under sustained pressure ("some" says at least
    /// one task waited, not how many), else none.
    public var coresToLeave: Int { isSustained ? 1 : 0 }
}
