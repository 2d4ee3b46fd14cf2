// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "SwiftyService",
    platforms: [.macOS(.v12), .iOS(.v15), .tvOS(.v15), .watchOS(.v8)],
    products: [
        .library(name: "SwiftyService", targets: ["SwiftyService"]),
        .library(name: "SwiftyServiceTesting", targets: ["SwiftyServiceTesting"]),
        .library(name: "SwiftyServiceCurl", targets: ["SwiftyServiceCurl"]),
        // The OpenAPI generator: a command, a command plugin that writes the files into a target, and a
        // build-tool plugin that generates them at build time.
        .executable(name: "swiftyservice-generate", targets: ["swiftyservice-generate"]),
        .plugin(name: "SwiftyServiceGenerate", targets: ["SwiftyServiceGenerate"]),
        .plugin(name: "SwiftyServiceGenerator", targets: ["SwiftyServiceGenerator"]),
    ],
    targets: [
        // CCurlShim: typed entry points to libcurl, which CurlBackend loads at run time (no headers needed), and the
        // layout of zlib's stream, for WebSocket compression (zlib is loaded at run time too).
        .target(name: "SwiftyService", dependencies: ["CCurlShim"]),
        .target(name: "SwiftyServiceTesting", dependencies: ["SwiftyService"]),
        .target(name: "CCurlShim"),
        // CurlBackend moved into SwiftyService; this product re-exports it for code that imports it by this name.
        .target(name: "SwiftyServiceCurl", dependencies: ["SwiftyService"]),
        // Reads OpenAPI documents (JSON, and YAML through a parser of its own) and writes endpoint enums.
        .target(name: "SwiftyServiceGeneratorCore"),
        .executableTarget(
            name: "swiftyservice-generate", dependencies: ["SwiftyServiceGeneratorCore"],
            path: "Sources/GenerateCommand"),
        .plugin(
            name: "SwiftyServiceGenerate",
            capability: .command(
                intent: .custom(
                    verb: "swiftyservice-generate",
                    description: "Writes endpoint enums and models from a target's OpenAPI document into the target"),
                permissions: [
                    .writeToPackageDirectory(reason: "The generated Swift files go into the target's directory")
                ]),
            dependencies: ["swiftyservice-generate"]),
        .plugin(
            name: "SwiftyServiceGenerator", capability: .buildTool(), dependencies: ["swiftyservice-generate"]),
        // The example; its todos client is generated at build time from openapi.yaml by the generator's plugin.
        .executableTarget(
            name: "JSONPlaceholder",
            dependencies: ["SwiftyService", "SwiftyServiceTesting"],
            path: "Examples/JSONPlaceholder",
            exclude: ["jsonplaceholder.cassette.json"],
            plugins: [.plugin(name: "SwiftyServiceGenerator")]
        ),
        // The legacy example's client and backend; the soak (Benchmarks package) builds it through a link too.
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
        // /proc readings and a closed port, for the leak checks of the tests and of the soak (the Benchmarks
        // package builds the same directory through a symbolic link).
        .target(name: "ProcessProbes", path: "Tests/ProcessProbes"),
        .testTarget(
            name: "SwiftyServiceTests",
            dependencies: [
                "SwiftyService", "SwiftyServiceTesting", "SwiftyServiceCurl", "LegacyNetworking", "ProcessProbes",
            ]
        ),
        .testTarget(
            name: "SwiftyServiceGeneratorTests",
            dependencies: ["SwiftyServiceGeneratorCore", "SwiftyService"],
            exclude: ["Resources", "yaml_reference.py"]
        ),
        // The client generated from the generator's own test description (Tests/SwiftyServiceGeneratorTests/
        // Resources/Fixtures/zoo), committed, and what it does at run time.
        .testTarget(
            name: "GeneratedClientTests",
            dependencies: ["SwiftyService", "SwiftyServiceTesting"]
        ),
        // openapi.yaml there is the generator article's example: the plugin generates the client its samples use.
        .testTarget(
            name: "DocSampleTests",
            dependencies: ["SwiftyService", "SwiftyServiceTesting", "SwiftyServiceCurl", "LegacyNetworking"],
            path: "Tests/DocSampleTests",
            plugins: [.plugin(name: "SwiftyServiceGenerator")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
