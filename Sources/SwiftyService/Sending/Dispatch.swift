import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension PreparedRequest {
    /// Sends the request; `delivery` runs exactly once, on the realm's callback queue if it has one.
    func start(delivering delivery: @escaping RequestHandle.Delivery) -> RequestHandle {
        let handle = RequestHandle(request: urlRequest)
        if let callbackQueue {
            start(handle) { result in callbackQueue.async { delivery(result) } }
        } else {
            start(handle, delivering: delivery)
        }
        return handle
    }

    func start(_ handle: RequestHandle, delivering delivery: @escaping RequestHandle.Delivery) {
        guard handle.begin(delivering: delivery) else { return }
        let request = urlRequest
        let validStatusCodes = validStatusCodes
        let task = backend.send(backendRequest) { result in
            handle.finish(Self.outcome(of: result, request: request, validStatusCodes: validStatusCodes))
        }
        handle.attach(task)
    }

    /// Sends the request and waits for the answer; cancelling the task cancels the request.
    /// The realm's callback queue plays no part: the caller's task resumes on its own executor.
    func response() async throws -> Response {
        let handle = RequestHandle(request: urlRequest)
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                start(handle) { continuation.resume(with: $0) }
            }
        } onCancel: {
            handle.cancel()
        }
    }

    static func outcome(
        of result: Result<Response, any Error>, request: URLRequest, validStatusCodes: StatusCodes
    ) -> Result<Response, ServiceError> {
        switch result {
        case let .success(response):
            return validStatusCodes.contains(response.statusCode)
                ? .success(response) : .failure(.unacceptableStatusCode(response))
        case let .failure(error):
            return .failure(ServiceError(error, request: request))
        }
    }
}

/// Delivers a failure that happened before anything could be sent, on the realm's callback queue if set.
func deliverEarly(
    _ error: ServiceError, on queue: DispatchQueue?, to delivery: @escaping RequestHandle.Delivery
) -> RequestHandle {
    if let queue {
        queue.async { delivery(.failure(error)) }
    } else {
        delivery(.failure(error))
    }
    return .finished
}
