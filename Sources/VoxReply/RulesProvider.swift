import Foundation
import VoxCore
import VoxRequest

/// The deterministic offline replier: an ordered list of rules, each a regular expression
/// (case-insensitive unless the file says otherwise) with reply templates, and a fallback. The
/// first rule that matches answers; among its templates, turn N uses template N mod count, so
/// the same lesson always gets the same replies.
///
/// Templates may use `{text}` (the transcript), `{0}` (the whole match), `{1}`…`{9}` (capture
/// groups) and `{turn}` (1-based turn number).
///
/// Memory: a rule may `remember` facts from what it matched (`{"name": "{2}"}`), whichever rule
/// answers; later templates use them by name (`{name}`), and a rule that `requires` facts answers
/// only once they are known. `{ask}` is the first of the file's `ask` questions whose fact is not
/// known yet ("" when all are). Facts are read again from the conversation's earlier turns each
/// time, so they live exactly as long as the conversation does: one lesson in a batch run, one
/// session or channel in `voxpipe serve`.
public final class RulesProvider: ReplyProvider, ProviderKind, @unchecked Sendable {
    public static let name = "rules"
    public static let summary = "Ordered regular-expression rules with reply templates and a fallback."
    /// The rules file, loaded and checked when the spec is.
    public static func settings(_ options: StageOptions) throws -> RulesProvider {
        guard let url = options.url(rules) else {
            throw options.error(rules, "the rules provider needs a rules file")
        }
        return try RulesProvider(url: url)
    }
    public static func make(_ settings: RulesProvider, context: StageContext) -> any ReplyProvider { settings }

    struct File: Decodable {
        struct Rule: Decodable {
            var name: String?
            var pattern: String
            var replies: [String]
            var remember: [String: String]?
            var requires: [String]?
        }
        struct Question: Decodable {
            var fact: String
            var question: String
        }
        var caseSensitive: Bool?
        var rules: [Rule]
        var fallback: [String]?
        var ask: [Question]?
    }

    struct Rule {
        var name: String
        var regex: Regex<AnyRegexOutput>
        var groups: Int
        var replies: [String]
        /// Fact → template filled from this rule's match.
        var remember: [(fact: String, template: String)]
        var requires: [String]
    }

    let rules: [Rule]
    let fallback: [String]
    /// Questions for `{ask}`, in the order asked.
    let questions: [(fact: String, question: String)]

    /// The one option, declared once.
    public static let rules = StageOption<String?>(
        "rules", .path,
        help:
            "The rules file (JSON): {\"rules\": [{\"pattern\", \"replies\", \"remember\", \"requires\"}], "
            + "\"fallback\": [...], \"ask\": [{\"fact\", \"question\"}]}.")

    public static let options: [OptionSpec] = [rules.spec]

    /// Loads and checks a rules file; errors name the file, the entry and the reason.
    public init(url: URL) throws {
        func fail(_ message: String) -> ReplyError { ReplyError(.invalidRules, "\(url.path): \(message)") }
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
        let facts = Set(file.rules.flatMap { ($0.remember ?? [:]).keys })
        for name in facts.sorted() where Self.builtIn(name) || name.wholeMatch(of: /\w+/) == nil {
            throw fail("rules: cannot remember \"\(name)\" (a fact is a word other than text, turn, ask or a digit)")
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
                try Self.checkTemplate(
                    template, groups: groups, facts: facts, path: "rules[\(i)].replies[\(j)]", fail: fail)
            }
            let remember = (rule.remember ?? [:]).sorted { $0.key < $1.key }
            for (fact, template) in remember {
                try Self.checkTemplate(
                    template, groups: groups, facts: [], path: "rules[\(i)].remember.\(fact)", fail: fail)
            }
            for fact in rule.requires ?? [] where !facts.contains(fact) {
                throw fail("rules[\(i)].requires: no rule remembers \"\(fact)\"")
            }
            rules.append(
                Rule(
                    name: rule.name ?? "rules[\(i)]", regex: regex, groups: groups, replies: rule.replies,
                    remember: remember.map { ($0.key, $0.value) }, requires: rule.requires ?? []))
        }
        for (j, template) in (file.fallback ?? []).enumerated() {
            try Self.checkTemplate(template, groups: 0, facts: facts, path: "fallback[\(j)]", fail: fail)
        }
        for (j, question) in (file.ask ?? []).enumerated() where !facts.contains(question.fact) {
            throw fail("ask[\(j)].fact: no rule remembers \"\(question.fact)\"")
        }
        self.rules = rules
        fallback = file.fallback ?? []
        questions = (file.ask ?? []).map { ($0.fact, $0.question) }
    }

    public func prepare() async throws {}

    public func reply(to transcript: Transcript, history: [ConversationTurn]) async throws -> String? {
        let text = transcript.text
        let turn = history.count + 1
        var facts: [String: String] = [:]
        for said in history.map(\.user) + [text] { remember(said, into: &facts) }
        var values = facts.merging(["text": text, "turn": String(turn)]) { $1 }
        values["ask"] = questions.first { facts[$0.fact] == nil }?.question ?? ""
        for rule in rules where rule.requires.allSatisfy({ facts[$0] != nil }) {
            if let captures = Self.captures(rule, in: text) {
                return Self.fill(rule.replies[(turn - 1) % rule.replies.count], captures: captures, values: values)
            }
        }
        guard !fallback.isEmpty else { return nil }
        return Self.fill(fallback[(turn - 1) % fallback.count], captures: [text], values: values)
    }

    /// Adds the facts the rules remember from `text` (a later mention replaces an earlier one).
    func remember(_ text: String, into facts: inout [String: String]) {
        for rule in rules where !rule.remember.isEmpty {
            guard let captures = Self.captures(rule, in: text) else { continue }
            for (fact, template) in rule.remember {
                let value = Self.fill(template, captures: captures, values: [:]).trimmingCharacters(
                    in: .whitespacesAndNewlines.union(CharacterSet(charactersIn: ".,;:!?…\"'«»„“")))
                if !value.isEmpty { facts[fact] = value }
            }
        }
    }

    static func captures(_ rule: Rule, in text: String) -> [String]? {
        guard let match = try? rule.regex.firstMatch(in: text) else { return nil }
        return (0..<match.output.count).map { match.output[$0].substring.map(String.init) ?? "" }
    }

    static func builtIn(_ name: String) -> Bool {
        name == "text" || name == "turn" || name == "ask" || Int(name) != nil
    }

    /// The template with every placeholder replaced in one pass (so a value holding `{…}` stays
    /// as said); an unknown fact is "". Spaces left around an empty `{ask}` are trimmed.
    static func fill(_ template: String, captures: [String], values: [String: String]) -> String {
        let out = template.replacing(#/\{([^{}]*)\}/#) { match -> String in
            let name = String(match.output.1)
            if let n = Int(name) { return n >= 0 && n < captures.count ? captures[n] : "" }
            return values[name] ?? ""
        }
        return out.trimmingCharacters(in: .whitespaces)
    }

    static func checkTemplate(
        _ template: String, groups: Int, facts: Set<String>, path: String, fail: (String) -> ReplyError
    ) throws {
        let placeholder = try Regex(#"\{([^{}]*)\}"#)
        for match in template.matches(of: placeholder) {
            let name = match.output[1].substring.map(String.init) ?? ""
            if name == "text" || name == "turn" || name == "ask" || facts.contains(name) { continue }
            guard let n = Int(name), n >= 0, n <= 9 else {
                let remembered = facts.isEmpty ? "" : " or a remembered fact: \(facts.sorted().joined(separator: ", "))"
                throw fail("\(path): unknown placeholder {\(name)} (use {text}, {turn}, {0}…{9}, {ask}\(remembered))")
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
