import Foundation
import Testing
import VoxCore
import VoxFormats
import VoxTestSupport

@testable import VoxServe

/// A failure code of each category a stage can end an item with: what the stand-in stages throw.
enum InjectedFailure: String, FailureCode, CaseIterable {
    case badInput = "bad-input"
    case unavailable, upstream
    case `internal`

    var category: VoxFailure {
        switch self {
        case .badInput: .badInput
        case .unavailable: .unavailable
        case .upstream: .upstream
        case .internal: .internal
        }
    }

    static let option = OptionSpec(
        "failAs", .choice(allCases.map(\.rawValue)), help: "fail every item with an error of this category")

    /// Throws an error of the category `failAs` names, if any.
    static func fail(_ failAs: String?, kind: String) throws {
        guard let code = failAs.flatMap(Self.init(rawValue:)) else { return }
        throw ModuleError(code, "\(kind) was told to fail (\(code.rawValue))")
    }
}

/// What a stand-in stage does with each value, for one of the four stage kinds serve answers with.
protocol StandInRole: Sendable {
    associatedtype Input: StageInput
    associatedtype Output: Payload
    static var kind: String { get }
    /// What the stage gives for `input`; nil for nothing.
    static func pass(_ input: Input) -> Output?
}

/// A stage of `Role`'s kind that loads no model: it gives what the role passes on, or fails every
/// item with the category its `failAs` option names.
struct StandIn<Role: StandInRole>: Stage {
    typealias Input = Role.Input
    typealias Output = Role.Output
    typealias Configuration = String?
    static var kind: String { Role.kind }
    static var summary: String { "stand-in \(Role.kind)" }
    static var options: [OptionSpec] { [InjectedFailure.option] }
    static func configure(_ options: StageOptions) throws -> String? { options.string("failAs") }
    let failAs: String?
    init(id: String, configuration: String?, context: StageContext) { failAs = configuration }
    func run(_ input: Inbox<Input>, _ output: Outbox<Output>, _ item: ItemContext) async throws {
        for try await value in input {
            try InjectedFailure.fail(failAs, kind: Self.kind)
            if let given = Role.pass(value) { try await output.send(given) }
        }
    }
}

/// One silent chunk per file.
enum DecodeRole: StandInRole {
    static let kind = "decode"
    static func pass(_ input: InputFile) -> AudioChunk? {
        AudioChunk(
            format: AudioFormat(sampleRate: 16000, channels: 1), samples: [Float](repeating: 0, count: 160), start: 0,
            end: 0.01, index: 0, cut: .whole)
    }
}

/// "hallo" for every chunk.
enum TranscribeRole: StandInRole {
    static let kind = "transcribe"
    static func pass(_ chunk: AudioChunk) -> Transcript? {
        Transcript(chunk: chunk, text: "hallo", words: [], language: "de", provider: "stand-in", model: nil)
    }
}

/// The transcript's text, echoed.
enum ReplyRole: StandInRole {
    static let kind = "reply"
    static func pass(_ transcript: Transcript) -> Reply? { Reply(transcript: transcript, text: transcript.text) }
}

/// No speech.
enum SynthesizeRole: StandInRole {
    static let kind = "synthesize"
    static func pass(_ reply: Reply) -> Speech? { nil }
}

/// Serve's status for a failed turn comes from the failure's category, whichever stage threw it:
/// stand-in stages fail with each category in turn.
@Suite struct ServeCategoryTests {
    let api = "/api/agora"
    let registry = StageRegistry([
        StageKind(StandIn<DecodeRole>.self), StageKind(StandIn<TranscribeRole>.self),
        StageKind(StandIn<ReplyRole>.self), StageKind(StandIn<SynthesizeRole>.self),
    ])

    /// A server whose stage `failing` (decode, asr, tutor or voice) fails with `category`.
    func server(failing: String, as category: InjectedFailure) async throws -> ServerFixture {
        let stages = [("decode", "decode"), ("asr", "transcribe"), ("tutor", "reply"), ("voice", "synthesize")]
            .map { id, kind in
                id == failing
                    ? #"{"id": "\#(id)", "kind": "\#(kind)", "failAs": "\#(category.rawValue)"}"#
                    : #"{"id": "\#(id)", "kind": "\#(kind)"}"#
            }
        let url = temporaryDirectory().appendingPathComponent("stand-ins.json")
        try Data(#"{"stages": [\#(stages.joined(separator: ", "))]}"#.utf8).write(to: url)
        return try await ServerFixture.start(spec: url, registry: registry)
    }

    /// Half a second of a 440 Hz tone, as a WAV in base64: audio the server takes to the decoder.
    let clip = WAVData.pcm16(
        (0..<8000).map { Float(0.3 * sin(2 * Double.pi * 440 * Double($0) / 16000)) },
        format: AudioFormat(sampleRate: 16000, channels: 1)
    ).base64EncodedString()

    @Test(arguments: [
        (InjectedFailure.badInput, 422, "bad_input"), (.unavailable, 503, "unavailable"),
        (.upstream, 502, "upstream"), (.internal, 500, "pipeline"),
    ])
    func aReplyStagesFailureGetsTheStatusOfItsCategory(
        category: InjectedFailure, status: Int, reason: String
    ) async throws {
        let server = try await server(failing: "tutor", as: category)
        let failed = try await server.post("\(api)/process-text", ["text": "hallo"])
        #expect(failed.status == status, "\(failed.json)")
        #expect(failed.json["success"] as? Bool == false)
        #expect(failed.json["error"] as? String == "tutor (reply): reply was told to fail (\(category.rawValue))")
        // Only a provider that cannot serve now tells the client when to try again.
        #expect((failed.headers["retry-after"] != nil) == (status == 503), "\(failed.headers)")
        let metrics = try await server.text("/metrics")
        #expect(metrics.contains("voxpipe_serve_failures_total{reason=\"\(reason)\"} 1"), "\(metrics)")
    }

    @Test func aDecodeStagesInternalFailureIs500AndNotTheClipsFault() async throws {
        let server = try await server(failing: "decode", as: .internal)
        let failed = try await server.post("\(api)/process-audio", ["audio": clip])
        #expect(failed.status == 500, "\(failed.json)")
        #expect(failed.json["error"] as? String == "decode (decode): decode was told to fail (internal)")
        #expect(try await server.text("/metrics").contains("voxpipe_serve_failures_total{reason=\"pipeline\"} 1"))
    }

    @Test func aSynthesizeStagesBadInputIs422AndATurnWithoutFailuresIs200() async throws {
        let server = try await server(failing: "voice", as: .badInput)
        let failed = try await server.post("\(api)/process-audio", ["audio": clip])
        #expect(failed.status == 422, "\(failed.json)")
        #expect(failed.json["error"] as? String == "voice (synthesize): synthesize was told to fail (bad-input)")

        let healthy = try await self.server(failing: "none", as: .badInput)
        let answered = try await healthy.post("\(api)/process-audio", ["audio": clip])
        #expect(answered.status == 200, "\(answered.json)")
        #expect(answered.json["reply"] as? String == "hallo")
    }
}
