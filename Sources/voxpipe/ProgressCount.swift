import Foundation
import VoxCore

/// The counts the progress line shows: items finished of how many, how many run and how many
/// failed. A file that becomes several items (one per seat, one per report window) counts as each
/// of them, and runs until the last of them has finished.
struct ProgressCount {
    /// Items in the run: input files, then each split file as the items it became.
    private(set) var total: Int
    private(set) var finished = 0
    private(set) var failed = 0
    /// Files running now (a split file is one until its last item finishes).
    private(set) var running = 0
    /// Items still to finish, per file that became several.
    private var partsLeft: [URL: Int] = [:]

    init(total: Int) { self.total = total }

    mutating func count(_ event: RunEvent) {
        switch event {
        case .started, .warning:
            break
        case .itemStarted:
            running += 1
        case .itemSplit(let file, let parts):
            total += parts - 1
            if parts == 0 { running -= 1 } else { partsLeft[file.url] = parts }
        case .itemFinished(let result):
            finished += 1
            if result.status == .failed { failed += 1 }
            // Whether the item was a file's track, report window or both, the file stops running
            // with its last item, not with each.
            if let left = partsLeft[result.item.url] {
                partsLeft[result.item.url] = left > 1 ? left - 1 : nil
                if left == 1 { running -= 1 }
            } else {
                running -= 1
            }
        }
    }
}
