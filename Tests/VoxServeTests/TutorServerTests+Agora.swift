import Foundation
import Testing
import VoxCore
import VoxTesting

@testable import VoxServe

/// join-with-bot answers with an AccessToken2 for the channel it joined when the project's
/// certificate is known, with `token: null` (and a warning at start) when it is not (issue 24).
extension TutorServerTests {
    static let agoraAppID = "970CA35de60c44645bbae8a215061b33"
    static let agoraCertificate = "5CFd2fd1755d40ecb72977518be15d3b"

    @Test func joinAnswersWithATokenForItsChannelUidAndExpiry() async throws {
        let server = try await StandInTutor.start {
            $0.agora.appID = Self.agoraAppID
            $0.agora.certificate = Self.agoraCertificate
            $0.agora.uid = 1234
            $0.agora.seconds = 900
        }
        let before = UInt32(Date().timeIntervalSince1970)
        let joined = try await server.post("\(api)/join-with-bot", ["userId": "u1"])
        #expect(joined.status == 200)
        #expect(joined.json["appId"] as? String == Self.agoraAppID)
        let channel = try #require(joined.json["channel"] as? String)
        let token = try #require(joined.json["token"] as? String)
        let read = try AgoraAccessToken.decode(token)
        #expect(read.appID == Self.agoraAppID && read.expire == 900 && read.issuedAt >= before)
        let rtc = try #require(read.services.first)
        #expect(rtc.privileges == [1: 900, 2: 900, 3: 900, 4: 900])
        let named = try RTC.channelAndUID(of: rtc)
        #expect(named.channel == channel && named.uid == "1234")
    }

    @Test func withoutACertificateTheTokenIsNullAndTheServerSaysSoOnce() async throws {
        let logs = CapturedLogs()
        let server = try await StandInTutor.start(logs: logs) {
            $0.agora.appID = Self.agoraAppID
        }
        for user in ["u2", "u3"] {
            let joined = try await server.post("\(api)/join-with-bot", ["userId": user])
            #expect(joined.status == 200)
            #expect(joined.json["token"] is NSNull, "\(joined.json)")
        }
        let warnings = logs.records.filter { $0.level == .warning }.map(\.message)
        #expect(warnings.count == 1 && warnings[0].hasPrefix("no Agora app certificate"), "\(warnings)")
    }

    @Test func withoutAnAppIdTheServerSaysSoOnce() {
        var settings = AgoraSettings()
        #expect(settings.warnings.count == 1 && settings.warnings[0].hasPrefix("no Agora app id"))
        settings.appID = Self.agoraAppID
        settings.certificate = Self.agoraCertificate
        #expect(settings.warnings.isEmpty)
    }

    @Test func theCertificateComesFromTheEnvironmentOrAFileAndIsRedacted() throws {
        let secrets = Secrets()
        let fromEnvironment = try AgoraSettings.load(
            appID: nil, certificateFile: nil,
            environment: ["AGORA_APP_ID": Self.agoraAppID, "AGORA_APP_CERTIFICATE": Self.agoraCertificate],
            secrets: secrets)
        #expect(fromEnvironment.appID == Self.agoraAppID && fromEnvironment.certificate == Self.agoraCertificate)
        #expect(secrets.redact("cert \(Self.agoraCertificate)") == "cert [redacted]")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("agora-\(UUID().uuidString)")
        try Data("\(Self.agoraCertificate)\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let fromFile = try AgoraSettings.load(
            appID: Self.agoraAppID, certificateFile: file, environment: [:], secrets: Secrets())
        #expect(fromFile.certificate == Self.agoraCertificate)

        #expect(
            throws: TutorError(
                .badSettings,
                "the Agora app certificate in $AGORA_APP_CERTIFICATE must be 32 hexadecimal digits, as Agora's "
                    + "console shows it")
        ) {
            try AgoraSettings.load(
                appID: Self.agoraAppID, certificateFile: nil, environment: ["AGORA_APP_CERTIFICATE": "oops"],
                secrets: Secrets())
        }
    }
}
