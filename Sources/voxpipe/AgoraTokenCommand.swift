import ArgumentParser
import Foundation
import VoxCore
import VoxServe

extension RTC.Role: ExpressibleByArgument {}

/// The Agora project and token options `serve` and `agora-token` share. The certificate is read
/// from the environment or a file only: an argument would show in `ps` and shell history.
struct AgoraOptions: ParsableArguments {
    @Option(help: "The Agora app id (default: $AGORA_APP_ID, else $VOXPIPE_APP_ID).") var appId: String?
    @Option(
        help: ArgumentHelp(
            "File whose first line is the Agora app certificate (default: $AGORA_APP_CERTIFICATE).",
            valueName: "path"))
    var appCertificateFile: String?
    @Option(help: "What a token lets its holder do in the channel.") var tokenRole: RTC.Role = .publisher
    @Option(help: "The uid a token is for (0: any uid).") var tokenUid: UInt32 = 0
    @Option(help: ArgumentHelp("How long a token stays valid (60…86400).", valueName: "seconds"))
    var tokenExpiry: UInt32 = 3600

    func validate() throws {
        guard (60...86400).contains(tokenExpiry) else { throw ValidationError("--token-expiry must be 60…86400") }
    }

    /// The settings, the certificate registered with `secrets`.
    func load(secrets: Secrets) throws -> AgoraSettings {
        var settings = try AgoraSettings.load(
            appID: appId, certificateFile: appCertificateFile.map { URL(fileURLWithPath: $0) },
            environment: ProcessInfo.processInfo.environment, secrets: secrets)
        settings.role = tokenRole
        settings.uid = tokenUid
        settings.seconds = tokenExpiry
        return settings
    }
}

struct AgoraTokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agora-token",
        abstract: "Print an Agora RTC token (AccessToken2, \"007…\") for a channel, as join-with-bot makes them.",
        discussion: """
            The app id comes from --app-id or $AGORA_APP_ID, the certificate from $AGORA_APP_CERTIFICATE or \
            --app-certificate-file (never an argument). The token goes to stdout, nothing else does.
            """
    )

    @Option(help: "The channel the token joins.") var channel: String
    @OptionGroup var agora: AgoraOptions

    func run() throws {
        do {
            let settings = try agora.load(secrets: Secrets())
            guard !settings.appID.isEmpty else {
                throw VoxError(.usage, "no Agora app id: pass --app-id or set $\(AgoraSettings.appIDVariable)")
            }
            guard settings.certificate != nil else {
                throw VoxError(
                    .usage,
                    "no Agora app certificate: set $\(AgoraSettings.certificateVariable) or pass "
                        + "--app-certificate-file")
            }
            do {
                guard let token = try settings.token(channel: channel) else { return }
                print(token)
            } catch let error as AgoraTokenError {
                throw VoxError(.usage, error.message)
            }
        } catch {
            throw fail(error)
        }
    }
}
