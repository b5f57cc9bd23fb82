import Foundation
import Testing
import VoxTestSupport
import VoxTesting

/// `voxpipe serve` speaking a 4-KB text without punctuation (issue 36): the Piper voice had made it
/// one phrase and driven the server to 5 GB, all of it kept after the request. Every voice now
/// speaks bounded pieces, and the server gives back what a request took.
@Suite(.serialized, .needs(.whisperModels), .startsProcess("the voxpipe binary")) struct SpeechMemoryTests {
    /// The server's peak resident memory while it speaks the text. The tutor holds 0.15 GB
    /// (espeak-ng) or 0.25 GB (Piper) with its models loaded; the request took up to 0.45 GB more
    /// with Piper, 0.13 GB with espeak-ng. One unbounded Piper phrase took 5 GB.
    static let peakBound = 1 << 30
    /// What the server may keep after the request above what it held before: it kept 30-40 MiB
    /// (the answer's buffers, freed as it is sent); without the heap given back 0.2 GB, with
    /// onnxruntime's memory arena 0.4 GB.
    static let keptBound = 128 << 20

    /// 4,096 characters of English words, no punctuation and no line break: the longest input the
    /// speech route takes.
    static let unpunctuated: String = {
        let words = """
            the learner told the tutor about a long trip to the mountains with her family and the old car that \
            broke down twice on the way so they walked to a small village where a friendly baker gave them bread \
            and coffee while a mechanic looked at the engine and found nothing wrong at all
            """.split(separator: " ")
        var text = String(words[0])
        var next = 1
        while text.count + 1 + words[next % words.count].count <= 4096 {
            text += " " + words[next % words.count]
            next += 1
        }
        let gap = 4096 - text.count
        return text + String(repeating: " a", count: gap / 2) + String(repeating: "a", count: gap % 2)
    }()

    /// Given the English tutor served (Piper), when it speaks the 4-KB text without punctuation,
    /// then its peak stays under 1 GiB, and after the answer it holds at most 128 MiB more than before.
    @Test(
        .needs(.piperVoices)
    ) func aLongUnpunctuatedTextIsSpokenInBoundedMemoryWithPiper() throws {
        try expectBoundedMemory(spec: packageRoot.appendingPathComponent("Pipelines/lesson-tutor-en.json"))
    }

    /// Given the German tutor served (espeak-ng), the same.
    @Test func aLongUnpunctuatedTextIsSpokenInBoundedMemoryWithEspeak() throws {
        try expectBoundedMemory(spec: packageRoot.appendingPathComponent("Pipelines/lesson-tutor.json"))
    }

    func expectBoundedMemory(spec: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(Self.unpunctuated.count == 4096 && !Self.unpunctuated.contains { ".,;:!?\n".contains($0) })
        let (server, port) = try serve([spec.path])
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        let dir = temporaryDirectory()
        // A short request first: what the server holds once a voice has spoken is the baseline.
        _ = try speak("Hello there. How are you today?", port: port, in: dir)
        let before = try ProcessMemory(server.processIdentifier)
        try ProcessMemory.resetPeak(server.processIdentifier)
        let bytes = try speak(Self.unpunctuated, port: port, in: dir)
        let after = try ProcessMemory(server.processIdentifier)
        print(
            "\(spec.lastPathComponent): before \(before.resident >> 20) MiB, peak \(after.peak >> 20) MiB, "
                + "after \(after.resident >> 20) MiB; \(bytes / 48000) s of speech")
        // Minutes of speech (24 kHz, 16-bit): the whole text was spoken.
        #expect(bytes > 48000 * 120, "\(bytes) bytes", sourceLocation: sourceLocation)
        #expect(after.peak < Self.peakBound, "peak \(after.peak >> 20) MiB", sourceLocation: sourceLocation)
        #expect(
            after.resident - before.resident < Self.keptBound,
            "kept \((after.resident - before.resident) >> 20) MiB", sourceLocation: sourceLocation)
    }

    /// POSTs `text` to the speech route for raw 24-kHz PCM; returns how many bytes came back.
    func speak(_ text: String, port: Int, in dir: URL) throws -> Int {
        let body = dir.appendingPathComponent("speech.json")
        let audio = dir.appendingPathComponent("speech.pcm")
        try JSONSerialization.data(withJSONObject: ["input": text, "response_format": "pcm"]).write(to: body)
        let call = try run(
            "/usr/bin/curl",
            [
                "-s", "-o", audio.path, "-w", "%{http_code}", "-X", "POST", "-H", "Content-Type: application/json",
                "--data-binary", "@\(body.path)", "http://127.0.0.1:\(port)/v1/audio/speech",
            ])
        #expect(call.stdout == "200", "\(call.stderr)")
        return (try FileManager.default.attributesOfItem(atPath: audio.path)[.size] as? Int) ?? 0
    }
}

/// A process's resident memory, from `/proc/<pid>/status` (Linux).
struct ProcessMemory {
    /// Resident now (VmRSS), in bytes.
    var resident: Int
    /// The most it has held resident since it started or since `resetPeak` (VmHWM), in bytes.
    var peak: Int

    init(_ pid: pid_t) throws {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        func bytes(_ key: String) throws -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }),
                let kilobytes = line.dropFirst(key.count + 1).split(whereSeparator: \.isWhitespace).first.flatMap({
                    Int($0)
                })
            else { throw HarnessError("no \(key) in /proc/\(pid)/status") }
            return kilobytes << 10
        }
        resident = try bytes("VmRSS")
        peak = try bytes("VmHWM")
    }

    /// Makes the process's peak what it holds now: 5 written to `/proc/<pid>/clear_refs`.
    static func resetPeak(_ pid: pid_t) throws {
        guard let file = FileHandle(forWritingAtPath: "/proc/\(pid)/clear_refs") else {
            throw HarnessError("cannot open /proc/\(pid)/clear_refs")
        }
        defer { try? file.close() }
        try file.write(contentsOf: Data("5".utf8))
    }
}

/// `voxpipe serve` answering turn after turn holds what it held after the first: the AMX and AVX-512
/// VNNI kernels kept their scratch memory in per-thread pointers that were never freed, and ggml
/// starts a graph's worker threads anew for every graph, so each turn lost 1-5 MB (26 MB every 10
/// turns of the 8-s bench clip on an AMX CPU, 52 MB with the VNNI kernels).
@Suite(.serialized, .needs(.whisperModels), .startsProcess("the voxpipe binary")) struct TurnMemoryTests {
    /// What 16 turns may add to the server's resident memory after 2: they added under 1 MiB with
    /// the kernels' buffers freed at their threads' end, 27 MiB without (AMX).
    static let keptBound = 8 << 20

    /// The q8_0 kernels to serve with: the best this CPU has (nil), and on a CPU with AMX the AVX-512
    /// VNNI ones as well (`VOXPIPE_WHISPER_KERNELS=vnni`; where there is no AMX they are the best).
    static let kernels: [String?] = {
        let info = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let flags = Set(
            info.split(separator: "\n").first { $0.hasPrefix("flags") }?.split(separator: " ").map(String.init) ?? [])
        return flags.isSuperset(of: ["amx_int8", "avx512_vnni"]) ? [nil, "vnni"] : [nil]
    }()

    /// Given the German tutor served with the best q8_0 kernels this CPU has (and with the VNNI
    /// ones), when the learner's 4-s M4A clip is answered 16 times after 2, then the server holds at
    /// most 8 MiB more than after the 2.
    @Test(arguments: kernels) func answeringTurnAfterTurnKeepsNoMemory(kernels: String?) throws {
        let (server, port) = try serve(
            [packageRoot.appendingPathComponent("Pipelines/lesson-tutor.json").path],
            environment: kernels.map { ["VOXPIPE_WHISPER_KERNELS": $0] } ?? [:])
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        let body = temporaryDirectory().appendingPathComponent("body.json")
        try JSONSerialization.data(withJSONObject: [
            "audio": try Data(contentsOf: packageRoot.appendingPathComponent("Samples/speech-de.m4a"))
                .base64EncodedString(),
            "mimeType": "audio/m4a",
        ]).write(to: body)
        func turn() throws -> String? {
            let call = try run(
                "/usr/bin/curl",
                [
                    "-s", "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", "@\(body.path)",
                    "http://127.0.0.1:\(port)/api/agora/process-audio",
                ])
            return (try? JSONSerialization.jsonObject(with: Data(call.stdout.utf8)) as? [String: Any])?[
                "transcription"] as? String
        }
        let first = try turn()
        #expect(first?.hasPrefix("Guten Morgen") == true, "\(String(describing: first))")
        _ = try turn()
        let before = try ProcessMemory(server.processIdentifier)
        for _ in 0..<16 { #expect(try turn() == first) }
        let after = try ProcessMemory(server.processIdentifier)
        print(
            "16 turns (kernels \(kernels ?? "best")): before \(before.resident >> 20) MiB, "
                + "after \(after.resident >> 20) MiB")
        #expect(
            after.resident - before.resident < Self.keptBound,
            "kept \((after.resident - before.resident) >> 20) MiB")
    }
}
