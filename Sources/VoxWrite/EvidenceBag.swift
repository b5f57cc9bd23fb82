import Foundation
import VoxCore

/// Where things are in an evidence bag, defined once: `write-evidence` writes by it, and
/// `voxpipe verify` (with `--rebuild`) reads by it.
///
///     <id>/data/evidence.wav     the window, 48 kHz mono PCM 16
///     <id>/data/original.<ext>   the untouched upload
///     <id>/data/transcript.json  when fed from a transcribe stage too
///     <id>/data/report.json      report fields, track, window, hashes, provenance, spec
public struct EvidenceBag: Sendable {
    public let root: URL

    public init(root: URL) { self.root = root }

    /// The bag a `write-evidence` stage writes for an item: `<output>/<item>/<stage id>/`.
    public init(outputDirectory: URL, itemFolder: String, stageID: String) {
        root = outputDirectory.appendingPathComponent(itemFolder).appendingPathComponent(stageID)
    }

    public var data: URL { root.appendingPathComponent("data") }
    public var evidence: URL { data.appendingPathComponent("evidence.wav") }
    public var report: URL { data.appendingPathComponent("report.json") }
    public var transcript: URL { data.appendingPathComponent("transcript.json") }
    /// The path of `evidence` inside the bag, as report.json names it.
    public static let evidencePath = "data/evidence.wav"

    /// Where the upload's copy goes: `data/original.<ext>` (`data/original` without one).
    public func original(extension ext: String) -> URL {
        data.appendingPathComponent(ext.isEmpty ? "original" : "original.\(ext.lowercased())")
    }

    /// The upload's copy in an existing bag, if it holds one.
    public func existingOriginal() -> URL? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: data.path)) ?? []
        return names.sorted().first { $0 == "original" || $0.hasPrefix("original.") }.map {
            data.appendingPathComponent($0)
        }
    }
}
