import Foundation
import Testing
import VoxTestSupport

/// The README and docs/: the generated reference is the code's.
@Suite struct DocsTests {
    @Test func theReferencesTablesOfKindsOptionsAndProvidersAreTheCodes() throws {
        let reference = packageRoot.appendingPathComponent("docs/reference.md")
        let text = try String(contentsOf: reference, encoding: .utf8)
        for block in ["kinds", "reference"] {
            #expect(text.contains("<!-- generated: voxpipe stages --markdown \(block) -->\n"))
        }
        let current = try voxpipe(["stages", "--update-readme", reference.path, "--check"])
        #expect(
            current.status == 0, "docs/reference.md's generated tables are stale: run `make readme`\n\(current.stderr)")

        // A copy whose table lost a provider is found out, then put right.
        let stale = text.replacingOccurrences(of: "`whisper` \\| `pocketsphinx` \\| `openai`", with: "`pocketsphinx`")
        #expect(stale != text)
        let copy = temporaryDirectory().appendingPathComponent("reference.md")
        try stale.write(to: copy, atomically: true, encoding: .utf8)
        let check = try voxpipe(["stages", "--update-readme", copy.path, "--check"])
        #expect(
            check.status == 1
                && check.stderr
                    == "voxpipe: error: \(copy.path): the generated tables are out of date; run `make readme`\n"
        )
        #expect(try voxpipe(["stages", "--update-readme", copy.path]).status == 0)
        #expect(try String(contentsOf: copy, encoding: .utf8) == text)
    }

    @Test func aPageWithoutGeneratedBlocksIsAnErrorNotAPass() throws {
        // The README held the blocks once; checking it now must not pass while checking nothing.
        let page = temporaryDirectory().appendingPathComponent("README.md")
        try "# voxpipe\n\nNo tables here.\n".write(to: page, atomically: true, encoding: .utf8)
        let check = try voxpipe(["stages", "--update-readme", page.path, "--check"])
        #expect(check.status == 64)
        #expect(
            check.stderr
                == "voxpipe: error: \(page.path): no generated block "
                + "(<!-- generated: voxpipe stages --markdown kinds|reference -->)\n")
    }
}
