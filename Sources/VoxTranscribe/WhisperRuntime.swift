internal import CWhisper
import Foundation
import VoxCore
import VoxProcess

/// The whisper.cpp runtime this process is linked with: its version, the instruction sets its CPU
/// code was built for, and the library files themselves. Floating-point results (and with them
/// the beam search) depend on those instruction sets, so `make setup` builds for a fixed baseline
/// (x86-64-v3: SSE3, SSSE3, SSE4.2, AVX, AVX2, FMA, F16C, BMI2; no AVX-512) and every CPU that
/// has it computes the same numbers. A runtime built with `VOXPIPE_WHISPER_BUILD=native` is
/// labelled `native`: faster where the CPU has more, but not comparable across machines.
enum WhisperRuntime {
    /// The baseline's instruction sets as the runtime names them, with the flag Linux lists in
    /// /proc/cpuinfo for each.
    static let baseline: [(feature: String, cpuFlag: String)] = [
        ("SSE3", "pni"), ("SSSE3", "ssse3"), ("SSE42", "sse4_2"), ("AVX", "avx"), ("AVX2", "avx2"), ("FMA", "fma"),
        ("F16C", "f16c"), ("BMI2", "bmi2"),
    ]
    static let baselineName = "x86-64-v3"

    /// `whisper_print_system_info`'s feature names that are instruction sets, with their /proc/cpuinfo flags.
    static let cpuFlags: [String: String] = [
        "SSE3": "pni", "SSSE3": "ssse3", "SSE42": "sse4_2", "AVX": "avx", "AVX2": "avx2", "FMA": "fma", "F16C": "f16c",
        "BMI2": "bmi2", "AVX_VNNI": "avx_vnni", "AVX512": "avx512f", "AVX512_VBMI": "avx512vbmi",
        "AVX512_VNNI": "avx512_vnni", "AVX512_BF16": "avx512_bf16", "AMX_INT8": "amx_int8", "AMX_BF16": "amx_bf16",
    ]

    /// The runtime's version (`1.8.5`).
    static var version: String { String(cString: whisper_version()) }

    /// The CPU features the runtime was compiled with (`AVX2`, `FMA`, … and `REPACK`), as it reports them.
    static let features: [String] = {
        // "WHISPER : COREML = 0 | OPENVINO = 0 | CPU : SSE3 = 1 | AVX2 = 1 | … | REPACK = 1 | "
        let info = String(cString: whisper_print_system_info())
        guard let cpu = info.range(of: "CPU : ") else { return [] }
        return info[cpu.upperBound...].split(separator: "|").compactMap { part in
            let pair = part.split(separator: "=").map { $0.trimmingCharacters(in: .whitespaces) }
            return pair.count == 2 && pair[1] == "1" ? pair[0] : nil
        }
    }()

    /// How the runtime was built, as `make setup` recorded it beside the library
    /// (`<prefix>/share/voxpipe/whisper-runtime`: "… x86-64-v3 …" or "… native …"); without that
    /// record, `x86-64-v3` when the CPU code reports exactly the baseline's instruction sets. (A
    /// native build can report the same sets and still compute differently: the compiler uses
    /// what the build machine has for the rest of the code.)
    static var flavour: String {
        if let library = libraryFiles.first(where: { $0.lastPathComponent.hasPrefix("libwhisper") }),
            let stamp = try? String(
                contentsOf: library.deletingLastPathComponent().deletingLastPathComponent()
                    .appendingPathComponent("share/voxpipe/whisper-runtime"), encoding: .utf8)
        {
            return stamp.split(separator: " ").contains(Substring(baselineName)) ? baselineName : "native"
        }
        let isa = Set(features.filter { cpuFlags[$0] != nil })
        return isa == Set(baseline.map(\.feature)) ? baselineName : "native"
    }

    /// One line for provenance: `whisper.cpp 1.8.5 x86-64-v3 (SSE3 SSSE3 AVX AVX2 F16C FMA BMI2 REPACK)`.
    static var identity: String {
        let label = flavour == baselineName ? baselineName : "native, not reproducible across CPUs"
        return "whisper.cpp \(version) \(label) (\(features.joined(separator: " ")))"
    }

    /// The shared libraries holding the runtime's code, for the item key: rebuilding the runtime
    /// (another flavour, compiler or version) redoes the items it transcribed.
    static let libraryFiles: [URL] = {
        _ = version
        return LoadedLibraries.files(named: ["libwhisper.so", "libggml"])
    }()

    /// The instruction-set flags this CPU has, from /proc/cpuinfo; nil where that cannot be read.
    static func cpuHas() -> Set<String>? {
        guard let text = LoadedLibraries.procFile("/proc/cpuinfo"),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("flags") }),
            let colon = line.firstIndex(of: ":")
        else { return nil }
        return Set(line[line.index(after: colon)...].split(separator: " ").map(String.init))
    }

    /// Throws `TranscribeError(.runtimeUnavailable)` when this CPU lacks an instruction set the runtime was
    /// built for, instead of letting it die on an illegal instruction. The baseline is checked
    /// from /proc/cpuinfo before any runtime code runs; a native build's extras after.
    static func checkCPU(flags: Set<String>? = cpuHas()) throws {
        guard let flags else { return }
        #if arch(x86_64)
        let missing = baseline.filter { !flags.contains($0.cpuFlag) }.map(\.feature)
        if !missing.isEmpty {
            throw TranscribeError(
                .runtimeUnavailable,
                "this CPU lacks \(missing.joined(separator: ", ")), which the whisper runtime needs (built for "
                    + "\(baselineName)); rebuild it for this machine with VOXPIPE_WHISPER_BUILD=native make setup "
                    + "(results then differ from other machines')"
            )
        }
        let extra = features.compactMap { f in cpuFlags[f].map { (f, $0) } }.filter { !flags.contains($0.1) }
        if !extra.isEmpty {
            throw TranscribeError(
                .runtimeUnavailable,
                "this CPU lacks \(extra.map(\.0).joined(separator: ", ")), which the whisper runtime was built "
                    + "for (a native build from another machine); run make setup here"
            )
        }
        #endif
    }
}
