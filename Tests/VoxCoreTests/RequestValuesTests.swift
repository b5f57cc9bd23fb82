import Foundation
import Logging
import Testing
import VoxTestSupport

@testable import VoxCore

/// What a served request asks of an item's stages reaches them through the item and, for the
/// providers inside a stage, through `RequestValues.current` while that item's stages run, and
/// only then.
@Suite struct RequestValuesTests {
    @Test func anItemsRequestValuesReachItsStagesAndNoOtherCode() async throws {
        let out = temporaryDirectory()
        let runner = try await Runner.prepare(
            try plan(#"{"stages":[{"id":"src","kind":"tone"},{"id":"r","kind":"request-reader"}]}"#),
            options: RunOptions(outputDirectory: out, jobs: 1), context: StageContext(logger: Logger(label: "test")))
        let file = InputFile(url: URL(fileURLWithPath: "/nonexistent/a.wav"), relativePath: "a.wav", outputName: "a")
        func answer(_ request: RequestValues) async throws -> String? {
            let context = ItemContext(
                item: file, outputs: ItemOutputs(root: out, folderName: "request"), logger: Logger(label: "test"),
                request: request)
            try await runner.respond(to: file, at: "src", context: context, sink: NoSink())
            return context.facts[.noteSeen]
        }
        var asked = RequestValues()
        asked[.note] = "slowly"
        #expect(try await answer(asked) == "slowly/slowly")
        #expect(try await answer(RequestValues()) == "none/none")
        #expect(RequestValues.current[.note] == nil)
    }

    @Test func aValueIsReadByItsOwnKeyAndType() {
        var values = RequestValues()
        values[.note] = "x"
        #expect(values[.note] == "x")
        #expect(values[RequestKey<Int>("note")] == nil)
        #expect(values[RequestKey<String>("other")] == nil)
    }
}

private struct NoSink: OutputSink {
    func collect(_ payload: any Payload) {}
}
