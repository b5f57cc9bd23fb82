import ArgumentParser
import Foundation
import VoxCore

/// The tables of stage kinds, options and providers in docs/reference.md, made from the registry,
/// so the documentation cannot drift from the code: `voxpipe stages --markdown` prints them,
/// `make readme` puts them between the page's `<!-- generated: … -->` markers, and a test checks
/// they match.
enum StagesMarkdown {
    /// What a generated block holds: `kinds` (the overview table) or `reference` (every kind's
    /// options and every provider's).
    enum Block: String, CaseIterable, ExpressibleByArgument {
        case kinds, reference
    }

    static func render(_ block: Block, registry: StageRegistry) -> String {
        switch block {
        case .kinds: kindsTable(registry.kinds)
        case .reference: registry.kinds.map(reference).joined(separator: "\n\n")
        }
    }

    /// One row per kind: types, and each option with its default.
    static func kindsTable(_ kinds: [StageKind]) -> String {
        var lines = ["| kind | takes → gives | options (default) |", "|---|---|---|"]
        for kind in kinds {
            let options = kind.options.map { option -> String in
                if case .provider(let providers) = option.kind {
                    let names = providers.map { "`\($0.name)`" }.joined(separator: " \\| ")
                    return "`\(option.name)`: \(names)" + (option.defaultValue.map { " (\(providerName($0)))" } ?? "")
                }
                return "`\(option.name)`" + (option.defaultValue.map { " (`\(plain($0))`)" } ?? "")
            }
            let optionsText = options.isEmpty ? "—" : options.joined(separator: ", ")
            lines.append(
                "| `\(kind.kind)` | \(escape(kind.inputDescription)) → \(kind.output) | \(escape(optionsText)) |")
        }
        return lines.joined(separator: "\n")
    }

    /// A kind's heading (level 3, under the page's "Options and providers"), summary and option
    /// table, then one table per provider.
    static func reference(_ kind: StageKind) -> String {
        var parts = ["### `\(kind.kind)`: \(kind.inputDescription) → \(kind.output)\n\n\(escape(kind.summary))"]
        if !kind.options.isEmpty { parts.append(optionTable(kind.options)) }
        for option in kind.options {
            guard case .provider(let providers) = option.kind else { continue }
            for provider in providers {
                var part = "`\(kind.kind)` provider `\(provider.name)`: \(escape(provider.summary))"
                if !provider.options.isEmpty { part += "\n\n" + optionTable(provider.options) }
                parts.append(part)
            }
        }
        return parts.joined(separator: "\n\n")
    }

    static func optionTable(_ options: [OptionSpec]) -> String {
        var lines = ["| option | accepts | default | meaning |", "|---|---|---|---|"]
        for option in options {
            let defaultText = option.defaultValue.map { "`\(plain($0))`" } ?? "—"
            lines.append(
                "| `\(option.name)` | \(escape(option.typeDescription)) | \(escape(defaultText)) | "
                    + "\(escape(option.help)) |"
            )
        }
        return lines.joined(separator: "\n")
    }

    static func json(_ value: JSONValue) -> String { String(decoding: value.canonicalData(), as: UTF8.self) }

    /// A default as a reader types it: a string bare, anything else as JSON.
    static func plain(_ value: JSONValue) -> String {
        if case .string(let string) = value { return string }
        return json(value)
    }

    static func providerName(_ value: JSONValue) -> String {
        if case .object(let object) = value, case .string(let name)? = object["name"] { return "`\(name)`" }
        return json(value)
    }

    /// Table cells: `|` escaped, line breaks as spaces.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\\\\|", with: "\\|")
            .replacingOccurrences(of: "\n", with: " ")
    }

    /// A Markdown page (`file` names it in errors) with every generated block replaced by what
    /// the registry gives now. A page without a block is an error: checking it would pass while
    /// checking nothing (the blocks moved from the README to docs/reference.md once).
    static func update(_ page: String, file: String, registry: StageRegistry) throws -> String {
        var out = ""
        var rest = Substring(page)
        var blocks = 0
        while let begin = rest.range(of: "<!-- generated: voxpipe stages --markdown ") {
            guard let close = rest[begin.upperBound...].range(of: " -->\n"),
                let block = Block(rawValue: String(rest[begin.upperBound..<close.lowerBound])),
                let end = rest[close.upperBound...].range(of: "<!-- end generated -->")
            else {
                let near = rest[begin.lowerBound...].prefix(60)
                throw VoxError(.usage, "\(file): a generated block's markers are malformed near \"\(near)\"")
            }
            out += rest[..<close.upperBound] + render(block, registry: registry) + "\n"
            rest = rest[end.lowerBound...]
            blocks += 1
        }
        guard blocks > 0 else {
            throw VoxError(
                .usage, "\(file): no generated block (<!-- generated: voxpipe stages --markdown kinds|reference -->)")
        }
        return out + rest
    }
}
