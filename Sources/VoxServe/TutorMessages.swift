import Foundation
import VoxCore

// The tutor routes' bodies as types: each request decodes (and checks) its fields in one place,
// throwing the `ServeError` the client gets; each answer encodes to the JSON the app reads.

/// `POST process-audio`: `{audio, mimeType}`; the clip as base64.
struct AudioTurnRequest: Decodable, Sendable {
    var audio: Data
    var mimeType: String?

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyKey.self)
        guard let encoded = try? c.decodeIfPresent(String.self, forKey: "audio"), !encoded.isEmpty else {
            throw ServeError.badRequest("bad_request", "audio: expected the clip as a base64 string")
        }
        guard let audio = TutorServer.decodeBase64(encoded) else {
            throw ServeError.badRequest("bad_base64", "audio: not valid base64")
        }
        self.audio = audio
        mimeType = try? c.decodeIfPresent(String.self, forKey: "mimeType")
    }
}

/// `POST process-text`: `{text}`, the learner's words.
struct TextTurnRequest: Decodable, Sendable {
    var text: String
    /// The channel named in the body: heard in single-learner mode only.
    var channel: String?

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyKey.self)
        let text = ((try? c.decodeIfPresent(String.self, forKey: "text")) ?? nil)?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard let text, !text.isEmpty else {
            throw ServeError.badRequest("bad_request", "text: expected the learner's words as a non-empty string")
        }
        self.text = text
        channel = (try? c.decodeIfPresent(String.self, forKey: "channel")) ?? nil
    }
}

/// `POST join-with-bot`: `{userId, userName}`; `userId` a string or a whole number.
struct JoinRequest: Decodable, Sendable {
    var userID: String
    var userName: String?

    /// The longest user id: the channel `tutor-<userId>-<13-digit epoch ms>` must fit Agora's
    /// 64-byte channel names.
    static let maxUserID = 64 - "tutor-".count - "-".count - 13

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyKey.self)
        let user: String
        if let s = try? c.decode(String.self, forKey: "userId"), !s.isEmpty {
            user = s
        } else if let n = try? c.decode(Double.self, forKey: "userId"), n == n.rounded(), abs(n) < 1e15 {
            user = String(Int64(n))
        } else {
            throw ServeError.badRequest("bad_request", "userId: expected a non-empty string")
        }
        guard user.utf8.count <= Self.maxUserID else {
            throw ServeError.badRequest(
                "bad_request",
                "userId: at most \(Self.maxUserID) characters (the Agora channel name it is part of takes 64)")
        }
        guard user.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw ServeError.badRequest("bad_request", "userId: letters, digits, '-', '_' and '.' only")
        }
        userID = user
        userName = (try? c.decodeIfPresent(String.self, forKey: "userName")) ?? nil
    }
}

/// A body the route reads nothing from (`stop`, `status`).
struct EmptyRequest: Decodable, Sendable {
    init() {}
    init(from decoder: any Decoder) throws {}
}

/// An answer to a turn: `{success, transcription, reply, audio}` (no `transcription` for text).
struct TurnAnswer: Encodable, Sendable {
    var success = true
    var transcription: String?
    var reply: String
    var audio: String
}

struct JoinAnswer: Encodable, Sendable {
    var success = true
    var appId: String
    var channel: String
    /// null when no certificate signs tokens.
    @EncodesNull var token: String?
    var message: String
}

struct StopAnswer: Encodable, Sendable {
    var success = true
    var message: String
    @EncodesNull var previousChannel: String?
}

struct StatusAnswer: Encodable, Sendable {
    var success = true
    var isRunning: Bool
    @EncodesNull var channel: String?
    @EncodesNull var startedAt: String?
}

/// An optional field written as `null` when it has no value (the app reads the key either way),
/// where a synthesized encoding would leave the key out.
@propertyWrapper
struct EncodesNull<Value: Encodable & Sendable>: Encodable, Sendable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(wrappedValue)
    }
}

/// Every tutor route's failure: `{"success": false, "error": "…"}`.
struct FailureAnswer: Encodable, Sendable {
    var success = false
    var error: String
}

/// A request body and the API key it carried (any field named like `apiKey`, `openai_api_key`,
/// `key` or `authorization`), taken out of it.
struct WithClientKey<Body: Decodable & Sendable>: Decodable, Sendable {
    var body: Body
    /// The key field's name and its value (nil when it was not a string).
    var key: (field: String, value: String?)?

    static func isKeyField(_ name: String) -> Bool {
        let folded = name.lowercased().replacingOccurrences(of: "_", with: "")
        return folded.hasSuffix("apikey") || folded == "key" || folded == "authorization"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyKey.self)
        if let field = c.allKeys.first(where: { Self.isKeyField($0.stringValue) }) {
            key = (field.stringValue, try? c.decode(String.self, forKey: field))
        }
        body = try Body(from: decoder)
    }
}

/// Any key of a JSON object.
struct AnyKey: CodingKey, ExpressibleByStringLiteral {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
    init(stringLiteral value: String) { stringValue = value }
}

extension ServeError {
    /// What decoding a body failed with, as the client is told.
    static func decoding(_ error: any Error) -> ServeError {
        if let failure = error as? ServeError { return failure }
        if case DecodingError.typeMismatch = error { return .badRequest("bad_json", "expected a JSON object") }
        return .badRequest("bad_json", "the body is not valid JSON")
    }
}
