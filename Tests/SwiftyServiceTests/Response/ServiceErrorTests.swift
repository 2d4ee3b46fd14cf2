import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct ServiceErrorTests {
    let request: URLRequest = {
        var request = URLRequest(url: URL(string: "https://api.example.com/v1/user/info?uid=42")!)
        request.httpMethod = "POST"
        request.timeoutInterval = 7
        return request
    }()

    @Test func everyDescriptionNamesTheMethodTheURLAndTheCause() {
        let response = Response(request: request, statusCode: 503, data: Data("busy".utf8))
        let cases: [(ServiceError, String)] = [
            (.invalidRequest(.missingBaseURL, method: .get, url: "user/info"), "no base URL"),
            (.transport(request, underlying: URLError(.cannotConnectToHost)), "URLError -1004"),
            (.timedOut(request), "timed out after 7 s"),
            (.cancelled(request), "cancelled"),
            (.unacceptableStatusCode(response), "unacceptable status 503"),
            (
                .decoding(
                    response,
                    underlying: DecodingError.dataCorrupted(
                        .init(codingPath: [], debugDescription: "not JSON"))),
                "not JSON"
            ),
        ]
        for (error, cause) in cases {
            let url = error.url
            #expect(error.description.hasPrefix("\(error.method) \(url): "), "\(error)")
            #expect(error.description.contains(cause), "\(error)")
            #expect(error.localizedDescription == error.description)
        }
        #expect(
            cases[1].0.description.hasPrefix(
                "POST https://api.example.com/v1/user/info?uid=42: transport failed"))
    }

    @Test("A timed-out request describes any timeout it carries, even one that is not a whole number")
    func timeoutsOfAnyValueAreDescribed() {
        for (seconds, text) in [(0.5, "0.5 s"), (.nan, "nan s"), (.infinity, "inf s"), (1e300, "1e+300 s")] {
            var odd = request
            odd.timeoutInterval = seconds
            #expect(ServiceError.timedOut(odd).description.contains("timed out after \(text) ("))
        }
    }

    @Test func theResponseIsThereWhereTheServerAnswered() {
        let response = Response(request: request, statusCode: 404)
        #expect(ServiceError.unacceptableStatusCode(response).response?.statusCode == 404)
        #expect(ServiceError.decoding(response, underlying: URLError(.unknown)).response?.statusCode == 404)
        #expect(ServiceError.timedOut(request).response == nil)
        #expect(ServiceError.timedOut(request).request?.url == request.url)
        #expect(ServiceError.invalidRequest(.missingBaseURL, method: .get, url: "x").request == nil)
    }

    @Test func decodingFailuresSayWhereInTheBody() throws {
        struct Model: Decodable { let id: Int }
        let response = Response(request: request, statusCode: 200, data: Data(#"{"id": "one"}"#.utf8))
        #expect {
            try response.decode(Model.self)
        } throws: { error in
            guard case let ServiceError.decoding(carried, _) = error else { return false }
            return carried.statusCode == 200 && (error as? ServiceError)?.description.contains("id") == true
        }
        let html = Response(request: request, statusCode: 200, data: Data("<html></html>".utf8))
        #expect(throws: ServiceError.self) { try html.mapJSON() }
        #expect(throws: ServiceError.self) {
            try Response(request: request, statusCode: 200, data: Data([0xFF, 0xFE, 0xFD])).mapString()
        }
        #expect(try html.mapString() == "<html></html>")
    }
}
