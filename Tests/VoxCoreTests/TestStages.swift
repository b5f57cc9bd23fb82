import Foundation
import VoxCore
import VoxModeration
import VoxTestSupport

/// Test stages: a source that makes `count` blocks of a constant, a gain, a chunker of sorts, a
/// sink that writes a text file per item, and one that fails on demand.
struct ToneSource: Stage {
    typealias Input = InputFile
    typealias Output = AudioBlock
    struct Configuration: Sendable {
        var blocks: Int
        var failOn: String?
        var refuse: String? = nil
        var refuseAs: String? = nil
        var rate: Int? = nil
    }
    enum Failure: FailureCode {
        case engineMissing, noRoom, badData
        var category: VoxFailure {
            switch self {
            case .engineMissing: .unavailable
            case .noRoom: .cannotCreate
            case .badData: .badInput
            }
        }
    }
    static let kind = "tone"
    static let summary = "test source"
    static let options = [
        OptionSpec("blocks", .integer(0...1000), default: 3, help: "blocks"),
        OptionSpec("failOn", .string, help: "fail items whose name contains this"),
        OptionSpec("rate", .integer(1...192_000), help: "a fixed output rate for the planner (the blocks stay 8 kHz)"),
        OptionSpec("refuse", .string, help: "prepare throws this module's own error with this message"),
        OptionSpec("refuseAs", .choice(["engine", "disk", "data"]), help: "the refusal's failure code"),
    ]
    static func configure(_ options: StageOptions) throws -> Configuration {
        Configuration(
            blocks: options.int("blocks") ?? 3, failOn: options.string("failOn"), refuse: options.string("refuse"),
            refuseAs: options.string("refuseAs"), rate: options.int("rate"))
    }
    static func outputFormat(_ configuration: Configuration, input: StreamFormat) throws -> StreamFormat {
        StreamFormat(sampleRate: configuration.rate, channels: input.channels)
    }
    let configuration: Configuration
    init(id: String, configuration: Configuration, context: StageContext) { self.configuration = configuration }
    func prepare() async throws {
        guard let refuse = configuration.refuse else { return }
        let code: Failure =
            switch configuration.refuseAs {
            case "disk": .noRoom
            case "data": .badData
            default: .engineMissing
            }
        throw ModuleError<Failure>(code, refuse)
    }
    func run(_ input: Inbox<InputFile>, _ output: Outbox<AudioBlock>, _ item: ItemContext) async throws {
        for try await file in input {
            for i in 0..<configuration.blocks {
                if let f = configuration.failOn, file.relativePath.contains(f), i == 1 {
                    throw VoxError(.badInput, "bad block in \(file.relativePath)")
                }
                try await output.send(
                    AudioBlock(
                        format: AudioFormat(sampleRate: 8000, channels: 1),
                        samples: [Float](repeating: 0.5, count: 100), frameOffset: Int64(i * 100)))
            }
        }
    }
}

struct Gain: Stage {
    typealias Input = AudioBlock
    typealias Output = AudioBlock
    struct Configuration: Sendable {
        var factor: Float
        var stopAfter: Int?
    }
    static let kind = "gain"
    static let summary = "test gain"
    static let options = [
        OptionSpec("factor", .number(0...10), default: 2, help: "factor"),
        OptionSpec(
            "stopAfter", .integer(0...100), help: "a broken gain: returns after this many blocks, with a warning"),
    ]
    static func configure(_ options: StageOptions) throws -> Configuration {
        Configuration(factor: Float(options.double("factor") ?? 2), stopAfter: options.int("stopAfter"))
    }
    static func outputFormat(_ configuration: Configuration, input: StreamFormat) throws -> StreamFormat {
        if input.sampleRate == nil { return input }
        throw PlanError("gain takes only source-rate audio")
    }
    /// As a resampler: it needs what the stages after it need.
    static func demand(_ configuration: Configuration) -> StreamDemand { .passThrough }
    let configuration: Configuration
    init(id: String, configuration: Configuration, context: StageContext) { self.configuration = configuration }
    func run(_ input: Inbox<AudioBlock>, _ output: Outbox<AudioBlock>, _ item: ItemContext) async throws {
        var count = 0
        for try await var block in input {
            if let stop = configuration.stopAfter, count == stop {
                item.logger.warning(
                    "stopping early", metadata: ["stage.id": "gain", "blocks": .stringConvertible(count)])
                return
            }
            block.samples = block.samples.map { $0 * configuration.factor }
            try await output.send(block)
            count += 1
        }
    }
}

struct Chunker: Stage {
    typealias Input = AudioBlock
    typealias Output = AudioChunk
    typealias Configuration = Int
    static let kind = "chunker"
    static let summary = "test chunker"
    static let options: [OptionSpec] = []
    static func configure(_ options: StageOptions) throws -> Int { 0 }
    init(id: String, configuration: Int, context: StageContext) {}
    func run(_ input: Inbox<AudioBlock>, _ output: Outbox<AudioChunk>, _ item: ItemContext) async throws {
        var index = 0
        for try await block in input {
            try await output.send(
                AudioChunk(
                    format: block.format, samples: block.samples, start: block.startSeconds,
                    end: block.startSeconds + 0.0125, index: index, cut: .window))
            index += 1
        }
    }
}

/// Writes the sum of all samples it sees to `<id>.txt`.
struct SumWriter: Stage {
    enum Input: StageInput {
        case block(AudioBlock), chunk(AudioChunk)
        static let accepted: [PayloadType] = [.audioBlock, .audioChunk]
        init?(payload: any Payload) {
            if let b = payload.carried(AudioBlock.self) {
                self = .block(b)
            } else if let c = payload.carried(AudioChunk.self) {
                self = .chunk(c)
            } else {
                return nil
            }
        }
    }
    typealias Output = Artifact
    typealias Configuration = Int
    static let kind = "sum-writer"
    static let summary = "test writer"
    static let options: [OptionSpec] = []
    static func configure(_ options: StageOptions) throws -> Int { 0 }
    let id: String
    init(id: String, configuration: Int, context: StageContext) { self.id = id }
    func run(_ input: Inbox<Input>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        var sum: Float = 0
        for try await value in input {
            switch value {
            case .block(let b): sum += b.samples.reduce(0, +)
            case .chunk(let c): sum += c.samples.reduce(0, +)
            }
        }
        let temp = try item.outputs.reserve(stageID: id, ext: "txt")
        try Data("\(sum)".utf8).write(to: temp)
        try await output.send(try await item.outputs.artifact(for: temp))
    }
}

/// A writer whose output device is gone: it throws on the first value it takes (an ENOSPC-like
/// `cannotCreate`), with `after` values taken first, and never reads the rest.
struct DeadWriter: Stage {
    typealias Input = SumWriter.Input
    typealias Output = Artifact
    typealias Configuration = (after: Int, full: Bool)
    static let kind = "dead-writer"
    static let summary = "test writer that fails"
    static let options = [
        OptionSpec("after", .integer(0...1000), default: 0, help: "values taken before failing"),
        OptionSpec("full", .boolean, default: false, help: "fail as a full disk (outputFull), not one file"),
    ]
    static func configure(_ options: StageOptions) throws -> Configuration {
        (options.int("after") ?? 0, options.bool("full") ?? false)
    }
    let id: String
    let configuration: Configuration
    init(id: String, configuration: Configuration, context: StageContext) {
        self.id = id
        self.configuration = configuration
    }
    func run(_ input: Inbox<Input>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        var taken = 0
        for try await _ in input {
            if taken == configuration.after {
                _ = try item.outputs.reserve(stageID: id, ext: "txt")
                throw VoxError(
                    configuration.full ? .outputFull : .cannotCreate,
                    "writing \(id).txt failed: No space left on device")
            }
            taken += 1
        }
    }
}

struct TranscriptTaker: Stage {
    typealias Input = Transcript
    typealias Output = Artifact
    typealias Configuration = Int
    static let kind = "takes-transcript"
    static let summary = "test"
    static let options: [OptionSpec] = []
    static func configure(_ options: StageOptions) throws -> Int { 0 }
    init(id: String, configuration: Int, context: StageContext) {}
    func run(_ input: Inbox<Transcript>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {}
}

/// A source that learns the item's report (as decode does from a sidecar) and gives one block.
struct ReportingSource: Stage {
    typealias Input = InputFile
    typealias Output = AudioBlock
    typealias Configuration = Int
    static let kind = "reporting-source"
    static let summary = "test source with a report"
    static let options: [OptionSpec] = []
    static let factsGiven = ItemFact.list(.moderationReport)
    static func configure(_ options: StageOptions) throws -> Int { 0 }
    init(id: String, configuration: Int, context: StageContext) {}
    func run(_ input: Inbox<InputFile>, _ output: Outbox<AudioBlock>, _ item: ItemContext) async throws {
        for try await file in input {
            item.facts[.moderationReport] = ModerationReport(fields: ["reportId": .string("R-\(file.outputName)")])
            try await output.send(
                AudioBlock(format: AudioFormat(sampleRate: 8000, channels: 1), samples: [0.5], frameOffset: 0))
        }
    }
}

/// A writer that records the item's report, as write-evidence does: one file per item.
struct ReportWriter: Stage {
    typealias Input = AudioBlock
    typealias Output = Artifact
    typealias Configuration = Int
    static let kind = "report-writer"
    static let summary = "test writer of the report"
    static let options: [OptionSpec] = []
    static let factsUsed = ItemFact.list(.moderationReport)
    static func configure(_ options: StageOptions) throws -> Int { 0 }
    let id: String
    init(id: String, configuration: Int, context: StageContext) { self.id = id }
    func run(_ input: Inbox<AudioBlock>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        for try await _ in input {}
        let url = try item.outputs.reserve(name: "\(id).txt")
        try Data((item.facts[.moderationReport]?.reportID ?? "none").utf8).write(to: url)
    }
}

extension RequestKey where Value == String {
    static var note: Self { Self("note") }
}

extension ItemFactKey where Value == String {
    /// What `RequestReader` saw: the item's request value `.note`, then `RequestValues.current`'s.
    static var noteSeen: Self { Self("noteSeen") }
}

/// A writer that records the request value `.note` as its item and its task see it.
struct RequestReader: Stage {
    typealias Input = AudioBlock
    typealias Output = Artifact
    typealias Configuration = Int
    static let kind = "request-reader"
    static let summary = "test writer"
    static let options: [OptionSpec] = []
    static func configure(_ options: StageOptions) throws -> Int { 0 }
    init(id: String, configuration: Int, context: StageContext) {}
    func run(_ input: Inbox<AudioBlock>, _ output: Outbox<Artifact>, _ item: ItemContext) async throws {
        for try await _ in input {}
        item.facts[.noteSeen] = "\(item.request[.note] ?? "none")/\(RequestValues.current[.note] ?? "none")"
    }
}

let testRegistry = StageRegistry([
    StageKind(ToneSource.self), StageKind(Gain.self), StageKind(Chunker.self), StageKind(SumWriter.self),
    StageKind(TranscriptTaker.self),
    StageKind(ReportingSource.self), StageKind(ReportWriter.self), StageKind(DeadWriter.self),
    StageKind(RequestReader.self),
])

func plan(_ json: String) throws -> Plan {
    try Planner.plan(data: Data(json.utf8), baseDirectory: URL(fileURLWithPath: "/tmp"), registry: testRegistry)
}
