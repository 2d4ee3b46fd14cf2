import Foundation

/// The URL a request goes to, written step by step: base URL, one `/`, the encoded path, then the query.
struct URLTarget {
    let method: HTTPMethod
    private let base: BaseURL?
    private let pathProblem: ServiceError.InvalidRequestReason?
    /// What is written so far; errors name it.
    private(set) var string: String
    /// The base URL's own query, then the parameters written into the query.
    var query: String?
    private let draftPath: String

    init(_ draft: RequestDraft, base: BaseURL?, method: HTTPMethod) {
        self.method = method
        self.base = base
        draftPath = draft.path
        var problem = draft.pathProblem
        var path = draft.path
        if !draft.pathIsEncoded {
            switch PathEncoding.encode(draft.path) {
            case let .success(encoded): path = encoded
            case let .failure(failure):
                problem = failure.reason
                path = PathEncoding.readable(draft.path)
            }
        }
        pathProblem = problem
        if path.isEmpty {
            string = base?.exact ?? ""
        } else {
            string = (base?.prefix ?? "") + "/" + path
        }
        query = base?.query.map(String.init)
    }

    /// The request's failure for `reason`, naming the method and the URL as far as it is written.
    func invalid(_ reason: ServiceError.InvalidRequestReason) -> ServiceError {
        .invalidRequest(reason, method: method, url: string.isEmpty ? draftPath : string.abbreviatedURL)
    }

    /// Refuses what no request can be sent with: no base URL, a base URL of another scheme or without a
    /// host, a method that is not a token, a path that would leave the base path.
    func check() throws(ServiceError) {
        guard let base else { throw invalid(.missingBaseURL) }
        if let problem = base.problem { throw invalid(problem) }
        guard HTTPToken.isValid(method.rawValue) else { throw invalid(.invalidMethod(method.rawValue)) }
        if let pathProblem { throw invalid(pathProblem) }
    }

    /// Appends written parameters to the query.
    mutating func appendQuery(_ written: [UInt8]) {
        guard !written.isEmpty else { return }
        let text = String(decoding: written, as: UTF8.self)
        if let query, !query.isEmpty {
            self.query = query + "&" + text
        } else {
            query = text
        }
    }

    /// The finished URL: no longer than ``TransportRules/maxURLLength``, and one `URL` can hold.
    mutating func url() throws(ServiceError) -> URL {
        if let query, !query.isEmpty {
            string += "?"
            string += query
        }
        if string.utf8.count > HTTPLimits.maxURLLength {
            // The error keeps the URL's start: a caller that logs `error.url` must not log megabytes.
            throw invalid(.urlTooLong(length: string.utf8.count))
        }
        guard let url = URL(string: string) else { throw invalid(.malformedURL("'\(string)' is not a valid URL")) }
        return url
    }
}
