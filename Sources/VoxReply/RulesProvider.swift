import Foundation
import VoxCore

/// The deterministic offline replier: an ordered list of rules, each a regular expression
/// (case-insensitive unless the file says otherwise) with reply templates, and a fallback. The
/// first rule that matches answers; among its templates, turn N uses template N mod count, so
/// the same lesson always gets the same replies.
///
/// Templates may use `{text}` (the transcript), `{0}` (the whole match), `{1}`…`{9}` (capture
/// groups) and `{turn}` (1-based turn number).
public final class RulesProvider: ReplyProvider, ProviderKind, @unchecked Sendable {
    public static let name = "rules"
    public static let summary = "Ordered regular-expression rules with reply templates and a fallback."
    /// The rules file, loaded and checked when the spec is.
    public static func settings(_ options: StageOptions) throws -> RulesProvider {
        guard let url = options.url("rules") else {
            throw options.error("rules", "the rules provider needs a rules file")
        }
        return try RulesProvider(url: url)
    }
    public static func make(_ settings: RulesProvider, context: StageContext) -> any ReplyProvider { settings }

    struct File: Decodable {
        struct Rule: Decodable {
            var name: String?
            var pattern: String
            var replies: [String]
        }
        var caseSensitive: Bool?
        var rules: [Rule]
        var fallback: [String]?
    }

    struct Rule {
        var name: String
        var regex: Regex<AnyRegexOutput>
        var groups: Int
        var replies: [String]
    }

    let rules: [Rule]
    let fallback: [String]

    public static let options: [OptionSpec] = [
        OptionSpec(
            "rules", .path,
            help: "The rules file (JSON): {\"rules\": [{\"pattern\", \"replies\"}], \"fallback\": [...]}.")
    ]

    /// Loads and checks a rules file; errors name the file, the entry and the reason.
    public init(url: URL) throws {
        func fail(_ message: String) -> VoxError { VoxError(.invalidSpec, "\(url.path): \(message)") }
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw fail("rules file not found or unreadable")
        }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            throw fail("\(Self.path(context.codingPath + [key])): missing")
        } catch let DecodingError.typeMismatch(_, context) {
            throw fail("\(Self.path(context.codingPath)): \(context.debugDescription)")
        } catch {
            throw fail("not valid JSON: \(describe(error))")
        }
        var rules: [Rule] = []
        for (i, rule) in file.rules.enumerated() {
            var regex: Regex<AnyRegexOutput>
            do {
                regex = try Regex(rule.pattern)
            } catch {
                throw fail("rules[\(i)].pattern: invalid regular expression \"\(rule.pattern)\": \(describe(error))")
            }
            if file.caseSensitive != true { regex = regex.ignoresCase() }
            guard !rule.replies.isEmpty else { throw fail("rules[\(i)].replies: needs at least one reply") }
            let groups = rule.pattern.filter { $0 == "(" }.count
            for (j, template) in rule.replies.enumerated() {
                try Self.checkTemplate(template, groups: groups, path: "rules[\(i)].replies[\(j)]", fail: fail)
            }
            rules.append(Rule(name: rule.name ?? "rules[\(i)]", regex: regex, groups: groups, replies: rule.replies))
        }
        for (j, template) in (file.fallback ?? []).enumerated() {
            try Self.checkTemplate(template, groups: 0, path: "fallback[\(j)]", fail: fail)
        }
        self.rules = rules
        fallback = file.fallback ?? []
    }

    public func prepare() async throws {}

    public func reply(to transcript: Transcript, history: [ConversationTurn]) async throws -> String? {
        let text = transcript.text
        let turn = history.count + 1
        for rule in rules {
            if let match = try? rule.regex.firstMatch(in: text) {
                let captures = (0..<match.output.count).map { match.output[$0].substring.map(String.init) ?? "" }
                return Self.fill(
                    rule.replies[(turn - 1) % rule.replies.count], text: text, captures: captures, turn: turn)
            }
        }
        guard !fallback.isEmpty else { return nil }
        return Self.fill(fallback[(turn - 1) % fallback.count], text: text, captures: [text], turn: turn)
    }

    static func fill(_ template: String, text: String, captures: [String], turn: Int) -> String {
        var out = template.replacingOccurrences(of: "{text}", with: text).replacingOccurrences(
            of: "{turn}", with: String(turn))
        for i in (0...9).reversed() {
            out = out.replacingOccurrences(of: "{\(i)}", with: i < captures.count ? captures[i] : "")
        }
        return out
    }

    static func checkTemplate(_ template: String, groups: Int, path: String, fail: (String) -> VoxError) throws {
        let placeholder = try Regex(#"\{([^{}]*)\}"#)
        for match in template.matches(of: placeholder) {
            let name = match.output[1].substring.map(String.init) ?? ""
            if name == "text" || name == "turn" { continue }
            guard let n = Int(name), n >= 0, n <= 9 else {
                throw fail("\(path): unknown placeholder {\(name)} (use {text}, {turn}, {0}…{9})")
            }
            guard n <= groups else {
                throw fail("\(path): {\(n)} but the pattern has \(groups) group\(groups == 1 ? "" : "s")")
            }
        }
    }

    static func path(_ keys: [CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().trimmingCharacters(
            in: CharacterSet(charactersIn: "."))
    }
}
