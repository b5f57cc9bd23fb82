import Foundation
import VoxCore
import VoxProcess

/// A Piper voice as Piper ships it: a folder holding one `<name>.onnx` and its `<name>.onnx.json`
/// (sample rate, espeak-ng voice, phoneme ids, inference scales). That pair is all voxpipe needs:
/// what sherpa-onnx wants besides (a tokens file and metadata inside the model) is derived when
/// the voice is loaded, so adding a folder is the only step to use another Piper voice.
public struct PiperVoice: Sendable, Equatable {
    public var model: URL
    public var config: URL

    /// Where short voice names are looked up: `$VOXPIPE_VOICES` (colon-separated), then the
    /// folder `make setup` installs into.
    public static var searchPath: [URL] {
        installedDataSearchPath(variable: "VOXPIPE_VOICES", folder: "voices")
    }

    /// A short name (`en_US-joe-medium`) → `<search path>/<name>/`; a path (with a `/`, or ending
    /// in `.onnx`) → that folder or model file, against the spec's folder. nil when no folder
    /// there holds a model with its `.onnx.json`.
    public static func resolve(_ voice: String, baseDirectory: URL) -> PiperVoice? {
        if isPath(voice) { return find(URL(fileURLWithPath: voice, relativeTo: baseDirectory).standardizedFileURL) }
        return searchPath.lazy.compactMap { find($0.appendingPathComponent(voice, isDirectory: true)) }.first
    }

    static func isPath(_ voice: String) -> Bool { voice.contains("/") || voice.hasSuffix(".onnx") }

    private static func find(_ url: URL) -> PiperVoice? {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: url.path, isDirectory: &isDirectory) else { return nil }
        var model = url
        if isDirectory.boolValue {
            let models = ((try? fm.contentsOfDirectory(atPath: url.path)) ?? []).filter { $0.hasSuffix(".onnx") }
                .sorted()
            guard models.count == 1 else { return nil }
            model = url.appendingPathComponent(models[0])
        }
        let config = URL(fileURLWithPath: model.path + ".json")
        guard fm.fileExists(atPath: config.path) else { return nil }
        return PiperVoice(model: model, config: config)
    }

    /// What sherpa-onnx and the phonemizer need from the voice's `.onnx.json`.
    struct Config: Sendable {
        var sampleRate: Int
        var espeakVoice: String
        var language: String
        var speakers: Int
        var noiseScale: Double
        var lengthScale: Double
        var noiseW: Double
        /// Phoneme (one Unicode scalar) → model id.
        var phonemeIDs: [Unicode.Scalar: Int]

        init(_ data: Data) throws {
            struct Raw: Decodable {
                struct Audio: Decodable { var sample_rate: Int }
                struct Espeak: Decodable { var voice: String }
                struct Inference: Decodable { var noise_scale: Double?, length_scale: Double?, noise_w: Double? }
                struct Language: Decodable { var name_english: String? }
                var audio: Audio
                var espeak: Espeak
                var inference: Inference?
                var language: Language?
                var num_speakers: Int?
                var phoneme_type: String?
                var phoneme_id_map: [String: [Int]]
            }
            let raw = try JSONDecoder().decode(Raw.self, from: data)
            guard raw.phoneme_type ?? "espeak" == "espeak" else {
                throw SynthesizeError(
                    .voice, "the voice takes \(raw.phoneme_type ?? "") phonemes; voxpipe gives espeak-ng's only")
            }
            sampleRate = raw.audio.sample_rate
            espeakVoice = raw.espeak.voice
            language = raw.language?.name_english ?? raw.espeak.voice
            speakers = max(1, raw.num_speakers ?? 1)
            noiseScale = raw.inference?.noise_scale ?? 0.667
            lengthScale = raw.inference?.length_scale ?? 1
            noiseW = raw.inference?.noise_w ?? 0.8
            var ids: [Unicode.Scalar: Int] = [:]
            for (symbol, id) in raw.phoneme_id_map {
                guard let scalar = symbol.unicodeScalars.first, symbol.unicodeScalars.count == 1, let first = id.first
                else { continue }
                ids[scalar] = first
            }
            phonemeIDs = ids
        }

        /// sherpa-onnx's tokens file: `<symbol> <id>` a line (a space symbol is the line " 3").
        var tokens: String {
            phonemeIDs.filter { $0.key != "\n" }.sorted { ($0.value, $0.key.value) < ($1.value, $1.key.value) }
                .map { "\(Character($0.key)) \($0.value)\n" }.joined()
        }

        /// The ONNX metadata sherpa-onnx reads to run a Piper model (its add_meta_data.py for Piper voices).
        var metadata: [(String, String)] {
            [
                ("model_type", "vits"), ("comment", "piper"), ("language", language), ("voice", espeakVoice),
                ("version", "1"), ("has_espeak", "1"), ("n_speakers", String(speakers)),
                ("sample_rate", String(sampleRate)),
            ]
        }
    }

    /// A Piper model with sherpa-onnx's metadata: the model's bytes followed by `metadata_props`
    /// entries (ModelProto field 14). Protocol Buffers merge a repeated field that appears again
    /// later in a message, so appending is the same as rewriting the model with the `onnx` package,
    /// without parsing 60 MB. Streams the copy; throws when a file cannot be read or written.
    static func writeModel(from source: URL, to target: URL, metadata: [(String, String)]) throws {
        guard FileManager.default.createFile(atPath: target.path, contents: nil),
            let out = FileHandle(forWritingAtPath: target.path), let input = FileHandle(forReadingAtPath: source.path)
        else { throw SynthesizeError(.voice, "cannot copy the voice model \(source.path) to \(target.path)") }
        defer {
            try? out.close()
            try? input.close()
        }
        while let block = try input.read(upToCount: 1 << 22), !block.isEmpty { try out.write(contentsOf: block) }
        var props = Data()
        for (key, value) in metadata {
            props += Protobuf.field(14, Protobuf.field(1, Data(key.utf8)) + Protobuf.field(2, Data(value.utf8)))
        }
        try out.write(contentsOf: props)
    }

    /// Whether an ONNX model already names its `model_type` in its metadata (a voice converted for
    /// sherpa-onnx elsewhere): the top-level fields are walked, the graph skipped by its length.
    static func hasMetadata(_ model: URL) -> Bool {
        guard let input = FileHandle(forReadingAtPath: model.path) else { return false }
        defer { try? input.close() }
        var offset: UInt64 = 0
        while true {
            guard (try? input.seek(toOffset: offset)) != nil, let head = try? input.read(upToCount: 20), !head.isEmpty,
                let (key, keyBytes) = Protobuf.varint(head, at: 0)
            else { return false }
            var next = offset + UInt64(keyBytes)
            switch key & 7 {
            case 0:
                guard let (_, n) = Protobuf.varint(head, at: keyBytes) else { return false }
                next += UInt64(n)
            case 2:
                guard let (length, n) = Protobuf.varint(head, at: keyBytes) else { return false }
                next += UInt64(n)
                if key >> 3 == 14, length < 1 << 16, (try? input.seek(toOffset: next)) != nil,
                    let entry = try? input.read(upToCount: Int(length)), entry.range(of: Data("model_type".utf8)) != nil
                {
                    return true
                }
                next += length
            case 1: next += 8
            case 5: next += 4
            default: return false
            }
            offset = next
        }
    }
}

/// The few Protocol Buffers encodings a Piper model's metadata needs.
enum Protobuf {
    static func varint(_ value: UInt64) -> Data {
        var value = value
        var out = Data()
        while value >= 0x80 {
            out.append(UInt8(value & 0x7f) | 0x80)
            value >>= 7
        }
        out.append(UInt8(value))
        return out
    }

    /// A length-delimited field.
    static func field(_ number: UInt64, _ bytes: Data) -> Data {
        varint(number << 3 | 2) + varint(UInt64(bytes.count)) + bytes
    }

    /// The varint at `offset` of `data` and how many bytes it took; nil when cut short.
    static func varint(_ data: Data, at offset: Int) -> (UInt64, Int)? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        var i = data.startIndex + offset
        while i < data.endIndex, shift < 64 {
            let byte = data[i]
            value |= UInt64(byte & 0x7f) << shift
            i += 1
            if byte < 0x80 { return (value, i - data.startIndex - offset) }
            shift += 7
        }
        return nil
    }
}
