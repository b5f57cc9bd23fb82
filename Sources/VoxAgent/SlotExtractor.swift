import Foundation

/// Finds the values a field-service record needs in one utterance, in English and German: names
/// after a cue ("my name is", "ich heiße", "for"), phone numbers, e-mail addresses (also spoken:
/// "anna at example dot com"), street addresses, dates (weekdays, "tomorrow", "March 3", "3. März",
/// ISO) resolved against the session's date, times ("9 am", "14:30", "um 14 Uhr"), money amounts
/// and line items ("two valves at 45 dollars each"). Pure and deterministic: the same words give
/// the same values.
public struct SlotExtractor: Sendable {
    /// The session's date, which weekdays and "tomorrow" count from; nil leaves them unresolved.
    public var referenceDate: DateComponents?
    /// The currency of amounts that name none.
    public var currency: String

    public init(referenceDate: DateComponents?, currency: String) {
        self.referenceDate = referenceDate
        self.currency = currency
    }

    /// What one utterance says.
    public struct Found: Sendable, Equatable {
        public var name: String?
        public var phone: String?
        public var email: String?
        public var address: String?
        public var date: String?
        public var time: String?
        public var lineItems: [LineItem] = []
        public var currency: String?
        public var urgent = false
        public var done = false
    }

    public struct LineItem: Sendable, Equatable {
        public var description: String
        public var quantity: Double
        public var unitPrice: Double
    }

    public func extract(_ raw: String) -> Found {
        let text = Self.normalize(raw)
        var found = Found()
        found.name = Self.name(in: text)
        found.email = Self.email(in: text)
        found.phone = Self.phone(in: text)
        found.address = Self.address(in: text)
        found.date = date(in: text)
        found.time = Self.time(in: text)
        (found.lineItems, found.currency) = lineItems(in: text)
        let lower = text.lowercased()
        found.urgent = Self.contains(lower, Self.urgentWords)
        found.done = Self.contains(lower, Self.doneWords)
        return found
    }

    // MARK: normalising

    static let numberWords: [String: Int] = [
        "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
        "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "null": 0, "eins": 1, "ein": 1, "eine": 1,
        "einen": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9,
        "zehn": 10, "elf": 11, "zwölf": 12,
    ]

    /// Number words as digits (quantities and hours), "a.m." as "am", spoken e-mail addresses
    /// ("anna at example dot com") as written, runs of spaces as one.
    static func normalize(_ raw: String) -> String {
        var text = raw.replacingOccurrences(of: "\n", with: " ")
        text = text.replacing(/(?i)\b([ap])\.\s?m\.?/) { "\($0.1.lowercased())m" }
        text = text.replacing(/(?i)\b([a-z0-9._-]+)\s+at\s+([a-z0-9-]+)\s+dot\s+(com|org|net|de|io|co)\b/) {
            "\($0.1)@\($0.2).\($0.3)"
        }
        text = text.replacing(
            /(?i)\b([a-z0-9._-]+)\s+(?:at|@)\s+(?:www\.)?((?:[a-z0-9-]+\.)+(?:com|org|net|de|io|co))\b/
        ) {
            "\($0.1)@\($0.2)"
        }
        let words = numberWords.keys.sorted { $0.count > $1.count }.map(NSRegularExpression.escapedPattern(for:))
        if let regex = try? Regex("(?i)\\b(\(words.joined(separator: "|")))\\b(?=\\s+[\\p{L}\\d])") {
            text = text.replacing(regex) { match in
                let word = String(text[match.range]).lowercased()
                return numberWords[word].map(String.init) ?? word
            }
        }
        return text.replacing(/\s+/, with: " ")
    }

    /// Whether `lower` has any of `phrases` as whole words (plain token matching: no regular
    /// expression is compiled per turn).
    static func contains(_ lower: String, _ phrases: [String]) -> Bool {
        let padded = " " + words(lower).joined(separator: " ") + " "
        return phrases.contains { padded.contains(" " + words($0).joined(separator: " ") + " ") }
    }

    static func words(_ text: String) -> [Substring] {
        text.split { !($0.isLetter || $0.isNumber || $0 == "'" || $0 == "’") }
    }

    static let urgentWords = ["urgent", "urgently", "emergency", "asap", "right away", "dringend", "sofort", "notfall"]
    static let doneWords = [
        "that's all", "that is all", "that's it", "that is it", "nothing else", "das ist alles", "das war's",
        "das wars", "sonst nichts", "fertig",
    ]

    // MARK: people and places

    /// A capitalised name of one to three words after a cue.
    static func name(in text: String) -> String? {
        let cue =
            #"(?:my name is|name is|this is|i am|i'm|contact named|contact|customer named|customer|client named|"#
            + #"client|estimate for|quote for|for|ich heiße|ich bin|mein name ist|name ist|hier ist|hier spricht|"#
            + #"kunde|kundin|kontakt|für)"#
        let word = #"[A-ZÄÖÜ][a-zäöüß]+(?:-[A-ZÄÖÜ][a-zäöüß]+)?"#
        guard
            let regex = try? Regex(
                "(?i:\\b\(cue))[:,]?\\s+(?:(?i:mr|mrs|ms|dr|herr|frau)\\.?\\s+)?(\(word)(?:\\s+\(word)){0,2})")
        else { return nil }
        let stop: Set<String> = [
            "The", "A", "An", "I", "It", "Is", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
            "Sunday", "Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag", "Street",
            "Der", "Die", "Das", "Ein", "Eine", "Ich", "Sie", "Hello", "Hi", "Guten", "Tag", "Morgen", "Please",
            "Bitte", "Can", "Could", "Thank", "Thanks", "Danke", "Ja", "Yes", "No", "Nein", "Ok", "Okay",
        ]
        for match in text.matches(of: regex) {
            guard let captured = match.output[1].substring else { continue }
            let words = captured.split(separator: " ").map(String.init).prefix { !stop.contains($0) }
            if words.count >= 2
                || (words.count == 1 && match.output[0].substring?.lowercased().contains("name") == true)
            {
                return words.joined(separator: " ")
            }
        }
        return nil
    }

    static func email(in text: String) -> String? {
        text.firstMatch(of: /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+/).map { String($0.0).lowercased() }
    }

    /// Seven to fifteen digits in groups (spaces, dashes, dots, parentheses), not part of a date,
    /// an amount or a time.
    static func phone(in text: String) -> String? {
        for match in text.matches(of: /(\+?\(?\d[\d\s().\/-]{5,22}\d)/) {
            let digits = match.output.0.filter(\.isNumber)
            guard (7...15).contains(digits.count) else { continue }
            let plus = match.output.0.hasPrefix("+") ? "+" : ""
            let groups = match.output.0.split(whereSeparator: { !$0.isNumber }).map(String.init)
            return plus + groups.joined(separator: "-")
        }
        return nil
    }

    static let streetTypes =
        "Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr|Way|Boulevard|Blvd|Court|Ct|Place|Pl|Terrace|Close"

    /// "42 Oak Street" or "Hauptstraße 5" (also "in der Hauptstraße 5").
    static func address(in text: String) -> String? {
        let english = try? Regex(
            "(?i)\\b(\\d{1,5})\\s+((?:[a-z]+\\s+){1,3}?(?:\(streetTypes)))\\b")
        if let english, let m = text.firstMatch(of: english), let number = m.output[1].substring,
            let street = m.output[2].substring
        {
            return
                "\(number) "
                + street.split(separator: " ").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined(separator: " ")
        }
        let german = try? Regex(
            #"\b((?:[A-ZÄÖÜ][a-zäöüß]+[ -])?[A-ZÄÖÜ][a-zäöüß]*(?:straße|strasse|weg|platz|allee|gasse|ring|damm))"#
                + #"\s+(\d{1,4}[a-z]?)\b"#)
        if let german, let m = text.firstMatch(of: german), let street = m.output[1].substring,
            let number = m.output[2].substring
        {
            return "\(street) \(number)"
        }
        return nil
    }

    // MARK: dates and times

    static let months: [String: Int] = [
        "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
        "september": 9, "october": 10, "november": 11, "december": 12, "januar": 1, "februar": 2, "märz": 3,
        "mai": 5, "juni": 6, "juli": 7, "oktober": 10, "dezember": 12,
    ]
    static let weekdays: [String: Int] = [
        "sunday": 1, "monday": 2, "tuesday": 3, "wednesday": 4, "thursday": 5, "friday": 6, "saturday": 7,
        "sonntag": 1, "montag": 2, "dienstag": 3, "mittwoch": 4, "donnerstag": 5, "freitag": 6, "samstag": 7,
    ]

    var calendar: Calendar {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = TimeZone(identifier: "UTC") ?? c.timeZone
        return c
    }

    func iso(_ c: DateComponents) -> String? {
        guard let y = c.year, let m = c.month, let d = c.day else { return nil }
        return String(format: "%04d-%02d-%02d", y, m, d)
    }

    func date(in text: String) -> String? {
        let lower = text.lowercased()
        if let m = lower.firstMatch(of: /\b(\d{4})-(\d{2})-(\d{2})\b/) { return String(m.0) }
        let reference = referenceDate.flatMap { calendar.date(from: $0) }
        // "March 3", "March 3rd", "3rd of March", "3. März", "am 3. März"
        let monthNames = Self.months.keys.sorted { $0.count > $1.count }.joined(separator: "|")
        if let regex = try? Regex(
            "\\b(\(monthNames))\\s+(\\d{1,2})(?:st|nd|rd|th)?\\b|\\b(\\d{1,2})(?:st|nd|rd|th|\\.)?"
                + "\\s+(?:of\\s+)?(\(monthNames))\\b"), let m = lower.firstMatch(of: regex)
        {
            let monthName = (m.output[1].substring ?? m.output[4].substring).map(String.init) ?? ""
            let dayText = (m.output[2].substring ?? m.output[3].substring).map(String.init) ?? ""
            guard let month = Self.months[monthName], let day = Int(dayText) else { return nil }
            var year = referenceDate?.year ?? 0
            if let ref = referenceDate, let refMonth = ref.month, let refDay = ref.day,
                (month, day) < (refMonth, refDay)
            {
                year += 1
            }
            guard year > 0 else { return nil }
            let c = DateComponents(year: year, month: month, day: day)
            guard calendar.date(from: c).map({ calendar.component(.day, from: $0) == day }) == true else { return nil }
            return iso(c)
        }
        guard let reference else { return nil }
        if lower.firstMatch(of: /\b(day after tomorrow|übermorgen)\b/) != nil {
            return calendar.date(byAdding: .day, value: 2, to: reference).flatMap {
                iso(calendar.dateComponents([.year, .month, .day], from: $0))
            }
        }
        if lower.firstMatch(of: /\btomorrow\b/) != nil
            || (lower.firstMatch(of: /\bmorgen\b/) != nil && lower.firstMatch(of: /guten morgen/) == nil)
        {
            return calendar.date(byAdding: .day, value: 1, to: reference).flatMap {
                iso(calendar.dateComponents([.year, .month, .day], from: $0))
            }
        }
        if lower.firstMatch(of: /\b(today|heute)\b/) != nil {
            return iso(calendar.dateComponents([.year, .month, .day], from: reference))
        }
        let names = Self.weekdays.keys.joined(separator: "|")
        if let regex = try? Regex("\\b(\(names))\\b"), let m = lower.firstMatch(of: regex),
            let name = m.output[1].substring, let weekday = Self.weekdays[String(name)]
        {
            let today = calendar.component(.weekday, from: reference)
            var ahead = (weekday - today + 7) % 7
            if ahead == 0 { ahead = 7 }
            return calendar.date(byAdding: .day, value: ahead, to: reference).flatMap {
                iso(calendar.dateComponents([.year, .month, .day], from: $0))
            }
        }
        return nil
    }

    /// "9 am", "9:30 pm", "at 14:00", "um 14 Uhr", "14 Uhr 30", "at noon" → "HH:MM".
    static func time(in text: String) -> String? {
        // Amounts first out of the way: "$12.50" is no time.
        let lower = text.lowercased().replacing(
            /[$€£]\s?\d+(?:[.,]\d+)?|\d+(?:[.,]\d+)?\s*(?:dollars?|euros?|pounds?)/, with: " ")
        func hhmm(_ h: Int, _ m: Int) -> String? {
            (0...23).contains(h) && (0...59).contains(m) ? String(format: "%02d:%02d", h, m) : nil
        }
        if let m = lower.firstMatch(of: /\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)\b/), let h = Int(m.1) {
            guard (1...12).contains(h) else { return nil }
            let minutes = m.2.flatMap { Int($0) } ?? 0
            return hhmm(h % 12 + (m.3 == "pm" ? 12 : 0), minutes)
        }
        if let m = lower.firstMatch(of: /\b(\d{1,2})\s*uhr(?:\s*(\d{1,2}))?\b/), let h = Int(m.1) {
            return hhmm(h, m.2.flatMap { Int($0) } ?? 0)
        }
        if let m = lower.firstMatch(of: /\b([01]?\d|2[0-3])[:.]([0-5]\d)\b(?!\s*(?:dollars?|euros?|€|\$))/),
            let h = Int(m.1), let minutes = Int(m.2)
        {
            return hhmm(h, minutes)
        }
        if lower.firstMatch(of: /\b(noon|midday|mittag)\b/) != nil { return "12:00" }
        if let m = lower.firstMatch(of: /\b(?:at|um)\s+(\d{1,2})\s*(?:o'clock|in the morning)\b/), let h = Int(m.1) {
            return hhmm(h, 0)
        }
        if let m = lower.firstMatch(of: /\b(?:at|um)\s+(\d{1,2})\s*in the (?:afternoon|evening)\b/), let h = Int(m.1) {
            return hhmm(h < 12 ? h + 12 : h, 0)
        }
        return nil
    }

    // MARK: money

    static let currencyWords: [(pattern: String, code: String)] = [
        ("dollars?|usd|bucks", "USD"), ("euros?|eur", "EUR"), ("pounds?|gbp", "GBP"),
    ]

    /// An amount in text: "$45", "45 dollars", "45.50 euros", "€45", "45 Euro"; with its currency.
    static func amount(_ text: Substring) -> (Double, String?)? {
        if let m = text.firstMatch(of: /([$€£])\s?(\d+(?:[.,]\d{1,2})?)/),
            let v = Double(m.2.replacing(",", with: "."))
        {
            return (v, ["$": "USD", "€": "EUR", "£": "GBP"][String(m.1)])
        }
        for (pattern, code) in currencyWords {
            if let regex = try? Regex("(?i)(\\d+(?:[.,]\\d{1,2})?)\\s*(?:\(pattern))\\b"),
                let m = text.firstMatch(of: regex), let number = m.output[1].substring,
                let v = Double(number.replacing(",", with: "."))
            {
                return (v, code)
            }
        }
        return nil
    }

    static var lineItem: Regex<AnyRegexOutput>? {
        try? Regex(
            #"(?i)\b(\d+(?:[.,]\d+)?)\s+((?:[\p{L}'-]+\s+){0,4}?[\p{L}'-]+)"#
                + #"\s+(?:at|for|zu|à|a|je|für)\s+(.+)$"#)
    }

    /// Line items: "<quantity> <what> at/for/zu/à <amount> [each/per …/pro …/je …]", one per
    /// clause ("and", commas and sentence ends separate clauses).
    func lineItems(in text: String) -> ([LineItem], String?) {
        var items: [LineItem] = []
        var currency: String?
        let clauses = text.split(separator: /\s*(?:[,;.!?](?:\s|$)|\band\b|\bund\b|\bplus\b)\s*/)
        for clause in clauses {
            guard
                let m = Self.lineItem.flatMap({ clause.firstMatch(of: $0) }),
                let quantityText = m.output[1].substring, let what = m.output[2].substring,
                let priceText = m.output[3].substring,
                let quantity = Double(quantityText.replacing(",", with: ".")), quantity > 0,
                let (price, code) = Self.amount(priceText)
            else { continue }
            currency = currency ?? code
            items.append(LineItem(description: String(what), quantity: quantity, unitPrice: price))
        }
        return (items, currency)
    }
}
