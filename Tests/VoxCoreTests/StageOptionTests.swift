import Foundation
import Testing
import VoxCore

@Suite struct StageOptionTests {
    enum Shape: String, Sendable, CaseIterable, OptionValue { case round, square }
    static let width = StageOption<Double>("width", .number(0...10), default: 2.5, help: "How wide.")
    static let label = StageOption<String?>("label", .string, help: "A name; none by default.")
    static let shape = StageOption<Shape>("shape", default: .round, help: "Which shape.")

    func options(_ values: [String: JSONValue]) throws -> StageOptions {
        try StageOptions.validated(
            values, against: [Self.width.spec, Self.label.spec, Self.shape.spec], stageID: "s", path: "stages[3]",
            owner: "stage s", baseDirectory: URL(fileURLWithPath: "/"))
    }

    /// One declaration gives the spec its default, its kind (an enum's cases) and the value read.
    @Test func anOptionIsDeclaredOnceAndReadTyped() throws {
        #expect(Self.width.spec.defaultValue == .number(2.5) && Self.label.spec.defaultValue == nil)
        guard case .choice(let cases) = Self.shape.spec.kind else {
            Issue.record("an enum's option is a choice of its cases")
            return
        }
        #expect(cases == ["round", "square"] && Self.shape.spec.defaultValue == .string("round"))
        let unset = try options([:])
        #expect(unset[Self.width] == 2.5 && unset[Self.label] == nil && unset[Self.shape] == .round)
        #expect(!unset.isSet(Self.width))
        let set = try options(["width": 4, "label": "a", "shape": "square"])
        #expect(set[Self.width] == 4 && set[Self.label] == "a" && set[Self.shape] == .square)
        #expect(set.isSet(Self.width))
        #expect(set.error(Self.width, "too wide").description.contains("stages[3].width: too wide"))
        // The declaration validates too: a value of the wrong kind or out of range fails at load.
        #expect(throws: VoxError.self) { try options(["width": 11]) }
        #expect(throws: VoxError.self) { try options(["shape": "oval"]) }
    }
}
