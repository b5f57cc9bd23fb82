import Foundation
import Testing
import VoxTestSupport

/// The README and docs/: the generated reference is the code's, and every relative link and
/// anchor leads somewhere.
@Suite struct DocsTests {
    /// README.md and every page in docs/.
    static var pages: [URL] {
        let docs = packageRoot.appendingPathComponent("docs")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: docs.path)) ?? []
        return [packageRoot.appendingPathComponent("README.md")]
            + names.filter { $0.hasSuffix(".md") }.sorted().map { docs.appendingPathComponent($0) }
    }

    @Test(.startsProcess("the voxpipe binary"))
    func theReferencesTablesOfKindsOptionsAndProvidersAreTheCodes() throws {
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

    @Test(.startsProcess("the voxpipe binary"))
    func aPageWithoutGeneratedBlocksIsAnErrorNotAPass() throws {
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

    @Test func everyRelativeLinkAndAnchorInTheReadmeAndDocsLeadsSomewhere() throws {
        let pages = Self.pages
        #expect(pages.count > 1, "docs/ has no pages")
        let problems = try MarkdownLinks.problems(in: pages, root: packageRoot)
        #expect(problems.isEmpty, "broken links:\n\(problems.joined(separator: "\n"))")
    }

    @Test func theReadmeLinksEveryDocsPage() throws {
        let readme = packageRoot.appendingPathComponent("README.md")
        let targets = Set(
            MarkdownLinks.links(in: try String(contentsOf: readme, encoding: .utf8)).map {
                $0.target.split(separator: "#", omittingEmptySubsequences: false)[0]
            })
        let unlinked = Self.pages.dropFirst().map { "docs/\($0.lastPathComponent)" }.filter { !targets.contains($0) }
        #expect(unlinked.isEmpty, "README.md does not link \(unlinked)")
    }

    @Test func theLinkCheckFindsAMissingFileAMissingAnchorAndAFileOutsideTheRepository() throws {
        let root = temporaryDirectory()
        let docs = root.appendingPathComponent("docs")
        try FileManager.default.createDirectory(at: docs, withIntermediateDirectories: true)
        let page = docs.appendingPathComponent("page.md")
        try """
        # A page

        ## OpenAI's audio API: `/v1/audio/*`

        ## Notes

        ## Notes

        [fine](#openais-audio-api-v1audio), [second notes](#notes-1), [other](other.md#über-uns),
        [folder](../docs/), [web](https://example.com/x.md), [code](`not a link`)
        [gone](missing.md) and [no anchor](other.md#nowhere) and [no such heading](#notes-2)
        `[in code](missing-too.md)` and [out](../../outside.md)

        ```
        [in a fence](missing-three.md)
        ```

          ~~~md
          [in an indented fence](missing-four.md)
          ~~~

        [ref]: other.md#also-nowhere
        """.write(to: page, atomically: true, encoding: .utf8)
        try "# Über uns!\n".write(to: docs.appendingPathComponent("other.md"), atomically: true, encoding: .utf8)

        let problems = try MarkdownLinks.problems(in: [page], root: root)
        #expect(
            problems == [
                "docs/page.md:11: missing.md: no such file",
                "docs/page.md:11: other.md#nowhere: docs/other.md has no heading #nowhere",
                "docs/page.md:11: #notes-2: docs/page.md has no heading #notes-2",
                "docs/page.md:12: ../../outside.md: outside the repository",
                "docs/page.md:22: other.md#also-nowhere: docs/other.md has no heading #also-nowhere",
            ])
    }

    @Test(arguments: [
        ("## Set up, try it, test it", "set-up-try-it-test-it"),
        ("### `transcribe`: AudioChunk → Transcript", "transcribe-audiochunk--transcript"),
        ("## Field-service agents: `agent`, `write-agent-log`", "field-service-agents-agent-write-agent-log"),
        ("# Über uns! #", "über-uns"),
        ("## Cron – every 5 minutes, ½ h", "cron--every-5-minutes--h"),
        ("## snake_case [a link](x.md) stays", "snake_case-a-link-stays"),
    ])
    func headingsBecomeGitHubsAnchors(_ heading: String, _ anchor: String) {
        #expect(MarkdownLinks.anchor(ofHeading: heading) == anchor)
    }
}

/// Relative links in Markdown pages and the anchors GitHub gives headings: enough of CommonMark
/// for this project's pages (inline links, reference definitions, fenced and inline code skipped).
enum MarkdownLinks {
    struct Link: Equatable {
        var line: Int
        var target: String
    }

    /// Each broken relative link of the pages as `page:line: target: why`, paths relative to `root`.
    static func problems(in pages: [URL], root: URL) throws -> [String] {
        let root = root.standardizedFileURL.resolvingSymlinksInPath()
        var anchorsOf: [String: Set<String>] = [:]
        func anchors(_ url: URL) throws -> Set<String> {
            if let known = anchorsOf[url.path] { return known }
            let found = Set(headingAnchors(in: try String(contentsOf: url, encoding: .utf8)))
            anchorsOf[url.path] = found
            return found
        }
        func relative(_ url: URL) -> String { String(url.path.dropFirst(root.path.count + 1)) }

        var problems: [String] = []
        for page in pages {
            let page = page.standardizedFileURL.resolvingSymlinksInPath()
            for link in links(in: try String(contentsOf: page, encoding: .utf8)) {
                let at = "\(relative(page)):\(link.line): \(link.target)"
                if link.target.range(of: "^[A-Za-z][A-Za-z0-9+.-]*:", options: .regularExpression) != nil { continue }
                let parts = link.target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let path = String(parts[0]).removingPercentEncoding ?? String(parts[0])
                let anchor = parts.count > 1 ? String(parts[1]).removingPercentEncoding ?? String(parts[1]) : nil
                let target =
                    path.isEmpty
                    ? page
                    : page.deletingLastPathComponent().appendingPathComponent(path).standardizedFileURL
                        .resolvingSymlinksInPath()
                guard target.path == root.path || target.path.hasPrefix(root.path + "/") else {
                    problems.append("\(at): outside the repository")
                    continue
                }
                guard FileManager.default.fileExists(atPath: target.path) else {
                    problems.append("\(at): no such file")
                    continue
                }
                if let anchor, target.pathExtension == "md", try !anchors(target).contains(anchor) {
                    problems.append("\(at): \(relative(target)) has no heading #\(anchor)")
                }
            }
        }
        return problems
    }

    /// The lines of a page outside fenced code blocks, numbered from 1.
    static func prose(_ text: String) -> [(number: Int, text: String)] {
        var lines: [(number: Int, text: String)] = []
        var fence: String?
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.drop { $0 == " " }
            if let open = fence {
                if trimmed.hasPrefix(open) { fence = nil }
            } else if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                fence = String(trimmed.prefix { $0 == trimmed.first })
            } else {
                lines.append((number: index + 1, text: String(line)))
            }
        }
        return lines
    }

    /// Inline links `[text](target)` (images too) and reference definitions `[name]: target`,
    /// outside code.
    static func links(in text: String) -> [Link] {
        let inline = /\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/
        let definition = /^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/
        var links: [Link] = []
        for (number, line) in prose(text) {
            let line = line.replacing(/(`+).+?\1/, with: "")
            if let match = line.firstMatch(of: definition) {
                links.append(Link(line: number, target: String(match.1)))
            }
            for match in line.matches(of: inline) { links.append(Link(line: number, target: String(match.1))) }
        }
        return links
    }

    /// The anchors GitHub gives a page's headings, a repeated one suffixed `-1`, `-2`, ….
    static func headingAnchors(in text: String) -> [String] {
        var seen: [String: Int] = [:]
        return prose(text).compactMap { line in
            guard line.text.range(of: "^ {0,3}#{1,6}( |$)", options: .regularExpression) != nil else { return nil }
            let anchor = self.anchor(ofHeading: line.text)
            defer { seen[anchor, default: 0] += 1 }
            return seen[anchor].map { "\(anchor)-\($0)" } ?? anchor
        }
    }

    /// GitHub's anchor for an ATX heading line (github-slugger's rule): its text (a link's text
    /// only), lowercased; letters, `Nd`/`Nl` digits, marks, `_` and `-` kept, each space a `-`,
    /// every other character (punctuation, symbols, other dashes and spaces) dropped.
    static func anchor(ofHeading line: String) -> String {
        var text = line.replacing(/^ {0,3}#{1,6}\s*/, with: "").replacing(/\s+#+\s*$/, with: "")
        text = text.replacing(/\[([^\]]*)\]\([^)]*\)/) { String($0.1) }
        var anchor = ""
        for scalar in text.trimmingCharacters(in: .whitespaces).lowercased().unicodeScalars {
            switch (scalar, scalar.properties.generalCategory) {
            case (" ", _): anchor += "-"
            case ("-", _), (_, .decimalNumber), (_, .letterNumber), (_, .nonspacingMark), (_, .spacingMark),
                (_, .enclosingMark), (_, .connectorPunctuation):
                anchor.unicodeScalars.append(scalar)
            case _ where scalar.properties.isAlphabetic: anchor.unicodeScalars.append(scalar)
            default: break
            }
        }
        return anchor
    }
}
