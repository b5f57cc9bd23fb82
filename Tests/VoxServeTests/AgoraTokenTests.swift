import Foundation
import Testing

@testable import VoxServe

/// AccessToken2 against upstream's vectors (AgoraIO/Tools, python3/test/AccessToken2Test.py:
/// issue time 1111111, salt 1, expire 600), and tokens read back to what they were made from.
@Suite struct AgoraTokenTests {
    static let appID = "970CA35de60c44645bbae8a215061b33"
    static let certificate = "5CFd2fd1755d40ecb72977518be15d3b"
    static let channel = "7d72365eb983485397e3e3f9d460bdda"

    func token(_ services: [AgoraAccessToken.Service]) -> AgoraAccessToken {
        AgoraAccessToken(appID: Self.appID, issuedAt: 1_111_111, expire: 600, salt: 1, services: services)
    }

    func rtcJoin(uid: UInt32) throws -> AgoraAccessToken.Service {
        try RTC.service(channel: Self.channel, uid: uid, role: .subscriber, seconds: 600)
    }

    @Test func anRTCTokenForAUidIsUpstreamsByteForByte() throws {
        let built = try token([rtcJoin(uid: 2_882_341_273)]).build(certificate: Self.certificate)
        #expect(
            built == "007eJxTYBBbsMMnKq7p9Hf/HcIX5kce9b518kCiQgSr5Zrp4X1Tu6UUGCzNDZwdjU1TUs0Mkk1MzExMk5ISUy0SjQx"
                + "NDcwMk4yN3b8IMEQwMTAwMoAwBIL4CgzmKeZGxmamqUmWFsYmFqbGluapxqnGaZYpJmYGSSkpiVwMRhYWRsYmhkbmx"
                + "gDCaiTj")
    }

    @Test func anRTCTokenForUid0IsUpstreamsByteForByte() throws {
        let built = try token([rtcJoin(uid: 0)]).build(certificate: Self.certificate)
        #expect(
            built == "007eJxTYLhzZP08Lxa1Pg57+TcXb/3cZ3wi4V6kbpbOog0G2dOYk20UGCzNDZwdjU1TUs0Mkk1MzExMk5ISUy0SjQx"
                + "NDcwMk4yN3b8IMEQwMTAwMoAwBIL4CgzmKeZGxmamqUmWFsYmFqbGluapxqnGaZYpJmYGSSkpiQwMADacImo=")
    }

    @Test func aChatAppTokenIsUpstreamsByteForByte() throws {
        // A service with no fields: the packing of services and privileges alone.
        let built = try token([AgoraAccessToken.Service(type: 5, privileges: [2: 600], fields: [0, 0])])
            .build(certificate: Self.certificate)
        #expect(
            built == "007eJxTYNDNaz3snC8huEfHWdz6s98qltq4zqy9fl99Uh0FDvy6F6DAYGlu4OxobJqSamaQbGJiZmKalJSYapFoZGh"
                + "qYGaYZGzs/kWAIYKJgYGRAYRZgZgJzGdgAACt8hhr")
    }

    @Test func aPublisherTokenReadsBackToTheAppIdChannelUidAndExpiry() throws {
        let service = try RTC.service(channel: "tutor-anna-1", uid: 42, role: .publisher, seconds: 3600)
        let made = AgoraAccessToken(
            appID: Self.appID, issuedAt: 1_700_000_000, expire: 3600, salt: 7, services: [service])
        let read = try AgoraAccessToken.decode(try made.build(certificate: Self.certificate))
        #expect(read == made)
        #expect(read.appID == Self.appID && read.expire == 3600 && read.issuedAt == 1_700_000_000)
        let rtc = try #require(read.services.first)
        #expect(rtc.type == RTC.serviceType)
        #expect(rtc.privileges == [1: 3600, 2: 3600, 3: 3600, 4: 3600])
        let named = try RTC.channelAndUID(of: rtc)
        #expect(named.channel == "tutor-anna-1" && named.uid == "42")
    }

    @Test func aSubscriberMayOnlyJoin() throws {
        let service = try RTC.service(channel: "c", uid: 0, role: .subscriber, seconds: 60)
        #expect(service.privileges == [RTC.joinChannel: 60])
    }

    @Test func aCertificateThatIsNotAgorasShapeIsAClearError() throws {
        let shape = "the Agora app certificate must be 32 hexadecimal digits, as Agora's console shows it"
        #expect(throws: AgoraTokenError(shape)) {
            try token([rtcJoin(uid: 0)]).build(certificate: "not-a-certificate")
        }
        #expect(throws: AgoraTokenError("not an AccessToken2: expected \"007\" and base64")) {
            try AgoraAccessToken.decode("006abc")
        }
    }
}
