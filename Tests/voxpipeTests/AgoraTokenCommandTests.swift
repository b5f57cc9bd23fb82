import Foundation
import Testing
import VoxServe

/// `voxpipe agora-token`: one token on stdout for scripts; the certificate from the environment
/// or a file only, and never echoed.
@Suite(.startsProcess("the voxpipe binary")) struct AgoraTokenCommandTests {
    let appID = "970CA35de60c44645bbae8a215061b33"
    let certificate = "5CFd2fd1755d40ecb72977518be15d3b"

    @Test func printsATokenForTheChannelUidRoleAndExpiryGiven() throws {
        let result = try voxpipe(
            [
                "agora-token", "--channel", "lesson-7", "--token-uid", "99", "--token-role", "subscriber",
                "--token-expiry", "600",
            ],
            environment: ["AGORA_APP_ID": appID, "AGORA_APP_CERTIFICATE": certificate])
        #expect(result.status == 0, "\(result.stderr)")
        let token = result.stdout.trimmingCharacters(in: .newlines)
        let read = try AgoraAccessToken.decode(token)
        #expect(read.appID == appID && read.expire == 600)
        let rtc = try #require(read.services.first)
        #expect(rtc.privileges == [RTC.joinChannel: 600])
        let named = try RTC.channelAndUID(of: rtc)
        #expect(named.channel == "lesson-7" && named.uid == "99")
    }

    @Test func withoutACertificateItSaysWhereToPutOneAndExits64() throws {
        let result = try voxpipe(["agora-token", "--channel", "c"], environment: ["AGORA_APP_ID": appID])
        #expect(result.status == 64)
        #expect(
            result.stderr
                == "voxpipe: error: no Agora app certificate: set $AGORA_APP_CERTIFICATE or pass "
                + "--app-certificate-file\n")
        #expect(result.stdout.isEmpty)
    }

    @Test func aBadCertificateIsNamedByWhereItCameFromNotShown() throws {
        let result = try voxpipe(
            ["agora-token", "--channel", "c"],
            environment: ["AGORA_APP_ID": appID, "AGORA_APP_CERTIFICATE": "secret-but-wrong"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("the Agora app certificate in $AGORA_APP_CERTIFICATE must be 32 hexadecimal"))
        #expect(!result.stderr.contains("secret-but-wrong"))
    }
}
