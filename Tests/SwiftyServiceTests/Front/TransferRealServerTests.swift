import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Uploads, downloads and progress against httpbin, through URLSessionBackend's streaming paths.
@Suite(.tags(.realServer)) struct TransferRealServerTests {
    let temporaryFiles = TemporaryFiles()

    func realm() throws -> ServiceRealm {
        try HTTPBin.realm(backend: URLSessionBackend())
    }

    func sampleFiles() throws -> (text: URL, binary: URL) {
        let directory = temporaryFiles.uniquePath("upload")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let text = directory.appendingPathComponent("notes.txt")
        let binary = directory.appendingPathComponent("photo.jpg")
        try Data("line one\nline two\n".utf8).write(to: text)
        try Data((0..<4_096).map { UInt8($0 % 256) }).write(to: binary)
        return (text, binary)
    }

    @Test func aMultipartFormWithFieldsAndTwoFilesArrivesWhole() async throws {
        // httpbin /post parses the form; /echo-raw (Tests/Servers/httpbin_app.py) returns the raw bytes.
        let (text, binary) = try sampleFiles()
        var form = MultipartForm()
        form.addField("title", value: "Holiday")
        form.addField("tags", value: "sea, sun")
        form.addFile(at: text, name: "notes", contentType: "text/plain")
        form.addFile(at: binary, name: "photo", filename: "beach.jpg", contentType: "image/jpeg")
        let realm = try realm()

        let parsed = try await TestEndpoint(realm, "post", method: .post, body: .multipart(form)).request()
            .echo()
        #expect(parsed.form?["title"] == .one("Holiday") && parsed.form?["tags"] == .one("sea, sun"))
        #expect(parsed.files?["notes"] == .one("line one\nline two\n"))
        guard case let .one(photo)? = parsed.files?["photo"] else {
            Issue.record("httpbin saw no photo part")
            return
        }
        #expect(
            photo.hasPrefix("data:application/octet-stream;base64,")
                || photo.hasPrefix("data:image/jpeg;base64,"))
        let encoded = photo.split(separator: ",", maxSplits: 1).last.map(String.init) ?? ""
        #expect(Data(base64Encoded: encoded) == (try Data(contentsOf: binary)))

        let raw = try await TestEndpoint(realm, "echo-raw", method: .post, body: .multipart(form)).request()
        let boundary = try #require(MultipartParser.boundary(of: raw.header("Content-Type") ?? ""))
        let parts = try #require(MultipartParser.parse(raw.data, boundary: boundary))
        #expect(parts.map { $0.parameter("name") } == ["title", "tags", "notes", "photo"])
        #expect(parts[2].parameter("filename") == "notes.txt" && parts[2].contentType == "text/plain")
        #expect(parts[2].body == (try Data(contentsOf: text)))
        #expect(parts[3].parameter("filename") == "beach.jpg" && parts[3].contentType == "image/jpeg")
        #expect(parts[3].body == (try Data(contentsOf: binary)))
    }

    @Test func aMultipartBodyAboveTheThresholdIsStreamedFromATemporaryFileThatIsThenRemoved() async throws {
        // httpbin /echo-raw: the 11 MB body comes back, so the test can check every byte arrived.
        let temporary = FileManager.default.temporaryDirectory
        func leftovers() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: temporary.path).filter {
                $0.hasPrefix("swiftyservice-multipart-")
            }
        }
        let before = try leftovers()
        var form = MultipartForm()
        let big = patternData(count: 11 << 20)
        form.addData(big, name: "big", filename: "big.bin")
        let response = try await TestEndpoint(try realm(), "echo-raw", method: .post, body: .multipart(form))
            .request()
        let boundary = try #require(MultipartParser.boundary(of: response.header("Content-Type") ?? ""))
        let parts = try #require(MultipartParser.parse(response.data, boundary: boundary))
        #expect(parts.first?.body == big)
        // The file is removed when the body's last owner goes, on whichever thread lets go of it last:
        // waited for, not slept for, as a loaded machine can hold that thread back for seconds.
        try await waitUntil(every: 20_000_000, for: 10) { (try? leftovers()) == before }
        #expect(try leftovers() == before, "the temporary body file is gone")
    }

    @Test func aFileBodyIsUploadedFromDiskWithUploadProgressTo100Percent() async throws {
        // httpbin /anything echoes the body as text in `data`.
        let (text, _) = try sampleFiles()
        let steps = Trail()
        let response = try await TestEndpoint(
            try realm(), "anything", method: .put, body: .file(text, contentType: "text/plain")
        )
        .transfer(progress: { steps.add("\($0)") })
        let echo = try response.echo()
        #expect(echo.data == "line one\nline two\n")
        #expect(echo.header("Content-Type") == "text/plain")
        #expect(steps.all.contains("upload 18/18 (100%)"))
    }

    @Test(arguments: ["bytes/100000", "stream-bytes/90000"])
    func aDownloadLandsInItsFileWithTheSizeTheServerSent(_ path: String) async throws {
        // httpbin /bytes/N (with Content-Length) and /stream-bytes/N (chunked, N ≤ 100 KiB): N random bytes.
        let destination = temporaryFiles.uniquePath("download").appendingPathComponent("out/file.bin")
        let size = Int(path.split(separator: "/")[1])!
        let endpoint = DownloadEndpoint(realm: try realm(), path: path, destination: .file(destination))
        let response = try await endpoint.request()
        #expect(response.fileURL == destination && response.data.isEmpty)
        let attributes = try FileManager.default.attributesOfItem(atPath: destination.path)
        #expect(attributes[.size] as? Int == size)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: destination.deletingLastPathComponent().path)
                == ["file.bin"])
    }

    @Test func dripProgressIsMonotonicAndEndsAt100Percent() async throws {
        // httpbin /drip: 2,000 bytes dripped over a second, with a Content-Length.
        let steps = Trail()
        let progress = ProgressLog()
        let response = try await TestEndpoint(
            try realm(), "drip", parameters: ["numbytes": 2_000, "duration": 1, "delay": 0]
        )
        .transfer(progress: {
            progress.add($0); steps.add("\($0)")
        })
        #expect(response.data.count == 2_000)
        let downloads = progress.all.filter { $0.direction == .download }
        #expect(downloads.count >= 2, "\(steps.all)")
        #expect(zip(downloads, downloads.dropFirst()).allSatisfy { $0.completed < $1.completed })
        #expect(downloads.last == TransferProgress(direction: .download, completed: 2_000, expected: 2_000))
        #expect(downloads.last?.fraction == 1)
    }

    @Test func theProgressStreamOfATransferEndsAt100PercentToo() async throws {
        // httpbin /drip again, through transfer()'s AsyncStream.
        let transfer = TestEndpoint(
            try realm(), "drip", parameters: ["numbytes": 1_000, "duration": 1, "delay": 0]
        ).transfer()
        var last: TransferProgress?
        for await step in transfer.progress { last = step }
        #expect(last?.fraction == 1 && last?.completed == 1_000)
        #expect(try await transfer.response.data.count == 1_000)
    }

    @Test func cancellingMidDownloadLeavesNoPartialFile() async throws {
        // httpbin /drip: 100,000 bytes over 60 s, cancelled once the first have arrived — within a second
        // usually; the long drip and wait are for a CI machine whose first seconds of the suite under
        // ThreadSanitizer starved this test for 8 s before its first byte.
        let directory = temporaryFiles.uniquePath("cancelled")
        let destination = directory.appendingPathComponent("file.bin")
        let steps = ProgressLog()
        let task = Task {
            try await DownloadEndpoint(
                realm: try realm(), path: "drip", destination: .file(destination),
                query: ["numbytes": 100_000, "duration": 60, "delay": 0]
            )
            .transfer(progress: { steps.add($0) })
        }
        // Cancel once bytes are arriving, so the cancel lands mid-download.
        let deadline = Date().addingTimeInterval(45)
        while !steps.all.contains(where: { $0.completed > 0 }) && Date() < deadline {
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        task.cancel()
        await #expect { try await task.value } throws: { ($0 as? ServiceError)?.kind == .cancelled }
        func left() -> [String] {
            (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        }
        // Polled for: the partial file goes as the transfer winds down, which a loaded machine can delay.
        #expect(try await waitUntil(every: 20_000_000, for: 10) { left().isEmpty }, "\(left())")
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        #expect(steps.all.contains { $0.completed > 0 }, "the download had started")
    }
}
