/// Text made safe for XML 1.0 (JUnit reports): markup characters escaped, line breaks and tabs
/// kept as character references (so attribute values keep them), and characters XML forbids
/// even escaped (most controls, U+FFFE, U+FFFF) replaced by `?`.
public func xmlEscaped(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        case "\n", "\t", "\r": out += "&#\(scalar.value);"
        default:
            if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF {
                out += "?"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out
}
