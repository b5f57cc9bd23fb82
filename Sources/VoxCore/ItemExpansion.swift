import Foundation
import Logging

/// The role of turning an input file into the items a run processes, and of knowing what holds for
/// each item before its stages run. A stage that reads input files declares it
/// (`StageDeclarations[.itemExpansion]`, from its configuration: decode declares moderation's
/// seats and report windows); the planner and runner use whatever stage declares it, never a
/// stage kind or the first stage as such.
///
/// The runner asks `expand` once per input file (before the ledger decides anything, so it reads
/// at most the file's header and sidecar), then runs each item it gave; `learnFacts` runs for each
/// item just before the declaring stage is fed it, and a throw fails that item at that stage.
public protocol ItemExpansion: Sendable {
    /// The items `file` becomes, each a part (`InputFile.forPart`) with its own output folder;
    /// nil keeps the file one item.
    func expand(_ file: InputFile) throws -> [InputFile]?

    /// Sets what is known of `item` before its stages run (an upload's report, as item facts).
    func learnFacts(of item: InputFile, into facts: ItemFacts, logger: Logger) throws
}

extension ItemExpansion {
    public func learnFacts(of item: InputFile, into facts: ItemFacts, logger: Logger) throws {}
}

extension StageDeclarationKey where Value == any ItemExpansion {
    /// That the stage turns each input file into the run's items (`ItemExpansion`): a stage that
    /// reads the input files declares it (the first of a plan's stages to declare it is asked).
    public static var itemExpansion: Self { Self("itemExpansion") }
}
