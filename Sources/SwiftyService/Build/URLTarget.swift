import Foundation

/// The URL a request goes to, written step by step: base URL, one `/`, the encoded path, then the query.
/// The parts are joined once, in ``url()``: joining as they come costs a reallocation per part.
struct URLTarget {
    let method: HTTPMethod
    private let base: BaseURL?
    private let pathProblem: ServiceError.InvalidRequestReason?
    /// The encoded path, without leading slashes; empty for a request to the base URL itself.
    private let path: String
    /// The parameters written into the query, after the base URL's own query.
    private var parameters: [UInt8] = []
    /// The finished URL's text, once ``url()`` has joined it.
    private var joined: String?
    private let draftPath: String

    /// - Parameters:
    ///   - isEncoded: whether `path` is percent-encoded already (CRUD identifiers are).
    ///   - problem: why the path cannot be used, found before (an empty identifier).
    init(
        path draftPath: String, isEncoded: Bool, problem: ServiceError.InvalidRequestReason?, base: BaseURL?,
        method: HTTPMethod
    ) {
        self.method = method
        self.base = base
        self.draftPath = draftPath
        var problem = problem
        var path = draftPath
        if !isEncoded {
            switch PathEncoding.encode(draftPath) {
            case let .success(encoded): path = encoded
            case let .failure(failure):
                problem = failure.reason
                path = PathEncoding.readable(draftPath)
            }
        }
        pathProblem = problem
        self.path = path
    }

    /// What is written so far, for errors: the base URL and path, or the whole URL once joined.
    private var written: String {
        if let joined { return joined }
        guard !path.isEmpty else { return base?.exact ?? "" }
        return (base?.prefix ?? "") + "/" + path
    }

    /// The request's failure for `reason`, naming the method and the URL as far as it is written.
    func invalid(_ reason: ServiceError.InvalidRequestReason) -> ServiceError {
        let written = written
        return .invalidRequest(
            reason, method: method, url: written.isEmpty ? draftPath : written.abbreviatedURL)
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
        if parameters.isEmpty {
            parameters = written
        } else {
            parameters.append(UInt8(ascii: "&"))
            parameters += written
        }
    }

    /// ``BackendRequest/hostKey(ofURL:)`` of the finished URL's `text`: its base URL's, found once per base.
    func hostKey(ofURL text: String) -> String {
        base?.hostKey ?? BackendRequest.hostKey(ofURL: text)
    }

    /// The finished URL: no longer than ``TransportRules/maxURLLength``, and one `URL` can hold.
    mutating func url() throws(ServiceError) -> URL {
        let head = path.isEmpty ? base?.exact ?? "" : base?.prefix ?? ""
        let baseQuery = base?.query ?? ""
        // Written once into the String's own storage: appending to a String checks and grows it part by
        // part, and bytes gathered first cost an array more per request.
        let query = !baseQuery.isEmpty || !parameters.isEmpty
        var length = head.utf8.count
        if !path.isEmpty { length += 1 + path.utf8.count }
        if query { length += 1 + baseQuery.utf8.count + parameters.count }
        if !baseQuery.isEmpty && !parameters.isEmpty { length += 1 }
        let string = String(unsafeUninitializedCapacity: length) { buffer in
            var end = 0
            func put(_ bytes: some Collection<UInt8>) {
                let rest = UnsafeMutableBufferPointer(rebasing: buffer[end...])
                end += rest.initialize(fromContentsOf: bytes)
            }
            put(head.utf8)
            if !path.isEmpty {
                put(CollectionOfOne(UInt8(ascii: "/")))
                put(path.utf8)
            }
            if query {
                put(CollectionOfOne(UInt8(ascii: "?")))
                put(baseQuery.utf8)
                if !baseQuery.isEmpty && !parameters.isEmpty { put(CollectionOfOne(UInt8(ascii: "&"))) }
                put(parameters)
            }
            return end
        }
        joined = string
        if string.utf8.count > HTTPLimits.maxURLLength {
            // The error keeps the URL's start: a caller that logs `error.url` must not log megabytes.
            throw invalid(.urlTooLong(length: string.utf8.count))
        }
        guard let url = base?.url(for: string) ?? URL(string: string) else {
            throw invalid(.malformedURL("'\(string)' is not a valid URL"))
        }
        return url
    }
}
