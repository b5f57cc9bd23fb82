// swift-tools-version:6.0
import PackageDescription

// voxpipe's fuzzer: libFuzzer entry points over the places where outside bytes come in. Built
// only with `swift build --sanitize=fuzzer --sanitize=address` (libFuzzer supplies `main`), so
// it lives apart from the main package; `make fuzz` (scripts/fuzz.sh) builds and runs it.
let package = Package(
    name: "voxpipe-fuzz",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "voxpipe", path: ".."),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        .executableTarget(
            name: "voxfuzz",
            dependencies: [
                .product(name: "VoxpipeModules", package: "voxpipe"),
                // StageHarness: the decode target runs the decode stage alone.
                .product(name: "VoxTesting", package: "voxpipe"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        )
    ]
)
