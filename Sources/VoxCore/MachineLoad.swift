import Foundation

/// What the rest of the machine is doing right now, as the kernel counts it: for a decode to
/// leave the cores other processes keep busy, never to decide a result.
public enum MachineLoad {
    /// Threads of other processes runnable now: the running count in `/proc/loadavg` less this
    /// process's own threads in state R (`/proc/self/task/*/stat`, the reading thread among them);
    /// nil where either cannot be read.
    public static func runnableElsewhere() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8),
            let running = running(loadavg: text),
            let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        else { return nil }
        let own = tasks.count { task in
            guard let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8) else {
                return false
            }
            return state(stat: stat) == "R"
        }
        return max(0, running - max(1, own))
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
        guard let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].first { $0 != " " }
    }
}
