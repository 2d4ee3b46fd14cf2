import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An endpoint that downloads to a file.
struct DownloadEndpoint: SwiftyServiceProtocol {
    let realm: ServiceRealm
    let path: String
    let destination: DownloadDestination
    var query: [String: any Sendable]?
    var method: HTTPMethod { .get }
    var parameters: [String: Any]? { query }
    var download: DownloadDestination? { destination }
    var validStatusCodes: StatusCodes { .successful }
}

@Suite struct MultipartTests {
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)
    let temporaryFiles = TemporaryFiles()

    func sentBody(_ form: MultipartForm) async throws -> (contentType: String, parts: [ParsedPart]) {
        let stub = StubBackend()
        realm.use(stub)
        _ = try await TestEndpoint(realm, "upload", method: .post, body: .multipart(form)).request()
        let request = try #require(stub.received.first?.urlRequest)
        let contentType = try #require(request.value(forHTTPHeaderField: "Content-Type"))
        let boundary = try #require(MultipartParser.boundary(of: contentType))
        let body = try #require(request.httpBody)
        let parts = try #require(MultipartParser.parse(body, boundary: boundary))
        return (contentType, parts)
    }

    @Test func fieldsDataAndFilesArriveAsPartsWithTheirNamesFilenamesAndTypes() async throws {
        let directory = temporaryFiles.uniquePath("transfer")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("report.csv")
        try Data("a,b\n1,2\n".utf8).write(to: file)
        var form = MultipartForm()
        form.addField("title", value: "Holiday ü")
        form.addData(Data([0, 1, 2, 255]), name: "thumb", filename: "t.png", contentType: "image/png")
        form.addFile(at: file, name: "report", contentType: "text/csv")
        form.addFile(at: file, name: "again")
        let (contentType, parts) = try await sentBody(form)
        #expect(contentType.hasPrefix("multipart/form-data; boundary=SwiftyService-"))
        #expect(parts.count == 4)
        #expect(parts[0].parameter("name") == "title" && parts[0].body == Data("Holiday ü".utf8))
        #expect(parts[0].parameter("filename") == nil && parts[0].contentType == nil)
        #expect(parts[1].parameter("filename") == "t.png" && parts[1].contentType == "image/png")
        #expect(parts[1].body == Data([0, 1, 2, 255]))
        #expect(parts[2].parameter("filename") == "report.csv" && parts[2].contentType == "text/csv")
        #expect(parts[2].body == Data("a,b\n1,2\n".utf8))
        #expect(parts[3].contentType == "application/octet-stream" && parts[3].parameter("name") == "again")
    }

    @Test func quotesInNamesAreEscapedAndLineBreaksAreRefused() async throws {
        var form = MultipartForm()
        form.addField(#"say "hi""#, value: "x")
        form.addData(Data(), name: "f", filename: #"a"b.txt"#)
        let (_, parts) = try await sentBody(form)
        #expect(parts[0].disposition == #"form-data; name="say %22hi%22""#)
        #expect(parts[1].parameter("filename") == "a%22b.txt")

        for bad in ["a\r\nb", "a\nb", "a\rb"] {
            var broken = MultipartForm()
            broken.addField(bad, value: "x")
            let spy = SpyBackend()
            realm.use(spy)
            do {
                _ = try await TestEndpoint(realm, "upload", method: .post, body: .multipart(broken)).request()
                Issue.record("expected .invalidRequest")
            } catch let ServiceError.invalidRequest(reason, _, _) {
                #expect("\(reason)".contains("CR or LF"))
            }
            #expect(spy.requests.isEmpty)
        }
        var badFilename = MultipartForm()
        badFilename.addData(Data(), name: "f", filename: "x\r\nContent-Type: text/html")
        await #expect(throws: ServiceError.self) {
            try await TestEndpoint(realm, "u", method: .post, body: .multipart(badFilename)).request()
        }
    }

    @Test func theBoundaryNeverOccursInAPart() async throws {
        for _ in 0..<20 {
            var form = MultipartForm()
            form.addField("a", value: "--SwiftyService-")
            form.addData(
                Data((0..<2_000).map { _ in UInt8.random(in: 0...255) }), name: "noise", filename: "n.bin")
            let (contentType, parts) = try await sentBody(form)
            let boundary = try #require(MultipartParser.boundary(of: contentType))
            for part in parts { #expect(part.body.range(of: Data(boundary.utf8)) == nil) }
            #expect(parts.count == 2)
        }
    }

    @Test func aMissingFileIsRefusedBeforeAnythingIsSent() async throws {
        var form = MultipartForm()
        form.addFile(at: URL(fileURLWithPath: "/nonexistent/\(UUID().uuidString)"), name: "f")
        await #expect {
            try await TestEndpoint(realm, "u", method: .post, body: .multipart(form)).request()
        } throws: { ($0 as? ServiceError)?.kind == .invalidRequest }
        await #expect {
            try await TestEndpoint(realm, "u", method: .post, body: .file(URL(fileURLWithPath: "/nope")))
                .request()
        } throws: { ($0 as? ServiceError)?.kind == .invalidRequest }
    }
}

@Suite struct DownloadAndProgressTests {
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)
    let temporaryFiles = TemporaryFiles()

    @Test func aDownloadEndsUpInItsFileAndTheResponseNamesIt() async throws {
        let destination = temporaryFiles.uniquePath("transfer").appendingPathComponent("nested/dir/file.bin")
        realm.use(StubBackend { _ in .init(data: Data(repeating: 7, count: 5_000)) })
        let response = try await DownloadEndpoint(realm: realm, path: "f", destination: .file(destination))
            .request()
        #expect(response.fileURL == destination)
        #expect(response.data.isEmpty)
        #expect(try Data(contentsOf: destination) == Data(repeating: 7, count: 5_000))
        let leftovers = try FileManager.default.contentsOfDirectory(
            atPath: destination.deletingLastPathComponent().path)
        #expect(leftovers == ["file.bin"])
    }

    @Test func anExistingFileIsReplacedOnlyWhenAsked() async throws {
        let directory = temporaryFiles.uniquePath("transfer")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let destination = directory.appendingPathComponent("file.txt")
        try Data("old".utf8).write(to: destination)
        let spy = SpyBackend(StubBackend { _ in .init(data: Data("new".utf8)) })
        realm.use(spy)
        await #expect {
            try await DownloadEndpoint(realm: realm, path: "f", destination: .file(destination)).request()
        } throws: { error in
            guard case let ServiceError.invalidRequest(reason, _, _) = error else { return false }
            return reason == .downloadDestinationExists(destination.path)
        }
        #expect(spy.requests.isEmpty)
        #expect(try String(contentsOf: destination, encoding: .utf8) == "old")
        _ = try await DownloadEndpoint(
            realm: realm, path: "f", destination: .file(destination, replacing: true)
        ).request()
        #expect(try String(contentsOf: destination, encoding: .utf8) == "new")
    }

    @Test func aRefusedOrFailedDownloadLeavesNoFile() async throws {
        let directory = temporaryFiles.uniquePath("transfer")
        let destination = directory.appendingPathComponent("file.txt")
        realm.use(StubBackend { _ in .init(statusCode: 404, data: Data("not here".utf8)) })
        do {
            _ = try await DownloadEndpoint(realm: realm, path: "f", destination: .file(destination)).request()
            Issue.record("expected a 404")
        } catch let error as ServiceError {
            #expect(error.response?.data == Data("not here".utf8))
        }
        realm.use(StubBackend.failing(URLError(.networkConnectionLost)))
        await #expect(throws: ServiceError.self) {
            try await DownloadEndpoint(realm: realm, path: "f", destination: .file(destination)).request()
        }
        let left = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        #expect(left.isEmpty)
    }

    @Test func progressEndsAt100PercentBeforeTheResponse() async throws {
        realm.use(StubBackend { _ in .init(data: Data(repeating: 1, count: 300)) })
        let steps = Trail()
        let response = try await TestEndpoint(
            realm, "x", method: .post, body: .data(Data(repeating: 2, count: 40))
        )
        .transfer(progress: { steps.add("\($0)") })
        steps.add("response \(response.statusCode)")
        #expect(steps.all == ["upload 40/40 (100%)", "download 300/300 (100%)", "response 200"])
    }

    @Test func theProgressStreamEndsWhenTheRequestDoes() async throws {
        realm.use(StubBackend(.delayed(0.05)) { _ in .init(data: Data(repeating: 1, count: 10)) })
        let transfer = TestEndpoint(realm, "x").transfer()
        var seen: [TransferProgress] = []
        for await step in transfer.progress { seen.append(step) }
        #expect(seen == [TransferProgress(direction: .download, completed: 10, expected: 10)])
        #expect(try await transfer.response.statusCode == 200)
        #expect(try await transfer.response.data.count == 10)
    }

    @Test func aFileBodyReachesABackendThatDoesNotStreamInMemory() async throws {
        let file = temporaryFiles.uniquePath("transfer").appendingPathExtension("bin")
        try Data(repeating: 9, count: 1_234).write(to: file)
        let stub = StubBackend()
        realm.use(stub)
        let users = Service(baseURL: URL(string: "https://api.example.com/users")!)
        realm.register(users)
        _ = try await users.create(.file(file, contentType: "application/pdf")).value
        let sent = try #require(stub.received.first)
        #expect(sent.urlRequest.httpBody == Data(repeating: 9, count: 1_234))
        #expect(sent.bodyFile == nil)
        #expect(sent.urlRequest.value(forHTTPHeaderField: "Content-Type") == "application/pdf")
    }
}
