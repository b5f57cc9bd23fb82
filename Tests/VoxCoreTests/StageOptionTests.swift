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

    static let corner = StageOption<Double>("corner", .number(0...1), default: 0, help: "Rounded corners.")
        .only(where: shape, is: .square)
    static let filled = StageOption<Bool>("filled", .boolean, default: false, help: "Filled.")
    static let fill = StageOption<String?>("fill", .string, help: "The fill colour.").only(where: filled, is: true)

    /// Where an option applies is declared with it: set elsewhere, it fails at load naming its path,
    /// what it needs and what the deciding option is (given, or by its default).
    @Test func anOptionThatAppliesOnlyWhereAnotherHasAValueFailsElsewhereAtLoad() throws {
        #expect(Self.corner.spec.appliesWhen == [OptionCondition(option: "shape", values: ["square"])])
        func load(_ values: [String: JSONValue]) throws -> StageOptions {
            try StageOptions.validated(
                values, against: [Self.shape.spec, Self.corner.spec, Self.filled.spec, Self.fill.spec], stageID: "s",
                path: "stages[3]", owner: "stage s", baseDirectory: URL(fileURLWithPath: "/"))
        }
        #expect(try load(["shape": "square", "corner": 0.5])[Self.corner] == 0.5)
        #expect(try load(["filled": true, "fill": "red"])[Self.fill] == "red")
        let byDefault = #expect(throws: VoxError.self) { try load(["corner": 0.5]) }
        #expect(byDefault?.message == "stages[3].corner: applies only where shape is square (here: round)")
        let given = #expect(throws: VoxError.self) { try load(["shape": "round", "corner": 0.5]) }
        #expect(given?.category == .invalidSpec)
        let boolean = #expect(throws: VoxError.self) { try load(["filled": false, "fill": "red"]) }
        #expect(boolean?.message == "stages[3].fill: applies only where filled is true (here: false)")
    }
}
