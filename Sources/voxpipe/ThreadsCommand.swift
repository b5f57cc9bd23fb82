import ArgumentParser
import VoxCore

/// `voxpipe threads`: how many threads a Whisper decode alone (`"threads": 0`) would take here
/// now, and why (affinity, cgroup CPU quota, the cgroup's CPU pressure). A diagnostic for
/// `make bench` and for checking a container's limits; hidden from the command list.
struct ThreadsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "threads",
        abstract: "Print the threads a decode would take here now, and why (cores, CPU quota, CPU pressure).",
        shouldDisplay: false
    )

    func run() throws {
        let budget = CPUReader().budget()
        print(budget.description)
        print("jobs: \(budget.cores) (voxpipe run's default --jobs, serve's default --concurrency: the cores)")
    }
}
