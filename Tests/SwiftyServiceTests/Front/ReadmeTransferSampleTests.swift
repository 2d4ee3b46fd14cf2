import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transfer sample of the "Uploads, downloads and progress" article (Transfers.md), as written there,
/// run on a stub.
enum PhotoService: SwiftyServiceProtocol {
    case upload(photo: URL, caption: String)
    case original(id: Int, to: URL)

    var realm: ServiceRealm { .get("photos") }
    var path: String {
        switch self {
        case .upload: "photos"
        case let .original(id, _): "photos/\(id)/original"
        }
    }
    var method: HTTPMethod {
        switch self {
        case .upload: .post
        case .original: .get
        }
    }
    var body: RequestBody? {
        guard case let .upload(photo, caption) = self else { return nil }
        var form = MultipartForm()
        form.addField("caption", value: caption)
        form.addFile(at: photo, name: "photo", contentType: "image/jpeg")  // streamed, never read whole
        return .multipart(form)
    }
    var download: DownloadDestination? {
        guard case let .original(_, file) = self else { return nil }
        return .file(file, replacing: true)
    }
}

@Suite(.serialized) struct ReadmeTransferSampleTests {
    let temporaryFiles = TemporaryFiles()

    @Test func theTransferArticleSampleRunsAsWritten() async throws {
        let directory = temporaryFiles.uniquePath("readme")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let photoURL = directory.appendingPathComponent("beach.jpg")
        try Data(repeating: 0xFF, count: 2_048).write(to: photoURL)
        let fileURL = directory.appendingPathComponent("original.jpg")
        let otherURL = directory.appendingPathComponent("other.jpg")
        ServiceRealm.get("photos").setBaseURL(URL(string: "https://photos.example.com")!)
            .use(
                StubBackend { request in
                    .init(statusCode: 200, data: Data("bytes of \(request.urlRequest.url!.path)".utf8))
                })

        let steps = Trail()
        let uploaded = try await PhotoService.upload(photo: photoURL, caption: "Beach").transfer { progress in
            steps.add("\(progress)")
        }
        #expect(uploaded.statusCode == 200)
        #expect(steps.all.first?.hasPrefix("upload ") == true)

        let saved = try await PhotoService.original(id: 7, to: fileURL).request()
        #expect(saved.fileURL == fileURL && saved.data.isEmpty)
        #expect(try String(contentsOf: fileURL, encoding: .utf8) == "bytes of /photos/7/original")

        let transfer = PhotoService.original(id: 8, to: otherURL).transfer()
        var fractions: [Double] = []
        for await step in transfer.progress { fractions.append(step.fraction ?? 0) }
        let response = try await transfer.response
        #expect(fractions.last == 1)
        #expect(response.fileURL == otherURL)
    }
}
