/// Text made safe to print as (part of) one line: every name voxpipe prints (verify, join, run's
/// progress and error lines) passes through here, so no input name can start a line of its own
/// (`x\nOK    /forged/bag`), move the cursor, or colour the terminal.
///
/// The escapes are Swift's string-literal ones: line feed, carriage return and tab become `\n`,
/// `\r`, `\t`; every other control character (C0, DEL, C1), the Unicode line and paragraph
/// separators and the bidirectional overrides and isolates (which reorder what a terminal shows)
/// become `\u{XX}`. Everything else, backslashes included, prints as it is: the escaping keeps
/// lines whole, it is not an encoding to parse back.
public func printable(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: needsEscape) else { return text }
    var out = ""
    out.reserveCapacity(text.utf8.count + 8)
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if needsEscape(scalar) {
                out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out
}

private func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F: true
    case 0x2028, 0x2029: true
    case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: true
    default: false
    }
}
