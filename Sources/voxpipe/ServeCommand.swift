import ArgumentParser
import Foundation
import Logging
import VoxCore
import VoxServe
import VoxWrite

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Answer the tutor bot's REST API with a spec's stages, loaded once.",
        discussion: """
            Every request is one turn through the spec's stages, as `voxpipe run` would take it: chunk stages \
            take the whole clip as one turn and writers are left out (the answer is the response). Routes under \
            --prefix: POST process-audio, process-text, join-with-bot, stop; GET status. GET /healthz and \
            /metrics (Prometheus) at the root. SIGTERM or SIGINT stops taking connections, closes idle and \
            half-sent ones, gives running turns --shutdown-grace seconds, then cancels them; the exit status is \
            128 + the signal (143, 130).
            """
    )

    @Argument(help: "The job spec (JSON) with transcribe, reply and synthesize stages.") var spec: String
    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (0: a free one, printed on stderr).") var port = 8000
    @Option(help: "Path the API's routes live under.") var prefix = "/api/agora"
    @Option(help: "Format of the spoken reply (`audio`).") var audioFormat: AudioFileFormat = .mp3
    @OptionGroup(title: "Agora tokens for join-with-bot") var agora: AgoraOptions
    @Option(help: ArgumentHelp("Largest request body.", valueName: "MiB")) var maxBody = 16
    @Option(help: ArgumentHelp("Seconds a pipeline request may take, waiting included.", valueName: "seconds"))
    var timeout: Double = 60
    @Option(
        help: "Pipeline requests run at once (default: the cores this process may use: affinity and cgroup CPU quota).")
    var concurrency: Int?
    @Option(help: "Pipeline requests that may wait; beyond them 503 with Retry-After.") var queue = 32
    @Option(help: ArgumentHelp("Longest clip taken as one turn.", valueName: "seconds")) var maxClip: Double = 300
    @Option(
        help: ArgumentHelp(
            "File of keys (one a line) the /v1 routes require as a bearer token (default: $VOXPIPE_SERVE_API_KEY).",
            valueName: "path"))
    var apiKeyFile: String?
    @Flag(help: "Answer a clip with no speech with 422 instead of success with an empty transcription.")
    var noSpeechIsError = false
    @Flag(help: "Use an API key sent in a request body for that request's providers (ignored otherwise).")
    var allowClientKeys = false
    @Flag(
        help: """
            Turns without a session cookie share one session (the last joined channel), for a kiosk with one \
            learner; by default each gets an anonymous session of its own.
            """)
    var singleLearner = false
    @Option(help: ArgumentHelp("Sessions kept at once (idle ones make room for new ones).", valueName: "count"))
    var maxSessions = 1000
    @Option(help: ArgumentHelp("Seconds without a request before a session is idle.", valueName: "seconds"))
    var sessionIdle: Double = 300
    @Option(help: ArgumentHelp("Joins one client address may make a minute (after a first 10).", valueName: "count"))
    var joinRate: Double = 10
    @Option(help: ArgumentHelp("Seconds a connection may stay open without a request.", valueName: "seconds"))
    var idleTimeout: Double = 15
    @Option(help: ArgumentHelp("Seconds a request's head may take to arrive.", valueName: "seconds"))
    var headerTimeout: Double = 10
    @Option(help: ArgumentHelp("Seconds a request's body may take to arrive.", valueName: "seconds"))
    var bodyTimeout: Double = 30
    @Option(
        help: ArgumentHelp(
            "Seconds SIGTERM/SIGINT give running turns before they are cancelled.", valueName: "seconds"))
    var shutdownGrace: Double = 10
    @Option(
        help: ArgumentHelp(
            "Live sessions (/v1/realtime WebSockets) open at once; one more gets an error event and a close.",
            valueName: "n"))
    var maxLiveSessions = 8
    @Option(
        help: ArgumentHelp("Seconds a live session may go without a client event.", valueName: "seconds"))
    var liveIdleTimeout: Double = 60
    @Flag(name: [.short, .long], help: "Log debug messages to stderr.") var verbose = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0…65535") }
        guard maxBody >= 1 && maxBody <= 1024 else { throw ValidationError("--max-body must be 1…1024 MiB") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        if let concurrency, concurrency < 1 { throw ValidationError("--concurrency must be at least 1") }
        guard queue >= 0 else { throw ValidationError("--queue must be 0 or more") }
        guard maxClip > 0 else { throw ValidationError("--max-clip must be positive") }
        guard maxSessions >= 1 else { throw ValidationError("--max-sessions must be at least 1") }
        guard maxLiveSessions >= 0 else { throw ValidationError("--max-live-sessions must be 0 or more") }
        for (name, value) in [
            ("--session-idle", sessionIdle), ("--idle-timeout", idleTimeout), ("--header-timeout", headerTimeout),
            ("--body-timeout", bodyTimeout), ("--live-idle-timeout", liveIdleTimeout),
        ] where !(value > 0) {
            throw ValidationError("\(name) must be positive")
        }
        guard joinRate >= 0 else { throw ValidationError("--join-rate must be 0 or more") }
        guard shutdownGrace >= 0 else { throw ValidationError("--shutdown-grace must be 0 or more") }
    }

    /// The keys the /v1 routes take, registered with `secrets`: from --api-key-file, else
    /// $VOXPIPE_SERVE_API_KEY; none: open.
    func serverKeys(secrets: Secrets) throws -> [String] {
        var keys: [String]
        if let apiKeyFile {
            keys = try KeyFile.read(apiKeyFile, failure: .usage)
        } else {
            keys = ProcessInfo.processInfo.environment["VOXPIPE_SERVE_API_KEY"].map { [$0] } ?? []
        }
        keys = keys.filter { !$0.isEmpty }
        keys.forEach(secrets.register)
        return keys
    }

    func run() async throws {
        bootstrapLogging(verbose: verbose)
        let logger = Logger(label: "voxpipe.serve")
        do {
            var settings = ServeSettings()
            settings.host = host
            settings.port = port
            settings.prefix = prefix
            settings.maxBodyBytes = maxBody * 1024 * 1024
            settings.timeout = timeout
            if let concurrency { settings.concurrency = concurrency }
            // One malloc arena per turn at once (at least two): RSS comes back after a burst.
            MemoryTrim.limitArenas(to: max(2, settings.concurrency))
            settings.queue = queue
            settings.maxClipSeconds = maxClip
            settings.audio = AudioEncoding(format: audioFormat)
            settings.allowClientKeys = allowClientKeys
            settings.noSpeechIsError = noSpeechIsError
            settings.singleLearner = singleLearner
            settings.maxConversations = maxSessions
            settings.sessionIdleSeconds = sessionIdle
            settings.joinsPerMinute = joinRate
            settings.idleTimeout = idleTimeout
            settings.headerTimeout = headerTimeout
            settings.bodyTimeout = bodyTimeout
            settings.shutdownGrace = shutdownGrace
            settings.maxLiveSessions = maxLiveSessions
            settings.liveIdleSeconds = liveIdleTimeout

            // The spec is checked as `run` checks it; serve runs that plan as one turn a request.
            let plan = try loadPlan(spec)
            let context = makeContext(
                plan: plan, fingerprint: Ledger.fingerprint(plan: plan, version: voxpipeVersion), logger: logger)
            settings.agora = try agora.load(secrets: context.secrets)
            settings.apiKeys = try serverKeys(secrets: context.secrets)
            let pipeline = try await TutorPipeline(plan: plan, context: context, maxClipSeconds: maxClip)
            let server = TutorServer(pipeline: pipeline, settings: settings, logger: logger)
            let shownHost = host.contains(":") ? "[\(host)]" : host
            let served = settings
            let ending = try await server.run(handlingSignals: true) { port in
                printError(
                    "serving '\(plan.name)' on http://\(shownHost):\(port)\(served.prefix) "
                        + "(\(served.concurrency) at once, audio \(served.audio.format.rawValue))")
            }
            // Stopped by a signal: the shell's status for it (143 for SIGTERM, 130 for SIGINT).
            if case .signal(let number) = ending {
                printError("serve: stopped by signal \(number)")
                throw ExitCode(128 + number)
            }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            throw fail(error)
        }
    }
}

/// `--audio-format` takes the formats write-audio writes, by the same names.
extension AudioFileFormat: ExpressibleByArgument {}
