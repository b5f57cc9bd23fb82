import Foundation
import VoxCheck
import VoxCore
import VoxStages

/// What the suite's recogniser hears in spoken outputs, for intelligibility expectations: the
/// files go through a small spec of their own (decode, 16 kHz mono, one chunk, the recogniser of
/// the suite's spec: its first `transcribe` stage's provider, else Whisper base), run like any
/// other, and each file's transcript text is returned by its path.
func hearSpoken(_ files: [URL], suite: Suite) async throws -> [String: String] {
    guard !files.isEmpty else { return [:] }
    let work = FileManager.default.temporaryDirectory.appendingPathComponent("voxpipe-hear-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: work) }
    let inputs = work.appendingPathComponent("spoken")
    try FileManager.default.createDirectory(at: inputs, withIntermediateDirectories: true)
    var names: [String: URL] = [:]
    for (i, file) in files.enumerated() {
        let name = String(format: "%05d", i)
        try FileManager.default.createSymbolicLink(
            at: inputs.appendingPathComponent("\(name).\(file.pathExtension)"), withDestinationURL: file)
        names[name] = file
    }
    let spec: JSONValue = [
        "name": "check-hearing",
        "stages": [
            ["id": "decode", "kind": "decode"],
            ["id": "mono16k", "kind": "resample", "rate": 16000, "channels": 1],
            ["id": "whole", "kind": "chunk", "mode": "whole"],
            ["id": "asr", "kind": "transcribe", "provider": recogniser(suite)],
            ["id": "heard", "kind": "write-transcript", "formats": ["json"]],
        ],
    ]
    let specFile = work.appendingPathComponent("hearing.json")
    try spec.prettyData().write(to: specFile)
    let out = work.appendingPathComponent("heard")
    let batch = try BatchRun(
        plan: try loadPlan(specFile.path), inputs: [inputs.path], outputDirectory: out, version: voxpipeVersion,
        secrets: processSecrets)
    // A spoken file that cannot be heard gets no text: its expectation fails, naming why here.
    let prepared = try await batch.prepare()
    _ = await prepared.run(observer: ProgressReporter(total: batch.items.count))
    var heard: [String: String] = [:]
    for (name, file) in names {
        let transcript = out.appendingPathComponent(name).appendingPathComponent("heard.json")
        if let data = FileManager.default.contents(atPath: transcript.path),
            let text = (try? JSONValue.parse(data))?.objectValue?["text"]?.stringValue
        {
            heard[file.path] = text
        }
    }
    return heard
}

/// The provider block of the suite's spec's first `transcribe` stage; Whisper base without one.
func recogniser(_ suite: Suite) -> JSONValue {
    let stages =
        FileManager.default.contents(atPath: suite.spec.path).flatMap { try? JSONValue.parse($0) }?
        .objectValue?["stages"]?.arrayValue ?? []
    for stage in stages {
        if let o = stage.objectValue, o["kind"]?.stringValue == "transcribe", let provider = o["provider"] {
            return provider
        }
    }
    return ["name": "whisper", "model": "base"]
}
