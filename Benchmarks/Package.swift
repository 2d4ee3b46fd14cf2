// swift-tools-version: 6.2
import PackageDescription

// The benchmarks and the soak run, in a package of their own so that the root package stays the product:
// nothing here is built, resolved or offered by depending on SwiftyService. scripts/bench and scripts/soak
// build it with `--package-path Benchmarks`.
//
// ProcessProbes (the /proc readings the soak shares with the leak tests) and LegacyNetworking (the legacy
// example's client and backend) are the root package's own targets, and making them products would offer
// test helpers to every user of the library. `Shared/` holds symbolic links to their directories instead,
// so both packages build the same files with nothing copied and nothing published.
let package = Package(
    name: "SwiftyServiceBenchmarks",
    // Task executors (the executor client) need the 2024 systems; the library itself needs only macOS 12.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11)],
    products: [
        .executable(name: "SwiftyServiceBenchmarks", targets: ["SwiftyServiceBenchmarks"]),
        .executable(name: "SwiftyServiceSoak", targets: ["SwiftyServiceSoak"]),
    ],
    dependencies: [
        // Named, because a path dependency's identity is otherwise its directory's name, which differs
        // from clone to clone (and worktree to worktree).
        .package(name: "SwiftyService", path: "..")
    ],
    targets: [
        .executableTarget(
            name: "SwiftyServiceBenchmarks",
            dependencies: [
                .product(name: "SwiftyService", package: "SwiftyService"),
                .product(name: "SwiftyServiceCurl", package: "SwiftyService"),
            ],
            path: "SwiftyServiceBenchmarks"
        ),
        .executableTarget(
            name: "SwiftyServiceSoak",
            dependencies: [
                .product(name: "SwiftyService", package: "SwiftyService"),
                .product(name: "SwiftyServiceCurl", package: "SwiftyService"),
                "LegacyNetworking", "ProcessProbes",
            ],
            path: "Soak"
        ),
        // Links to ../Tests/ProcessProbes and ../Examples/LegacyBackend/LegacyNetworking.
        .target(name: "ProcessProbes", path: "Shared/ProcessProbes"),
        .target(
            name: "LegacyNetworking",
            dependencies: [.product(name: "SwiftyService", package: "SwiftyService")],
            path: "Shared/LegacyNetworking"
        ),
    ],
    swiftLanguageModes: [.v6]
)
