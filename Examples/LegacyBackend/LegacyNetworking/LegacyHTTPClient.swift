import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The company's network library, AFNetworking-style: callbacks, `NSError`s, parsed JSON objects.
///
/// It stands for the library an app cannot drop — other teams, analytics and certificate pinning live in
/// it. It is written here only so the example runs; SwiftyService knows nothing about it.
public final class LegacyHTTPClient: @unchecked Sendable {
    /// Called with the task and the parsed JSON (or the raw bytes when the body is not JSON).
    public typealias Success = @Sendable (_ task: LegacyDataTask, _ responseObject: Any?) -> Void
    /// Called with the task (if one started) and the failure.
    public typealias Failure = @Sendable (_ task: LegacyDataTask?, _ error: NSError) -> Void

    /// The app-wide client.
    public static let shared = LegacyHTTPClient()

    private let session: URLSession

    /// A client on its own session.
    public init(configuration: URLSessionConfiguration = .default) {
        session = URLSession(configuration: configuration)
    }

    /// `GET url?parameters`, the way the app's old code calls it.
    @discardableResult
    public func GET(
        _ urlString: String, parameters: [String: String]?, success: @escaping Success,
        failure: @escaping Failure
    ) -> LegacyDataTask? {
        guard var components = URLComponents(string: urlString) else {
            failure(
                nil,
                NSError(
                    domain: "LegacyHTTPClient", code: -1, userInfo: [NSLocalizedDescriptionKey: "bad URL"]))
            return nil
        }
        if let parameters {
            components.queryItems = parameters.sorted { $0.key < $1.key }.map {
                URLQueryItem(name: $0.key, value: $0.value)
            }
        }
        guard let url = components.url else {
            failure(
                nil,
                NSError(
                    domain: "LegacyHTTPClient", code: -1, userInfo: [NSLocalizedDescriptionKey: "bad URL"]))
            return nil
        }
        return dataTask(
            with: URLRequest(url: url),
            completion: { task, _, data, error in
                if let error { failure(task, error) } else { success(task, Self.parse(data)) }
            })
    }

    /// Sends a prepared request; the completion gets the HTTP response and raw bytes, or the error.
    /// Like AFNetworking's `dataTaskWithRequest:completionHandler:`, statuses are not judged here.
    @discardableResult
    public func dataTask(
        with request: URLRequest,
        completion: @escaping @Sendable (LegacyDataTask, HTTPURLResponse?, Data, NSError?) -> Void
    ) -> LegacyDataTask {
        let task = LegacyDataTask()
        let sessionTask = session.dataTask(with: request) { data, response, error in
            completion(task, response as? HTTPURLResponse, data ?? Data(), error.map { $0 as NSError })
        }
        task.attach(sessionTask)
        sessionTask.resume()
        return task
    }

    private static func parse(_ data: Data) -> Any? {
        (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) ?? data
    }
}

/// A request the legacy client started; `cancel()` stops it (its failure block gets NSURLErrorCancelled).
public final class LegacyDataTask: @unchecked Sendable {
    private let lock = NSLock()
    private var sessionTask: URLSessionDataTask?

    fileprivate func attach(_ task: URLSessionDataTask) {
        lock.lock()
        sessionTask = task
        lock.unlock()
    }

    /// Stops the request.
    public func cancel() {
        lock.lock()
        let task = sessionTask
        lock.unlock()
        task?.cancel()
    }
}
