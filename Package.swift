// swift-tools-version:6.0
import PackageDescription

// System libraries come from Debian's -dev packages; `make setup` installs them.
func systemLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt([apt])])
}

let package = Package(
    name: "voxpipe",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "voxpipe", targets: ["voxpipe"]),
        // The stage modules, for the fuzzing package beside this one (Fuzz/, `make fuzz`).
        .library(
            name: "VoxpipeModules",
            targets: [
                "VoxCore", "VoxFormats", "VoxProcess", "VoxReports", "VoxRequest", "VoxDecode", "VoxResample",
                "VoxHTTP", "VoxChunk",
                "VoxTranscribe",
                "VoxReply",
                "VoxSynthesize", "VoxWrite", "VoxCheck", "VoxAgent", "VoxStages", "VoxFieldService", "VoxModeration",
                "VoxServe",
            ]),
        // The stage harness, for the test targets and the fuzzer; the executable does not link it.
        .library(name: "VoxTesting", targets: ["VoxTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        // `voxpipe serve` (VoxServe): the tutor REST API.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        // Serve's shutdown: SIGTERM/SIGINT, a grace period, then cancellation.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        // Serve watches a request's connection, to stop a turn whose client has gone.
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        // Serve refuses a request it cannot admit on the connection's event loop, from its head in
        // HTTPTypes' parts (as Hummingbird's pipeline carries them).
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.24.0"),
        // Serve's live sessions: OpenAI's Realtime API over WebSocket (`/v1/realtime`).
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.0"),
        // Serve's `GET /metrics`: counters, gauges and histograms in Prometheus' text format.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.0"),
    ],
    targets: [
        systemLibrary("CSndFile", pkgConfig: "sndfile", apt: "libsndfile1-dev"),
        systemLibrary("CSoxr", pkgConfig: "soxr", apt: "libsoxr-dev"),
        systemLibrary("CSampleRate", pkgConfig: "samplerate", apt: "libsamplerate0-dev"),
        systemLibrary("CCrypto", pkgConfig: "libcrypto", apt: "libssl-dev"),
        systemLibrary("CZlib", pkgConfig: "zlib", apt: "zlib1g-dev"),
        systemLibrary("CCurl", pkgConfig: "libcurl", apt: "libcurl4-openssl-dev"),
        systemLibrary("CEspeakNG", pkgConfig: "espeak-ng", apt: "libespeak-ng-dev"),
        systemLibrary("CPocketSphinx", pkgConfig: "pocketsphinx", apt: "libpocketsphinx-dev"),
        // whisper.cpp, built from PyPI's pywhispercpp source package by `make setup` (scripts/setup-whisper.sh).
        .systemLibrary(name: "CWhisper", pkgConfig: "whisper"),
        // sherpa-onnx's C API (Piper voices), from PyPI's sherpa-onnx-core wheel by `make setup` (scripts/setup-piper.sh).
        .systemLibrary(name: "CSherpaOnnx", pkgConfig: "sherpa-onnx"),
        // glibc's malloc.h (part of libc): serve gives a request's memory back.
        .systemLibrary(name: "CMalloc"),

        .target(
            name: "VoxCore",
            dependencies: [
                "CCrypto", "CMalloc",
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Domain modules: types of one domain that several stage modules share (stage modules
        // import these, never each other).
        // Run reports: JSONL report lines, JUnit XML, Prometheus textfile metrics, and their merge.
        .target(name: "VoxReports", dependencies: ["VoxCore"]),
        // Formats outside the spine: WAV files in memory (HTTP speech APIs, enrolment clips, tests).
        .target(name: "VoxFormats", dependencies: ["VoxCore"]),
        // Process tools: external programs (ffmpeg, espeak-ng), the libraries loaded, installed models.
        .target(name: "VoxProcess", dependencies: ["VoxCore"]),
        // What a served request asks of an item's stages: the conversation it continues, voice and
        // speed, language, a client's API key (typed `RequestKey`s; serve sets them).
        .target(name: "VoxRequest", dependencies: ["VoxCore"]),
        .target(name: "VoxFieldService", dependencies: ["VoxCore"]),
        .target(
            name: "VoxModeration",
            dependencies: ["VoxCore", "VoxFieldService", .product(name: "Logging", package: "swift-log")]),
        .target(
            name: "VoxDecode",
            dependencies: [
                "VoxCore", "VoxFormats", "VoxProcess", "VoxFieldService", "VoxModeration", "CSndFile",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .target(name: "VoxResample", dependencies: ["VoxCore", "CSoxr", "CSampleRate"]),
        .target(
            name: "VoxHTTP",
            dependencies: ["VoxCore", "VoxRequest", "CCurl", .product(name: "Logging", package: "swift-log")]),
        .target(name: "VoxChunk", dependencies: ["VoxCore", "VoxFormats", "VoxProcess", "CWhisper", "CSherpaOnnx"]),
        .target(
            name: "VoxTranscribe",
            dependencies: ["VoxCore", "VoxFormats", "VoxProcess", "VoxRequest", "VoxHTTP", "CPocketSphinx", "CWhisper"]),
        .target(name: "VoxReply", dependencies: ["VoxCore", "VoxRequest", "VoxHTTP"]),
        .target(name: "VoxAgent", dependencies: ["VoxCore", "VoxFieldService", "VoxHTTP"]),
        .target(
            name: "VoxSynthesize",
            dependencies: [
                "VoxCore", "VoxFormats", "VoxProcess", "VoxRequest", "VoxHTTP", "CEspeakNG", "CSherpaOnnx",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .target(
            name: "VoxWrite",
            dependencies: ["VoxCore", "VoxFormats", "VoxProcess", "VoxFieldService", "VoxModeration", "CSndFile"]),
        .target(name: "VoxCheck", dependencies: ["VoxCore", "VoxDecode"]),
        .target(
            name: "VoxStages",
            dependencies: [
                "VoxCore", "VoxDecode", "VoxResample", "VoxChunk", "VoxTranscribe", "VoxReply", "VoxSynthesize",
                "VoxWrite", "VoxAgent", .product(name: "Logging", package: "swift-log"),
            ]),
        .target(
            name: "VoxServe",
            dependencies: [
                "VoxCore", "VoxFormats", "VoxRequest", "VoxDecode", "VoxChunk", "VoxWrite", "CCrypto", "CZlib",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]),
        .executableTarget(
            name: "voxpipe",
            dependencies: [
                "VoxCore", "VoxReports", "VoxDecode", "VoxResample", "VoxChunk", "VoxTranscribe", "VoxReply",
                "VoxSynthesize",
                "VoxWrite", "VoxCheck", "VoxStages", "VoxServe", "VoxModeration",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),

        // The test kit: runs one stage alone (StageHarness) and keeps what it logged (CapturedLogs).
        .target(
            name: "VoxTesting",
            dependencies: ["VoxCore", .product(name: "Logging", package: "swift-log")]),

        // Helpers shared by the test targets (not a product).
        .target(
            name: "VoxTestSupport", dependencies: ["VoxTesting", "VoxCore", "VoxProcess", "VoxDecode"],
            path: "Tests/VoxTestSupport"),
        .testTarget(name: "VoxHTTPTests", dependencies: ["VoxTestSupport", "VoxHTTP", "VoxCore"]),
        .testTarget(
            name: "VoxCoreTests",
            dependencies: [
                "VoxTestSupport", "VoxTesting", "VoxModeration", "VoxCore", "VoxReports", "VoxFormats", "VoxProcess",
            ]),
        .testTarget(
            name: "VoxDecodeTests",
            dependencies: ["VoxTestSupport", "VoxTesting", "VoxDecode", "VoxCore", "VoxFormats", "CSndFile"]),
        .testTarget(
            name: "VoxResampleTests",
            dependencies: ["VoxTestSupport", "VoxTesting", "VoxResample", "VoxDecode", "VoxCore"]),
        .testTarget(
            name: "VoxChunkTests",
            dependencies: ["VoxTestSupport", "VoxTesting", "VoxChunk", "VoxResample", "VoxCore", "VoxFormats"]),
        .testTarget(
            name: "VoxTranscribeTests",
            dependencies: [
                "VoxTestSupport", "VoxTesting", "VoxTranscribe", "VoxHTTP", "VoxResample", "VoxDecode", "VoxChunk",
                "VoxCore",
            ]),
        .testTarget(
            name: "VoxReplyTests", dependencies: ["VoxTestSupport", "VoxTesting", "VoxReply", "VoxRequest", "VoxCore"]),
        .testTarget(
            name: "VoxSynthesizeTests",
            dependencies: [
                "VoxTestSupport", "VoxTesting", "VoxSynthesize", "VoxRequest", "VoxHTTP", "VoxTranscribe",
                "VoxResample",
                "VoxCore",
                "VoxFormats", "VoxChunk",
            ]),
        .testTarget(
            name: "VoxWriteTests",
            dependencies: [
                "VoxTestSupport", "VoxTesting", "VoxWrite", "VoxDecode", "VoxResample", "VoxFieldService",
                "VoxModeration",
                "VoxCore", "VoxFormats", "VoxProcess",
            ]),
        .testTarget(
            name: "VoxAgentTests",
            dependencies: ["VoxTestSupport", "VoxTesting", "VoxAgent", "VoxHTTP", "VoxFieldService", "VoxCore"]),
        .testTarget(
            name: "VoxStagesTests",
            dependencies: [
                "VoxStages", "VoxDecode", "VoxResample", "VoxChunk", "VoxTranscribe", "VoxReply", "VoxSynthesize",
                "VoxWrite", "VoxAgent", "VoxCore",
            ]),
        .testTarget(
            name: "VoxModerationTests",
            dependencies: [
                "VoxTestSupport", "VoxModeration", "VoxFieldService", "VoxCore",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "VoxCheckTests", dependencies: ["VoxTestSupport", "VoxCheck", "VoxCore"]),
        .testTarget(
            name: "VoxServeTests",
            dependencies: [
                "VoxTestSupport", "VoxTesting", "VoxServe", "VoxHTTP", "VoxStages", "VoxResample", "VoxWrite",
                "VoxChunk", "VoxSynthesize", "VoxRequest", "VoxCore", "VoxFormats", "VoxProcess",
                .product(name: "Logging", package: "swift-log"),
                // The admission gate alone, on an EmbeddedChannel.
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ]),
        .testTarget(
            name: "voxpipeTests",
            dependencies: [
                "VoxTestSupport", "VoxTesting", "voxpipe", "VoxCore", "VoxReports", "VoxFormats", "VoxServe",
            ]),
    ]
)
