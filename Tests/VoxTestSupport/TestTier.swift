import Foundation
import Testing

/// The two tiers of tests (docs/testing.md). `make test` runs the full tier: every test.
/// `make test-fast` sets `VOXPIPE_TEST_TIER=fast`, and the tests that load a model, start a child
/// process or wait on the real clock are skipped, each with its reason. A test says which of these
/// it does with one of the traits below, on itself or on its suite; a test without one is in both
/// tiers, so it must do none of them.
///
/// The tier is read from the environment, not given as `swift test --filter`/`--skip`: those match
/// test names only (swift-testing takes no tags on the command line), and a reason next to the
/// test keeps the list from going stale the way a list of names in a Makefile would.
public enum TestTier: String, Sendable {
    case fast, full

    /// This test process's tier: `VOXPIPE_TEST_TIER` (`fast` or `full`); full when unset.
    public static let current: TestTier =
        ProcessInfo.processInfo.environment["VOXPIPE_TEST_TIER"].flatMap(TestTier.init(rawValue:)) ?? .full

    /// The reason a full-tier test gives when the fast tier skips it.
    static func skipped(_ why: String) -> Comment {
        Comment(rawValue: "full tier only (make test): \(why)")
    }
}

extension Trait where Self == ConditionTrait {
    /// Needs `fixture`: enabled when it is installed, skipped with the package that installs it
    /// when it is not. A model (Whisper, Silero, Piper, pocketsphinx) also keeps the test out of
    /// the fast tier.
    public static func needs(_ fixture: InstalledFixture, sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        if fixture.isModel && TestTier.current == .fast {
            return .disabled(TestTier.skipped("loads \(fixture.title)"), sourceLocation: sourceLocation)
        }
        return .enabled(if: fixture.isPresent, Comment(rawValue: fixture.skipReason), sourceLocation: sourceLocation)
    }

    /// Starts `program` as a child process (the voxpipe binary, a fake server in Python, sox,
    /// ffmpeg, …): full tier only.
    public static func startsProcess(_ program: String, sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        .enabled(
            if: TestTier.current == .full, TestTier.skipped("starts a child process (\(program))"),
            sourceLocation: sourceLocation)
    }

    /// Waits on the real clock (a deadline or timeout of the code under test running out):
    /// full tier only.
    public static func waitsOnTheClock(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        .enabled(
            if: TestTier.current == .full, TestTier.skipped("waits on the real clock (\(what))"),
            sourceLocation: sourceLocation)
    }
}
