import Foundation
import Testing

@testable import VoxCore

/// A key is redacted in its common encodings too (issue 36, item 6), however many keys are
/// registered.
@Suite struct SecretsEncodingTests {
    /// 34 bytes: base64 with `+`, `/` and `==` padding.
    let key = "sk-test-Key~~???>>~0123456789abcde"

    var secrets: Secrets {
        let secrets = Secrets()
        secrets.register(key)
        return secrets
    }

    func urlSafe(_ base64: String) -> String {
        base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    }

    @Test func theKeyInBase64StandardAndURLSafeWithAndWithoutPaddingIsRedacted() {
        let standard = Data(key.utf8).base64EncodedString()
        #expect(standard.contains("+") && standard.contains("/") && standard.hasSuffix("=="))
        let forms = [
            standard, String(standard.dropLast(2)), urlSafe(standard), urlSafe(String(standard.dropLast(2))),
        ]
        for form in forms {
            #expect(secrets.redact("token=\(form)&next") == "token=[redacted]&next", "\(form)")
        }
    }

    @Test(arguments: ["Basic ", "x", "u:", "header: value "])
    func theKeyInsideALongerBase64TextIsRedactedAtEveryByteOffset(_ prefix: String) {
        let plain = Data((prefix + key + " and more").utf8)
        for encoded in [plain.base64EncodedString(), urlSafe(plain.base64EncodedString())] {
            let redacted = secrets.redact("Authorization: \(encoded)")
            #expect(redacted.contains("[redacted]"), "\(encoded)")
            // No run of 8 characters that stands for the key's bytes alone is left.
            let chars = Array(encoded)
            let first = (8 * prefix.utf8.count + 5) / 6
            let end = 8 * (prefix.utf8.count + key.utf8.count) / 6
            let left = (first...(end - 8)).map { String(chars[$0..<$0 + 8]) }.filter { redacted.contains($0) }
            #expect(left.isEmpty, "\(left) of \(encoded) left in \(redacted)")
        }
    }

    @Test func theKeyInHexLowerAndUpperCaseIsRedacted() {
        let lower = key.utf8.map { String(format: "%02x", $0) }.joined()
        #expect(secrets.redact("id \(lower).") == "id [redacted].")
        #expect(secrets.redact("id \(lower.uppercased()).") == "id [redacted].")
    }

    @Test func theKeyAsHTMLCharacterReferencesIsRedacted() {
        let decimal = key.unicodeScalars.map { "&#\($0.value);" }.joined()
        let hex = key.unicodeScalars.map { "&#x\(String($0.value, radix: 16));" }.joined()
        for form in [decimal, hex, hex.uppercased().replacingOccurrences(of: "&#X", with: "&#x")] {
            #expect(secrets.redact("<p>\(form)</p>") == "<p>[redacted]</p>", "\(form)")
        }
    }

    @Test func theKeyWithoutItsPrefixIsRedactedButAShortRestIsNot() {
        #expect(secrets.redact("key: \(key.dropFirst(3))") == "key: [redacted]")
        let short = Secrets()
        short.register("sk-right")
        #expect(short.redact("sk-right is the right key") == "[redacted] is the right key")
    }

    @Test func anEncodedKeyInBytesThatAreNotTextIsOverwrittenInPlace() {
        let base64 = Data(Data(key.utf8).base64EncodedString().utf8)
        let binary = Data([0xFF, 0x00]) + base64 + Data([0x80])
        #expect(
            secrets.redact(binary)
                == Data([0xFF, 0x00]) + Data(repeating: UInt8(ascii: "*"), count: base64.count) + Data([0x80]))
    }

    @Test func withAThousandKeysEachIsStillRedactedInEveryForm() {
        let secrets = Secrets()
        let keys = (0..<1000).map { "sk-\(String(format: "%04d", $0))-\(UUID().uuidString)" }
        for key in keys { secrets.register(key) }
        let text =
            "a \(keys[0]) b \(Data(keys[499].utf8).base64EncodedString()) c "
            + "\(keys[999].utf8.map { String(format: "%02X", $0) }.joined()) d \(keys[500].dropFirst(3)) e"
        #expect(secrets.redact(text) == "a [redacted] b [redacted] c [redacted] d [redacted] e")
        #expect(secrets.redact("nothing secret here") == "nothing secret here")
    }

    @Test func anUnregisteredKeyIsNoLongerRedactedButAFormAnotherKeyHasStays() {
        let secrets = Secrets()
        let other = String(key.dropFirst(3))
        secrets.register(key)
        secrets.register(key)
        secrets.register(other)
        let hex = key.utf8.map { String(format: "%02x", $0) }.joined()
        secrets.unregister(key)
        #expect(secrets.redact("\(key) \(hex)") == "[redacted] [redacted]")
        secrets.unregister(key)
        // The key's own forms go; `other` (the key without its prefix, so inside each of them) stays.
        #expect(secrets.redact("\(hex) \(other)") == "\(hex.prefix(6))[redacted] [redacted]")
        #expect(secrets.redact(key) == "sk-[redacted]")
        secrets.unregister(other)
        #expect(secrets.isEmpty)
        #expect(secrets.redact(key) == key)
    }
}
