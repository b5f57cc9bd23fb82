import Foundation
import VoxCore

/// How a provider talks to its server: where, with which key, and how patiently. Read from the
/// spec's provider block; every option has a default.
public struct HTTPSettings: Sendable, Equatable {
    /// `baseURL` from the spec, else OPENAI_BASE_URL, else OpenAI's own API.
    public var baseURL: String
    /// Where the key comes from: an environment variable, or a key file. Never the spec itself.
    public var apiKeyEnv: String
    public var apiKeyFile: URL?
    public var connectTimeout: Double
    /// Seconds for a request with no body; uploads get more (see `timeout(forBytes:)`).
    public var timeout: Double
    /// Abort when fewer than `lowSpeedBytes` per second flow for `lowSpeedSeconds`.
    public var lowSpeedBytes: Int
    public var lowSpeedSeconds: Int
    public var maxRetries: Int
    public var backoffBase: Double
    public var backoffCap: Double
    /// Requests a minute to this server (plans of 10, 30 and 100 a minute are common); 0: no limit.
    public var requestsPerMinute: Double
    public var maxInFlight: Int
    /// The path `prepare` asks (GET, relative to `baseURL`) to learn that the server answers and
    /// takes the key; nil: no probe, the first request finds out.
    public var probe: String?

    public static let defaultBaseURL = "https://api.openai.com/v1"

    /// Each option, declared once.
    public enum Option {
        public static let baseURL = StageOption<String?>(
            "baseURL", .string, help: "Server base URL; absent: $OPENAI_BASE_URL, else https://api.openai.com/v1.")
        public static let apiKeyEnv = StageOption<String>(
            "apiKeyEnv", .string, default: "OPENAI_API_KEY", help: "Environment variable holding the API key.")
        public static let apiKeyFile = StageOption<String?>(
            "apiKeyFile", .path, help: "File holding the API key (instead of the environment).")
        public static let connectTimeout = StageOption<Double>(
            "connectTimeout", .number(0.1...300), default: 10, help: "Seconds to connect.")
        public static let timeout = StageOption<Double>(
            "timeout", .number(1...3600), default: 60,
            help: "Seconds for a request, plus 1 s for every 100 kB uploaded.")
        public static let lowSpeedSeconds = StageOption<Int>(
            "lowSpeedSeconds", .integer(1...3600), default: 20,
            help: "Abort a transfer slower than 1 kB/s for this long.")
        public static let maxRetries = StageOption<Int>(
            "maxRetries", .integer(0...20), default: 5,
            help: "Retries after connection errors, 408, 409, 429 and 5xx.")
        public static let backoff = StageOption<Double>(
            "backoff", .number(0.001...60), default: 0.5,
            help: "First backoff in seconds; doubles each retry (full jitter), capped at 30 s.")
        public static let requestsPerMinute = StageOption<Double>(
            "requestsPerMinute", .number(0...100_000), default: 0, help: "Rate limit for this provider; 0: none.")
        public static let maxInFlight = StageOption<Int>(
            "maxInFlight", .integer(1...256), default: 4, help: "Requests to this provider at once.")
        public static let probe = StageOption<String>(
            "probe", .string, default: "models",
            help:
                "Path asked (GET) at prepare to check the server and key; a 404/405 there is fine (no such route). "
                + "\"\": no probe (the first request checks).")
    }

    public static let options: [OptionSpec] = [
        Option.baseURL.spec, Option.apiKeyEnv.spec, Option.apiKeyFile.spec, Option.connectTimeout.spec,
        Option.timeout.spec, Option.lowSpeedSeconds.spec, Option.maxRetries.spec, Option.backoff.spec,
        Option.requestsPerMinute.spec, Option.maxInFlight.spec, Option.probe.spec,
    ]

    public init(_ options: StageOptions, environment: [String: String] = ProcessInfo.processInfo.environment) {
        var base =
            options[Option.baseURL] ?? environment["OPENAI_BASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
            ?? Self.defaultBaseURL
        while base.hasSuffix("/") { base.removeLast() }
        baseURL = base
        apiKeyEnv = options[Option.apiKeyEnv]
        apiKeyFile = options.url(Option.apiKeyFile)
        connectTimeout = options[Option.connectTimeout]
        timeout = options[Option.timeout]
        lowSpeedBytes = 1000
        lowSpeedSeconds = options[Option.lowSpeedSeconds]
        maxRetries = options[Option.maxRetries]
        backoffBase = options[Option.backoff]
        backoffCap = 30
        requestsPerMinute = options[Option.requestsPerMinute]
        maxInFlight = options[Option.maxInFlight]
        let probe = options[Option.probe]
        self.probe = probe.isEmpty ? nil : String(probe.drop(while: { $0 == "/" }))
    }

    /// The total timeout for a request that uploads `bytes`: slow links still get to finish.
    public func timeout(forBytes bytes: Int) -> Double { timeout + Double(bytes) / 100_000 }

    /// The API key: from the key file (`KeyFile`: its one key line; comments and blank lines are
    /// not keys, and a file without a key is an error), else the environment
    /// variable; nil when neither has one. The key is registered in `secrets`, so every text
    /// voxpipe writes from now on has it redacted. A key holding a control character (CR, LF,
    /// NUL, …) would inject a header: it is refused (`VoxError(.invalidSpec)`, exit 65), the error
    /// naming the variable or file, never the key.
    public func apiKey(
        secrets: Secrets, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> String? {
        let key: String?
        let source: String
        if let apiKeyFile {
            // One key: a second line is a line break inside it, refused below as one (it would end a header).
            key = try KeyFile.read(apiKeyFile.path).joined(separator: "\n")
            source = apiKeyFile.path
        } else {
            key = environment[apiKeyEnv]
            source = "$" + apiKeyEnv
        }
        guard let key, !key.isEmpty else { return nil }
        try Secrets.check(key, source: source)
        secrets.register(key)
        return key
    }
}
