import Foundation
import VoxCore

/// The Agora project `join-with-bot` (and `voxpipe agora-token`) makes tokens for: its app id and
/// certificate, and what a token grants for how long. Without a certificate there are no tokens.
public struct AgoraSettings: Sendable {
    /// The project's app id ("" when none was given).
    public var appID = ""
    /// The project's app certificate; nil: tokens are not made (`token: null`).
    public var certificate: String?
    public var role = RTC.Role.publisher
    /// The uid a token is for; 0: any uid.
    public var uid: UInt32 = 0
    /// Seconds a token (and its privileges) stays valid.
    public var seconds: UInt32 = 3600

    public init() {}

    /// The environment variables the app id and certificate are read from.
    public static let appIDVariable = "AGORA_APP_ID"
    public static let certificateVariable = "AGORA_APP_CERTIFICATE"

    /// The app id from `appID` (an option), else `AGORA_APP_ID`, else `VOXPIPE_APP_ID`; the
    /// certificate from `certificateFile` (its first line), else `AGORA_APP_CERTIFICATE`: never
    /// from an argument. A certificate found is registered with `secrets`, so no log line or
    /// answer shows it. Throws `TutorError(.badSettings)` for an unreadable file or a badly shaped id or
    /// certificate.
    public static func load(
        appID: String?, certificateFile: URL?, environment: [String: String], secrets: Secrets
    ) throws -> AgoraSettings {
        var settings = AgoraSettings()
        settings.appID =
            [appID, environment[appIDVariable], environment["VOXPIPE_APP_ID"]].compactMap { $0 }.first { !$0.isEmpty }
            ?? ""
        var certificate = environment[certificateVariable]
        var source = "$\(certificateVariable)"
        if let certificateFile {
            guard let text = try? String(contentsOf: certificateFile, encoding: .utf8) else {
                throw TutorError(.badSettings, "cannot read the Agora app certificate file \(certificateFile.path)")
            }
            certificate = text.split(whereSeparator: \.isNewline).first.map(String.init)
            source = certificateFile.path
        }
        certificate = certificate?.trimmingCharacters(in: .whitespaces)
        if let found = certificate, !found.isEmpty {
            secrets.register(found)
            do {
                try AgoraAccessToken.checkIdentifier(found, name: "the Agora app certificate in \(source)")
            } catch let error as AgoraTokenError {
                throw TutorError(.badSettings, error.message)
            }
            settings.certificate = found
        }
        if !settings.appID.isEmpty, settings.certificate != nil {
            do {
                try AgoraAccessToken.checkIdentifier(settings.appID, name: "the Agora app id")
            } catch let error as AgoraTokenError {
                throw TutorError(.badSettings, error.message)
            }
        }
        return settings
    }

    /// What serve says once at start about tokens it cannot make.
    var warnings: [String] {
        if appID.isEmpty {
            return [
                "no Agora app id (--app-id or $\(Self.appIDVariable)): join-with-bot answers with an empty appId "
                    + "and token null"
            ]
        }
        if certificate == nil {
            return [
                "no Agora app certificate ($\(Self.certificateVariable) or --app-certificate-file): join-with-bot "
                    + "answers with token null, which projects with a certificate enabled refuse"
            ]
        }
        return []
    }

    /// A token for `channel`, issued `now` with a random salt; nil without an app id or certificate.
    public func token(channel: String, now: Date = Date()) throws -> String? {
        guard let certificate, !appID.isEmpty else { return nil }
        var random = SystemRandomNumberGenerator()
        let token = AgoraAccessToken(
            appID: appID, issuedAt: UInt32(clamping: Int64(now.timeIntervalSince1970)), expire: seconds,
            salt: UInt32.random(in: 1...99_999_999, using: &random),
            services: [try RTC.service(channel: channel, uid: uid, role: role, seconds: seconds)])
        return try token.build(certificate: certificate)
    }
}
