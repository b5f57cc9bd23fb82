import Foundation

/// What the rest of the machine is doing right now, as the kernel counts it: for a decode to
/// leave the cores other processes keep busy, never to decide a result.
public enum MachineLoad {
    /// Threads of other processes runnable now: the running count in `/proc/loadavg` less this
    /// process's own threads in state R (`/proc/self/task/*/stat`, the reading thread among them)
    /// and its children's (a pipeline's own ffmpeg or espeak-ng is not another's load); nil where
    /// that cannot be read.
    public static func runnableElsewhere() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8),
            let running = running(loadavg: text),
            let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        else { return nil }
        let own = tasks.count { task in state(stat: read("/proc/self/task/\(task)/stat")) == "R" }
        let besides = running - max(1, own)
        // Nothing else runnable (the usual case): no need to look through every process for children.
        guard besides > 0 else { return 0 }
        let me = String(getpid())
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        let children = processes.count { name in
            guard name.first?.isNumber == true, name != me else { return false }
            let stat = read("/proc/\(name)/stat")
            return state(stat: stat) == "R" && parent(stat: stat) == me
        }
        return max(0, besides - children)
    }

    private static func read(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    /// The threads runnable now, from a `/proc/loadavg` line: "0.52 0.58 0.59 3/250 12345" has 3.
    public static func running(loadavg: String) -> Int? {
        let fields = loadavg.split(separator: " ")
        guard fields.count >= 4, let slash = fields[3].firstIndex(of: "/"),
            let running = Int(fields[3][..<slash]), running >= 1
        else { return nil }
        return running
    }

    /// A thread's state letter from its `stat` line ("1234 (name with ) in it) R 1 …"): the first
    /// field after the last ")".
    public static func state(stat: String) -> Character? {
        fields(stat: stat).first?.first
    }

    /// The parent's process id from a `stat` line: the field after the state.
    public static func parent(stat: String) -> String? {
        let after = fields(stat: stat)
        return after.count >= 2 ? String(after[1]) : nil
    }

    private static func fields(stat: String) -> [Substring] {
        guard let close = stat.lastIndex(of: ")") else { return [] }
        return stat[stat.index(after: close)...].split(separator: " ", maxSplits: 3)
    }
}
