internal import CCrypto
internal import CZlib
import Foundation

/// Agora's AccessToken2 (the "007" tokens an Agora client joins a channel with), written from
/// the public algorithm (AgoraIO/Tools, `AccessToken2` / `RtcTokenBuilder2`, MIT):
///
///   signing key = HMAC(salt, HMAC(issue time, certificate))          (each number uint32 LE)
///   message     = appId, issue time, expire, salt, services (type, privileges, fields)
///   token       = "007" + base64(zlib(signature(HMAC(signing key, message)) + message))
///
/// Every number is little-endian; strings and byte runs are prefixed with their uint16 length.
public struct AgoraAccessToken: Sendable, Equatable {
    /// The version prefix of AccessToken2.
    public static let version = "007"

    /// One service of the token: its type, privileges (privilege → expire seconds) and the
    /// fields that follow them, already packed (the RTC service's channel and uid).
    public struct Service: Sendable, Equatable {
        public var type: UInt16
        public var privileges: [UInt16: UInt32]
        public var fields: [UInt8]

        public init(type: UInt16, privileges: [UInt16: UInt32] = [:], fields: [UInt8] = []) {
            self.type = type
            self.privileges = privileges
            self.fields = fields
        }
    }

    public var appID: String
    /// Seconds since 1970 when the token was made.
    public var issuedAt: UInt32
    /// Seconds after `issuedAt` the token stays valid.
    public var expire: UInt32
    public var salt: UInt32
    public var services: [Service]

    public init(appID: String, issuedAt: UInt32, expire: UInt32, salt: UInt32, services: [Service]) {
        self.appID = appID
        self.issuedAt = issuedAt
        self.expire = expire
        self.salt = salt
        self.services = services
    }

    /// The token signed with `certificate`. Throws for an app id or certificate that is not 32
    /// hex digits (what Agora issues) and for a token without services.
    public func build(certificate: String) throws -> String {
        try Self.checkIdentifier(appID, name: "the Agora app id")
        try Self.checkIdentifier(certificate, name: "the Agora app certificate")
        guard !services.isEmpty else { throw AgoraTokenError("a token needs at least one service") }
        var message = Packer()
        message.string(Array(appID.utf8))
        message.u32(issuedAt)
        message.u32(expire)
        message.u32(salt)
        message.u16(UInt16(services.count))
        for service in services.sorted(by: { $0.type < $1.type }) {
            message.u16(service.type)
            message.u16(UInt16(service.privileges.count))
            for (privilege, seconds) in service.privileges.sorted(by: { $0.key < $1.key }) {
                message.u16(privilege)
                message.u32(seconds)
            }
            message.bytes += service.fields
        }
        let key = hmac(key: Packer.u32(salt), hmac(key: Packer.u32(issuedAt), Array(certificate.utf8)))
        var signed = Packer()
        signed.string(hmac(key: key, message.bytes))
        signed.bytes += message.bytes
        return Self.version + Data(try deflate(signed.bytes)).base64EncodedString()
    }

    /// The fields of a token (base64 → zlib → fields); the signature is not checked.
    public static func decode(_ token: String) throws -> AgoraAccessToken {
        guard token.hasPrefix(version), let data = Data(base64Encoded: String(token.dropFirst(version.count))) else {
            throw AgoraTokenError("not an AccessToken2: expected \"007\" and base64")
        }
        var reader = Reader(try inflate(Array(data)))
        _ = try reader.string()
        let appID = String(decoding: try reader.string(), as: UTF8.self)
        let issuedAt = try reader.u32(), expire = try reader.u32(), salt = try reader.u32()
        var services: [Service] = []
        for _ in 0..<(try reader.u16()) {
            let type = try reader.u16()
            var privileges: [UInt16: UInt32] = [:]
            for _ in 0..<(try reader.u16()) { privileges[try reader.u16()] = try reader.u32() }
            // Only the RTC service's fields are known here; a token with others ends at them.
            guard type == RTC.serviceType else {
                services.append(Service(type: type, privileges: privileges, fields: reader.rest))
                break
            }
            var fields = Packer()
            fields.string(try reader.string())
            fields.string(try reader.string())
            services.append(Service(type: type, privileges: privileges, fields: fields.bytes))
        }
        return AgoraAccessToken(appID: appID, issuedAt: issuedAt, expire: expire, salt: salt, services: services)
    }

    static func checkIdentifier(_ value: String, name: String) throws {
        guard value.utf8.count == 32, value.allSatisfy(\.isHexDigit) else {
            throw AgoraTokenError("\(name) must be 32 hexadecimal digits, as Agora's console shows it")
        }
    }
}

/// The RTC service of a token: join a channel, and for a publisher publish audio, video and data.
public enum RTC {
    public static let serviceType: UInt16 = 1
    public static let joinChannel: UInt16 = 1
    public static let publishAudioStream: UInt16 = 2
    public static let publishVideoStream: UInt16 = 3
    public static let publishDataStream: UInt16 = 4

    /// What the client may do in the channel.
    public enum Role: String, Sendable, CaseIterable {
        /// Joins and publishes audio, video and data streams.
        case publisher
        /// Joins only.
        case subscriber
    }

    /// The RTC service for `channel` and `uid` (0: any uid) with the privileges `RtcTokenBuilder2`
    /// grants `role`, each for `seconds`.
    public static func service(
        channel: String, uid: UInt32, role: Role, seconds: UInt32
    ) throws
        -> AgoraAccessToken.Service
    {
        guard !channel.isEmpty, channel.utf8.count <= 64 else {
            throw AgoraTokenError("the channel name must be 1 to 64 bytes")
        }
        var privileges = [joinChannel: seconds]
        if role == .publisher {
            for privilege in [publishAudioStream, publishVideoStream, publishDataStream] {
                privileges[privilege] = seconds
            }
        }
        var fields = Packer()
        fields.string(Array(channel.utf8))
        fields.string(uid == 0 ? [] : Array(String(uid).utf8))
        return AgoraAccessToken.Service(type: serviceType, privileges: privileges, fields: fields.bytes)
    }

    /// The channel and uid an RTC service's fields name ("" for uid 0).
    public static func channelAndUID(of service: AgoraAccessToken.Service) throws -> (channel: String, uid: String) {
        var reader = Reader(service.fields)
        let channel = String(decoding: try reader.string(), as: UTF8.self)
        return (channel, String(decoding: try reader.string(), as: UTF8.self))
    }
}

/// Why a token could not be made or read.
public struct AgoraTokenError: Error, CustomStringConvertible, Sendable, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Little-endian packing as AccessToken2 lays it out.
struct Packer {
    var bytes: [UInt8] = []

    static func u32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
    mutating func u16(_ value: UInt16) { bytes += withUnsafeBytes(of: value.littleEndian) { Array($0) } }
    mutating func u32(_ value: UInt32) { bytes += Self.u32(value) }
    /// A uint16 length, then the bytes (at most 65,535: longer is cut, as no field comes near it).
    mutating func string(_ value: [UInt8]) {
        let count = min(value.count, Int(UInt16.max))
        u16(UInt16(count))
        bytes += value.prefix(count)
    }
}

/// Reads what `Packer` wrote; throws at a short buffer.
struct Reader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var rest: [UInt8] { Array(bytes[offset...]) }

    mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count <= bytes.count - offset else { throw AgoraTokenError("the token ends early") }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }
    mutating func u16() throws -> UInt16 { try take(2).reversed().reduce(0) { $0 << 8 | UInt16($1) } }
    mutating func u32() throws -> UInt32 { try take(4).reversed().reduce(0) { $0 << 8 | UInt32($1) } }
    mutating func string() throws -> [UInt8] { Array(try take(Int(try u16()))) }
}

/// HMAC-SHA256 of `message` with `key` (OpenSSL).
func hmac(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    _ = HMAC(EVP_sha256(), key, Int32(key.count), message, message.count, &out, &length)
    return Array(out.prefix(Int(length)))
}

/// zlib at the default level, as Python's `zlib.compress` makes it.
func deflate(_ input: [UInt8]) throws -> [UInt8] {
    var length = compressBound(uLong(input.count))
    var out = [UInt8](repeating: 0, count: Int(length))
    let status = compress2(&out, &length, input, uLong(input.count), Z_DEFAULT_COMPRESSION)
    guard status == Z_OK else { throw AgoraTokenError("zlib could not compress the token (status \(status))") }
    return Array(out.prefix(Int(length)))
}

/// Undoes `deflate`; a token is small, so anything past 64 KiB is refused.
func inflate(_ input: [UInt8]) throws -> [UInt8] {
    var length = uLong(64 * 1024)
    var out = [UInt8](repeating: 0, count: Int(length))
    let status = uncompress(&out, &length, input, uLong(input.count))
    guard status == Z_OK else { throw AgoraTokenError("not an AccessToken2: its body is not zlib data") }
    return Array(out.prefix(Int(length)))
}
