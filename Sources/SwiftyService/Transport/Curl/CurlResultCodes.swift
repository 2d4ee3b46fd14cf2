import Foundation

extension CurlLoop {
    /// libcurl's result codes as the `URLError`s URLSession would report; TLS failures are
    /// ``TLSFailure``'s.
    static func urlError(_ code: Int32, description: String) -> URLError {
        let mapped: URLError.Code =
            switch code {
            case 6: .cannotFindHost
            case 5: .cannotConnectToHost
            case 7: .cannotConnectToHost
            case 28: .timedOut
            case 18, 52, 55, 56: .networkConnectionLost
            case 61: .cannotDecodeContentData
            case 1, 3: .unsupportedURL
            case 8: .badServerResponse
            case 42: .cancelled
            case 47: .httpTooManyRedirects
            default: .unknown
            }
        return URLError(mapped, userInfo: [NSLocalizedDescriptionKey: "\(description) (curl \(code))"])
    }
}
