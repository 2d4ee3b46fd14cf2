// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "SwiftyService",
    platforms: [.macOS(.v12), .iOS(.v15), .tvOS(.v15), .watchOS(.v8)],
    products: [
        .library(name: "SwiftyService", targets: ["SwiftyService"])
    ],
    targets: [
        .target(name: "SwiftyService"),
        .executableTarget(
            name: "JSONPlaceholder",
            dependencies: ["SwiftyService"],
            path: "Examples/JSONPlaceholder"
        ),
        .target(
            name: "LegacyNetworking",
            dependencies: ["SwiftyService"],
            path: "Examples/LegacyBackend/LegacyNetworking"
        ),
        .executableTarget(
            name: "LegacyBackend",
            dependencies: ["SwiftyService", "LegacyNetworking"],
            path: "Examples/LegacyBackend/Demo"
        ),
        .executableTarget(
            name: "SwiftyServiceBenchmarks",
            dependencies: ["SwiftyService"],
            path: "Benchmarks/SwiftyServiceBenchmarks"
        ),
        .testTarget(
            name: "SwiftyServiceTests",
            dependencies: ["SwiftyService", "LegacyNetworking"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
