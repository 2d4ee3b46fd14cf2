import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Compiled by scripts/check-generated into the package of generated clients, beside a main.swift that it
// writes: builds the request of every sample case and prints it as a JSON line for check_requests.py.

/// Prints the method, URL and headers of each sample's request (or why it was not built), one JSON line each.
func dump(document: String, _ samples: [(operation: String, endpoint: any SwiftyServiceProtocol)]) {
    for (operation, endpoint) in samples {
        var line: [String: Any] = ["document": document, "operation": operation]
        do {
            let request = try endpoint.urlRequest()
            line["method"] = request.httpMethod ?? "GET"
            line["url"] = request.url?.absoluteString ?? ""
            line["headers"] = request.allHTTPHeaderFields ?? [:]
        } catch {
            line["error"] = "\(error)"
        }
        let data = try! JSONSerialization.data(withJSONObject: line, options: [.sortedKeys])
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}

/// Gives a realm whose description names only a relative server the base URL check_requests.py expects.
func configureRelative(_ defaultBaseURL: URL?, _ configure: (URL) -> Void) {
    if defaultBaseURL == nil { configure(URL(string: "https://relative.invalid")!) }
}
