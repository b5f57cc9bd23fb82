import Foundation
import Testing

@testable import VoxCore

/// How many threads a decode takes: the cores the process may use (affinity, the tightest cgroup
/// CPU quota), less one under sustained CPU pressure in its own cgroup; never host-wide counts.
/// The machines are the texts of their files.
@Suite struct CPUBudgetTests {
    /// Host-wide figures that say the machine is swamped: a budget must never follow them.
    static let busyHost = [
        "/proc/loadavg": "61.00 58.00 40.00 64/3000 12345\n",
        "/proc/pressure/cpu":
            "some avg10=97.00 avg60=95.00 avg300=90.00 total=1\nfull avg10=0 avg60=0 avg300=0 total=0\n",
    ]

    static func pressure(_ avg10: Double, _ avg60: Double) -> String {
        "some avg10=\(avg10) avg60=\(avg60) avg300=1.00 total=8291313\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    }

    /// This machine's kind: a VM with cgroup v1 controllers (cpu among them) and the v2 hierarchy
    /// mounted at /sys/fs/cgroup/unified (hybrid), the process at the root of both.
    static func hybrid(
        cpuCgroup: String = "/", quota: String = "-1", avg10: Double = 0, avg60: Double = 0
    )
        -> [String: String]
    {
        var files = busyHost.merging(
            [
                "/proc/self/status":
                    "Name:\tvoxpipe\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\nvoluntary_ctxt_switches:\t5\n",
                "/proc/self/cgroup":
                    "9:name=systemd:/\n4:memory:/process_api/0484\n3:cpuset:/\n2:cpuacct:/\n1:cpu:\(cpuCgroup)\n0::/\n",
                "/proc/self/mountinfo": """
                31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
                32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
                33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
                40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
                41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw

                """,
                "/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1\n", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
                "/sys/fs/cgroup/unified/cpu.pressure": pressure(avg10, avg60),
            ]
        ) { _, new in new }
        if cpuCgroup != "/" {
            files["/sys/fs/cgroup/cpu\(cpuCgroup)/cpu.cfs_quota_us"] = quota + "\n"
            files["/sys/fs/cgroup/cpu\(cpuCgroup)/cpu.cfs_period_us"] = "100000\n"
        }
        return files
    }

    /// A Kubernetes container on cgroup v2 without a cgroup namespace: 16 CPUs in its affinity,
    /// 1.5 CPUs for the pod (its parent), none set on the container itself.
    static func kubernetes(avg10: Double = 1.2, avg60: Double = 0.4) -> [String: String] {
        let pod = "/sys/fs/cgroup/kubepods.slice/kubepods-pod1.slice"
        return busyHost.merging(
            [
                "/proc/self/status": "Cpus_allowed_list:\t0-15\n",
                "/proc/self/cgroup": "0::/kubepods.slice/kubepods-pod1.slice/cri-abc.scope\n",
                "/proc/self/mountinfo": "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate\n",
                pod + "/cri-abc.scope/cpu.max": "max 100000\n",
                pod + "/cri-abc.scope/cpu.pressure": pressure(avg10, avg60),
                pod + "/cpu.max": "150000 100000\n",
                "/sys/fs/cgroup/kubepods.slice/cpu.max": "max 100000\n",
            ]
        ) { _, new in new }
    }

    /// A Docker container with its own cgroup namespace: it sees its cgroup as "0::/" — the
    /// root of what it can see, not the host's root — with 4 CPUs of 8.
    static func docker(avg10: Double = 0.5, avg60: Double = 0.1) -> [String: String] {
        busyHost.merging(
            [
                "/proc/self/status": "Cpus_allowed_list:\t0-7\n",
                "/proc/self/cgroup": "0::/\n",
                "/proc/self/mountinfo": "612 600 0:27 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw,nsdelegate\n",
                "/sys/fs/cgroup/cpu.max": "400000 100000\n",
                "/sys/fs/cgroup/cpu.pressure": pressure(avg10, avg60),
            ]
        ) { _, new in new }
    }

    @Test func anIdleMachineGivesEveryCoreThisProcessMayUse() {
        let budget = CPUReader(files: Self.hybrid()).budget()
        #expect(budget.affinity == "0-1" && budget.allowedCores == 2)
        #expect(budget.quota == nil)
        #expect(budget.pressure == CPUPressure(someAvg10: 0, someAvg60: 0, file: "/sys/fs/cgroup/unified/cpu.pressure"))
        #expect(budget.cores == 2 && budget.threads == 2)
    }

    @Test func aOneCPUQuotaOfTheProcessCgroupV1GivesOneThread() {
        let budget = CPUReader(files: Self.hybrid(cpuCgroup: "/voxtest", quota: "100000")).budget()
        #expect(
            budget.quota == CPUQuota(quota: 100000, period: 100000, file: "/sys/fs/cgroup/cpu/voxtest/cpu.cfs_quota_us")
        )
        #expect(budget.quotaSearched == ["/sys/fs/cgroup/unified", "/sys/fs/cgroup/cpu/voxtest", "/sys/fs/cgroup/cpu"])
        #expect(budget.cores == 1 && budget.threads == 1)
    }

    @Test func theTightestQuotaOnTheWayUpToTheRootIsTakenRoundedUp() {
        let budget = CPUReader(files: Self.kubernetes()).budget()
        #expect(budget.allowedCores == 16)
        #expect(budget.quota?.file == "/sys/fs/cgroup/kubepods.slice/kubepods-pod1.slice/cpu.max")
        // ceil(1.5): two threads, not sixteen.
        #expect(budget.cores == 2 && budget.threads == 2)
        // A tighter one further down wins.
        var files = Self.kubernetes()
        files["/sys/fs/cgroup/kubepods.slice/kubepods-pod1.slice/cri-abc.scope/cpu.max"] = "50000 100000\n"
        #expect(CPUReader(files: files).budget().cores == 1)
        // The affinity wins where it is smaller than the quota.
        files["/proc/self/status"] = "Cpus_allowed_list:\t3\n"
        files["/sys/fs/cgroup/kubepods.slice/kubepods-pod1.slice/cri-abc.scope/cpu.max"] = "max 100000\n"
        #expect(CPUReader(files: files).budget().cores == 1)
    }

    @Test func hostWideCountsNeverTakeThreadsAway() {
        // The host's /proc/loadavg and /proc/pressure/cpu say 64 runnable and 97% waiting; the
        // container's own cgroup is calm: every core of its quota.
        let kubernetes = CPUReader(files: Self.kubernetes()).budget()
        #expect(
            kubernetes.pressure?.file == "/sys/fs/cgroup/kubepods.slice/kubepods-pod1.slice/cri-abc.scope/cpu.pressure")
        #expect(kubernetes.threads == 2)
        // "0::/" in a cgroup namespace is the container's cgroup, not the host's root: its own
        // cpu.pressure, never /proc/pressure/cpu.
        let docker = CPUReader(files: Self.docker()).budget()
        #expect(docker.pressure?.file == "/sys/fs/cgroup/cpu.pressure")
        #expect(docker.cores == 4 && docker.threads == 4)
        // Nor a parent's: the pod's and the host root's hold other work. Without a cpu.pressure of
        // its own, other load is not judged.
        var files = Self.kubernetes()
        files["/sys/fs/cgroup/kubepods.slice/kubepods-pod1.slice/cri-abc.scope/cpu.pressure"] = nil
        files["/sys/fs/cgroup/kubepods.slice/kubepods-pod1.slice/cpu.pressure"] = Self.pressure(95, 90)
        files["/sys/fs/cgroup/cpu.pressure"] = Self.pressure(99, 99)
        let orphan = CPUReader(files: files).budget()
        #expect(orphan.pressure == nil && orphan.threads == 2)
    }

    @Test func sustainedPressureInTheOwnCgroupLeavesOneCoreAndABurstDoesNot() {
        #expect(CPUReader(files: Self.docker(avg10: 85, avg60: 40)).budget().threads == 3)
        #expect(CPUReader(files: Self.hybrid(avg10: 100, avg60: 60)).budget().threads == 1)
        // 4 s of waiting: avg10 33%, avg60 6% — a burst.
        #expect(CPUReader(files: Self.docker(avg10: 33, avg60: 6)).budget().threads == 4)
        // A long-gone stretch: avg60 still up, avg10 back down.
        #expect(CPUReader(files: Self.docker(avg10: 5, avg60: 50)).budget().threads == 4)
        // The edge: avg10 40% and avg60 10% is sustained.
        #expect(CPUReader(files: Self.docker(avg10: 40, avg60: 10)).budget().threads == 3)
        // One core stays one thread.
        #expect(
            CPUReader(files: Self.hybrid(cpuCgroup: "/voxtest", quota: "100000", avg10: 99, avg60: 99)).budget().threads
                == 1)
    }

    @Test func withoutCgroupV2PressureOtherLoadIsNotJudged() {
        // cgroup v1 only (an older Docker): the quota counts; there is no pressure of its own.
        let files = Self.busyHost.merging(
            [
                "/proc/self/status": "Cpus_allowed_list:\t0-7\n",
                "/proc/self/cgroup": "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n",
                "/proc/self/mountinfo":
                    "700 690 0:33 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup rw,cpu,cpuacct\n",
                "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "200000\n",
                "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
            ]
        ) { _, new in new }
        let budget = CPUReader(files: files).budget()
        #expect(budget.pressure == nil)
        #expect(budget.quota?.file == "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us")
        #expect(budget.cores == 2 && budget.threads == 2)
        // Nothing readable at all: the processors the system reports.
        let blind = CPUReader(files: [:], processors: 4).budget()
        #expect(blind.affinity == nil && blind.quota == nil && blind.pressure == nil)
        #expect(blind.threads == 4)
    }

    @Test func quotaAndPressureTextsAreRead() {
        #expect(CPUQuota(cpuMax: "150000 100000\n", file: "f") == CPUQuota(quota: 150000, period: 100000, file: "f"))
        #expect(CPUQuota(cpuMax: "150000 100000", file: "f")?.cores == 2)
        #expect(CPUQuota(cpuMax: "200000 100000", file: "f")?.cores == 2)
        #expect(CPUQuota(cpuMax: "1000 100000", file: "f")?.cores == 1)
        for none in ["max 100000", "", "100000", "0 100000", "-1 100000", "a b", "100000 0"] {
            #expect(CPUQuota(cpuMax: none, file: "f") == nil, "\(none)")
        }
        #expect(CPUQuota(cfsQuota: "250000\n", cfsPeriod: "100000\n", file: "f")?.cores == 3)
        #expect(CPUQuota(cfsQuota: "-1\n", cfsPeriod: "100000\n", file: "f") == nil)
        #expect(
            CPUPressure(
                text: "some avg10=28.06 avg60=7.54 avg300=2.13 total=8291313\nfull avg10=0.00 avg60=0.00", file: "f")
                == CPUPressure(someAvg10: 28.06, someAvg60: 7.54, file: "f"))
        for broken in [
            "", "full avg10=1 avg60=1", "some avg10=x avg60=1", "some avg60=1 total=3", "some avg10=-1 avg60=0",
        ] {
            #expect(CPUPressure(text: broken, file: "f") == nil, "\(broken)")
        }
    }

    @Test func cgroupMembershipsMountsAndCPUListsAreRead() {
        let member = CPUReader.memberships(
            procSelfCgroup: "12:cpuset:/a\n4:cpu,cpuacct:/b/c\n1:name=systemd:/d\n0::/e/f\n")
        #expect(member.v2 == "/e/f" && member.v1CPU == "/b/c")
        // "cpuacct" or "cpuset" alone is not "cpu".
        #expect(CPUReader.memberships(procSelfCgroup: "3:cpuset:/\n2:cpuacct:/x\n").v1CPU == nil)
        let mounts = CPUReader.mounts(
            mountinfo: """
                25 1 8:1 / / rw - ext4 /dev/sda1 rw
                30 25 0:26 / /sys/fs/cgroup/my\\040cgroups rw,nosuid shared:4 - cgroup2 cgroup2 rw
                33 25 0:30 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct
                34 25 0:31 /docker/abc /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
                """)
        #expect(mounts.v2 == CPUReader.CGroupMount(root: "/", point: "/sys/fs/cgroup/my cgroups"))
        #expect(mounts.v1CPU == CPUReader.CGroupMount(root: "/docker/abc", point: "/sys/fs/cgroup/cpu,cpuacct"))
        let root = CPUReader.CGroupMount(root: "/", point: "/sys/fs/cgroup")
        #expect(
            CPUReader.folders(of: "/a/b", in: root) == ["/sys/fs/cgroup/a/b", "/sys/fs/cgroup/a", "/sys/fs/cgroup"])
        #expect(CPUReader.folders(of: "/", in: root) == ["/sys/fs/cgroup"])
        let inner = CPUReader.CGroupMount(root: "/docker/abc", point: "/cg")
        #expect(CPUReader.folders(of: "/docker/abc/x", in: inner) == ["/cg/x", "/cg"])
        #expect(CPUReader.folders(of: "/docker/abc", in: inner) == ["/cg"])
        #expect(CPUReader.folders(of: "/elsewhere", in: inner) == ["/cg"])
        #expect(CPUReader.count(cpuList: "0-3,8-11\n") == 8)
        #expect(CPUReader.count(cpuList: "1") == 1)
        #expect(CPUReader.count(cpuList: "0,2,4-5") == 4)
        for broken in ["", "3-1", "a", "0-", "-1", "1-2-3"] {
            #expect(CPUReader.count(cpuList: broken) == nil, "\(broken)")
        }
        #expect(CPUReader.allowedList(status: "Name:\tx\nCpus_allowed:\tff\nCpus_allowed_list:\t0-7\n") == "0-7")
    }

    @Test func theDiagnosticSaysWhatWasChosenAndWhy() {
        let quota = CPUReader(files: Self.hybrid(cpuCgroup: "/voxtest", quota: "100000", avg10: 3.1, avg60: 1.2))
            .budget()
        #expect(
            quota.description == """
                threads 1: every core this process may use
                cores: 1 (affinity 0-1: 2; CPU quota 100000/100000 µs = 1.00 CPUs in \
                /sys/fs/cgroup/cpu/voxtest/cpu.cfs_quota_us)
                pressure: some avg10 3.10% avg60 1.20% in /sys/fs/cgroup/unified/cpu.pressure (not sustained; a core \
                is left at avg10 ≥ 40% and avg60 ≥ 10%)
                """)
        let busy = CPUReader(files: Self.hybrid(avg10: 92, avg60: 51)).budget().description
        #expect(
            busy.hasPrefix(
                "threads 1: one core left to other work (sustained CPU pressure)\n"
                    + "cores: 2 (affinity 0-1: 2; no CPU quota in /sys/fs/cgroup/unified, /sys/fs/cgroup/cpu)\n"
            ))
        #expect(busy.contains("(sustained: leaves a core;"))
        #expect(
            CPUReader(files: [:], processors: 3).budget().description == """
                threads 3: every core this process may use
                cores: 3 (3 processors (affinity unread); no cgroup found)
                pressure: none readable for this process's cgroup (no cgroup v2 cpu.pressure): other load not judged
                """)
    }

    @Test func thisProcessesOwnFilesAreFound() throws {
        // Linux: the affinity list is there; the cores never exceed it.
        let budget = CPUReader().budget()
        let affinity = try #require(budget.affinity)
        #expect(CPUReader.count(cpuList: affinity) == budget.allowedCores)
        #expect(budget.threads >= 1 && budget.threads <= budget.cores && budget.cores <= budget.allowedCores)
    }
}
