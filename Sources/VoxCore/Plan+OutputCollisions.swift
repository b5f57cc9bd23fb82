import Foundation

// Item folders may nest (`a.wav` → `a/`, `a/b.wav` → `a/b/`): each item writes only its own
// names in its folder. But a nested folder may be where the outer item writes an output
// (`a/w.txt.wav` → `a/w.txt/`, and stage `w` of `a.wav` writes `a/w.txt`). Which of the two then
// lost depended on which finished first under `--jobs 2`: the outer commit replaced the nested
// folder (the nested item done, its files gone), or the nested folder could not be made. Decided
// here from the whole listing and the plan instead, before anything runs, so every run and every
// shard agrees: the nested item fails, the outer one runs.

extension Plan {
    /// The items of `items` whose output folder would be, or lie inside, a file or folder that
    /// another item of `items` writes in its own folder (`<stage id>`, `<stage id>.<ext>`,
    /// `<stage id>-NNNN.<ext>` of a writer stage, the manifest, temporary files) or that the run
    /// keeps for itself (`.voxpipe*` at the top): by output name, why, as an item's failure
    /// says it.
    public func outputCollisions(among items: [InputFile]) -> [String: String] {
        let writers = nodes.filter { $0.kind.output == .artifact }.map(\.id)
        var owners: [String: InputFile] = [:]
        for item in items { owners[item.outputName] = item }
        var collisions: [String: String] = [:]
        for item in items {
            let parts = item.outputName.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            if let top = parts.first, top.hasPrefix(".voxpipe") {
                collisions[item.outputName] =
                    "output folder \(item.outputName)/ would be among the run's own files (.voxpipe*); rename the input"
                continue
            }
            for depth in 1..<max(1, parts.count) {
                let outer = parts[..<depth].joined(separator: "/")
                guard let owner = owners[outer], let written = Self.written(parts[depth], writers: writers) else {
                    continue
                }
                collisions[item.outputName] =
                    "output folder \(item.outputName)/ would be an output of item \(owner.displayName) (\(written) in "
                    + "\(outer)/); rename one of the two inputs"
                break
            }
        }
        return collisions
    }

    /// Who writes a file or folder called `name` in an item's folder, or nil when nothing does.
    static func written(_ name: String, writers: [String]) -> String? {
        if name == Ledger.manifestName { return "voxpipe writes \(Ledger.manifestName)" }
        if name.hasPrefix(".") && (name.contains(ItemOutputs.temporaryMarker) || name.hasPrefix(AtomicFile.prefix)) {
            return "voxpipe writes its temporary files"
        }
        for id in writers where name == id || name.hasPrefix(id + ".") || isNumbered(name, id: id) {
            return "stage '\(id)' writes \(id), \(id).<ext> and \(id)-NNNN.<ext>"
        }
        return nil
    }

    /// Whether `name` is `<id>-<digits>` or `<id>-<digits>.<anything>`.
    static func isNumbered(_ name: String, id: String) -> Bool {
        guard name.hasPrefix(id + "-") else { return false }
        let rest = name.dropFirst(id.count + 1)
        let digits = rest.prefix { $0.isASCII && $0.isNumber }
        return !digits.isEmpty && (digits.count == rest.count || rest.dropFirst(digits.count).first == ".")
    }
}
