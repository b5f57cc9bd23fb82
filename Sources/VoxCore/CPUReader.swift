import Foundation

/// Reads a `CPUBudget` from this process's own files: its affinity (`/proc/self/status`), its
/// cgroups (`/proc/self/cgroup`, found where `/proc/self/mountinfo` says the hierarchies are
/// mounted: cgroup v2 `cpu.max` and `cpu.pressure`, cgroup v1 `cpu.cfs_quota_us`), walking up
/// to the mount's root for the tightest quota. Every path goes through `file`, so a test hands
/// in the texts of a container, a hybrid v1/v2 machine or a bare host.
public struct CPUReader: Sendable {
    private let file: @Sendable (String) -> String?
    private let processors: Int

    /// This process's files; where the affinity cannot be read, the processors the system reports.
    public init() {
        file = { try? String(contentsOfFile: $0, encoding: .utf8) }
        processors = ProcessInfo.processInfo.activeProcessorCount
    }

    /// Files given as texts by path (a test's machine); a path not given cannot be read.
    public init(files: [String: String], processors: Int = 1) {
        file = { files[$0] }
        self.processors = processors
    }

    /// The cores, quota and pressure now (a few small files).
    public func budget() -> CPUBudget {
        let cgroups = ownCGroups()
        let affinity = file("/proc/self/status").flatMap(Self.allowedList(status:))
        var tightest: CPUQuota?
        var searched: [String] = []
        func consider(_ quota: CPUQuota?) {
            guard let quota else { return }
            if tightest.map({ quota.cpus < $0.cpus }) ?? true { tightest = quota }
        }
        for dir in cgroups.v2 {
            searched.append(dir)
            consider(file(dir + "/cpu.max").flatMap { CPUQuota(cpuMax: $0, file: dir + "/cpu.max") })
        }
        for dir in cgroups.v1CPU {
            searched.append(dir)
            if let quota = file(dir + "/cpu.cfs_quota_us"), let period = file(dir + "/cpu.cfs_period_us") {
                consider(CPUQuota(cfsQuota: quota, cfsPeriod: period, file: dir + "/cpu.cfs_quota_us"))
            }
        }
        return CPUBudget(
            affinity: affinity, allowedCores: affinity.flatMap(Self.count(cpuList:)) ?? processors, quota: tightest,
            quotaSearched: searched, pressure: pressure(in: cgroups.v2))
    }

    /// The CPU pressure of the process's own cgroup now (read before each decode).
    public func pressure() -> CPUPressure? { pressure(in: ownCGroups().v2) }

    private func pressure(in v2: [String]) -> CPUPressure? {
        // The process's own folder only, never a parent's (it holds other work) and never
        // /proc/pressure/cpu (the host's, in a container too). In a cgroup namespace the own
        // folder is the mount point: "0::/" there is the container's cgroup, not the host's root.
        guard let own = v2.first else { return nil }
        return file(own + "/cpu.pressure").flatMap { CPUPressure(text: $0, file: own + "/cpu.pressure") }
    }

    /// The cgroup folders of this process, its own first, then each parent up to the mount's root:
    /// in the cgroup v2 hierarchy and in the v1 hierarchy that has the `cpu` controller.
    func ownCGroups() -> (v2: [String], v1CPU: [String]) {
        let membership = Self.memberships(procSelfCgroup: file("/proc/self/cgroup") ?? "")
        let mounts = Self.mounts(mountinfo: file("/proc/self/mountinfo") ?? "")
        let v2 = membership.v2.map {
            Self.folders(of: $0, in: mounts.v2 ?? CGroupMount(root: "/", point: "/sys/fs/cgroup"))
        }
        let v1 = membership.v1CPU.map {
            Self.folders(of: $0, in: mounts.v1CPU ?? CGroupMount(root: "/", point: "/sys/fs/cgroup/cpu"))
        }
        return (v2 ?? [], v1 ?? [])
    }

    /// Where a cgroup hierarchy is mounted: the cgroup shown at the mount point (`root`, "/" for
    /// the whole hierarchy) and the mount point.
    struct CGroupMount: Equatable {
        var root: String
        var point: String
    }

    /// The process's cgroup paths from `/proc/self/cgroup`: the v2 one ("0::/path") and the v1
    /// one whose controllers include `cpu` ("4:cpu,cpuacct:/path").
    static func memberships(procSelfCgroup text: String) -> (v2: String?, v1CPU: String?) {
        var v2: String?
        var v1: String?
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, fields[2].hasPrefix("/") else { continue }
            if fields[0] == "0" && fields[1].isEmpty {
                v2 = String(fields[2])
            } else if fields[1].split(separator: ",").contains("cpu") {
                v1 = String(fields[2])
            }
        }
        return (v2, v1)
    }

    /// The cgroup2 mount and the cgroup v1 mount with the `cpu` controller, from
    /// `/proc/self/mountinfo` ("41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw").
    static func mounts(mountinfo text: String) -> (v2: CGroupMount?, v1CPU: CGroupMount?) {
        var v2: CGroupMount?
        var v1: CGroupMount?
        for line in text.split(separator: "\n") {
            let halves = line.components(separatedBy: " - ")
            guard halves.count == 2 else { continue }
            let before = halves[0].split(separator: " ")
            let after = halves[1].split(separator: " ")
            guard before.count >= 5, after.count >= 3 else { continue }
            let mount = CGroupMount(root: unescape(before[3]), point: unescape(before[4]))
            if after[0] == "cgroup2" {
                v2 = v2 ?? mount
            } else if after[0] == "cgroup", after[2].split(separator: ",").contains("cpu") {
                v1 = v1 ?? mount
            }
        }
        return (v2, v1)
    }

    /// mountinfo writes a space, tab, newline and backslash in a path as octal ("\040").
    private static func unescape(_ field: Substring) -> String {
        guard field.contains("\\") else { return String(field) }
        var bytes: [UInt8] = []
        var rest = Substring(field).utf8[...]
        while let byte = rest.first {
            let code = rest.dropFirst().prefix(3)
            if byte == UInt8(ascii: "\\"), code.count == 3,
                let value = UInt8(String(decoding: code, as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                rest = rest.dropFirst(4)
            } else {
                bytes.append(byte)
                rest = rest.dropFirst()
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The folders of cgroup `path` and of each parent up to the mount's root, own first. A path
    /// outside the mount's root (a container shown its own cgroup as the root) is the mount point.
    static func folders(of path: String, in mount: CGroupMount) -> [String] {
        var relative = path
        if mount.root != "/" {
            if path == mount.root {
                relative = "/"
            } else if path.hasPrefix(mount.root + "/") {
                relative = String(path.dropFirst(mount.root.count))
            } else {
                relative = "/"
            }
        }
        let parts = relative.split(separator: "/")
        let point = mount.point.hasSuffix("/") ? String(mount.point.dropLast()) : mount.point
        return (0...parts.count).reversed().map { n in
            ([point] + parts.prefix(n).map(String.init)).joined(separator: "/")
        }
    }

    /// The `Cpus_allowed_list` of a `/proc/self/status` text ("Cpus_allowed_list:\t0-1").
    static func allowedList(status text: String) -> String? {
        for line in text.split(separator: "\n") where line.hasPrefix("Cpus_allowed_list:") {
            return line.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    /// How many CPUs a kernel CPU list names ("0-3,8-11" is 8); nil when it is not one.
    static func count(cpuList text: String) -> Int? {
        var total = 0
        for range in text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",") {
            let ends = range.split(separator: "-", omittingEmptySubsequences: false)
            guard (1...2).contains(ends.count), let first = Int(ends[0]), let last = Int(ends[ends.count - 1]),
                first >= 0, last >= first
            else { return nil }
            total += last - first + 1
        }
        return total > 0 ? total : nil
    }
}
