import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default backend: sends requests with a `URLSession`.
///
/// Cancelling a request (its handle, or the awaiting task) cancels the `URLSessionTask`.
public final class URLSessionBackend: NetworkBackend {
    /// The session that sends the requests.
    public let session: URLSession
    private let ownsSession: Bool

    /// The backend realms use when none is set; one session shared by all of them.
    public static let shared = URLSessionBackend()

    /// A backend on a session of its own, made from `configuration`.
    ///
    /// The default configuration keeps at most 4 connections per host: above that, libcurl (under
    /// URLSession on Linux) opens and closes a new connection for most requests instead of reusing them.
    public init(configuration: URLSessionConfiguration = URLSessionBackend.defaultConfiguration()) {
        session = URLSession(configuration: configuration)
        ownsSession = true
    }

    /// A backend on an existing session, which the caller keeps ownership of.
    public init(session: URLSession) {
        self.session = session
        ownsSession = false
    }

    deinit {
        if ownsSession { session.finishTasksAndInvalidate() }
    }

    /// `URLSessionConfiguration.default` with at most 4 connections per host.
    public static func defaultConfiguration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = 4
        return configuration
    }

    /// Starts a data task for the request.
    public func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        let urlRequest = request.urlRequest
        let task = session.dataTask(with: urlRequest) { data, response, error in
            if let error {
                completion(.failure(error))
            } else if let response = response as? HTTPURLResponse {
                completion(.success(Response(request: urlRequest, response: response, data: data ?? Data())))
            } else {
                completion(.failure(URLError(.badServerResponse)))
            }
        }
        task.resume()
        return BackendTask { task.cancel() }
    }
}

extension NetworkBackend where Self == URLSessionBackend {
    /// The shared URLSession backend: `.use(.urlSession)`.
    public static var urlSession: URLSessionBackend { .shared }
}
