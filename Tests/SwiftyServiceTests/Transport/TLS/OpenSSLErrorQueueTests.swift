import Foundation
import SwiftyService
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#endif

/// OpenSSL keeps its errors per thread, and libcurl 7.88 leaves one behind when it closes a connection whose
/// handshake failed ("shutdown while in init"). The next failure on that thread took the old error as its
/// reason: a legacy PKCS#12 bundle "could not be parsed" for "shutdown while in init" instead of
/// "unsupported". The threads are the loop's and the callers' that drive their own awaited requests.
@Suite("OpenSSL's error queue", .timeLimit(.minutes(5)), .tags(.realServer))
struct OpenSSLErrorQueueTests {
    /// A GET for TLS 1.3 at least to the listener that speaks TLS 1.2 only: the server ends the handshake
    /// with an alert, and libcurl's `SSL_shutdown` of the unfinished connection queues "shutdown while in init".
    func failHandshake(on backend: CurlBackend) async throws -> ServiceError? {
        let policy = try TLSFixtures.trustingCA { $0.minimumVersion = .tls1_3 }
        return try await failure(of: "version", at: "TLS_12_ONLY_URL", on: backend, under: policy)
    }

    /// A GET with the legacy bundle, which OpenSSL 3 cannot decrypt: the error should say so.
    func sendLegacyBundle(on backend: CurlBackend) async throws -> ServiceError? {
        let identity = try ClientIdentity.pkcs12(
            contentsOf: try TLSFixtures.file("TLS_CLIENT_LEGACY_P12"),
            passphrase: try TLSFixtures.value("TLS_CLIENT_P12_PASSPHRASE"))
        let policy = try TLSFixtures.trustingCA { $0.clientIdentity = identity }
        return try await failure(of: "legacy", at: "TLS_CLIENT_CERT_REQUIRED_URL", on: backend, under: policy)
    }

    /// How a GET of `path` from the listener in `variable` failed; an answer is an issue.
    func failure(of path: String, at variable: String, on backend: CurlBackend, under policy: TLSPolicy)
        async throws -> ServiceError?
    {
        let realm = uniqueRealm(path).setBaseURL(try TLSServers.url(variable)).use(backend).setTimeout(10)
            .setTLSPolicy(policy)
        do {
            let response = try await TestEndpoint(realm, path).request()
            Issue.record("\(variable) answered \(path) with \(response.statusCode)")
            return nil
        } catch let error as ServiceError {
            return error
        }
    }

    @Test func aFailedHandshakeLendsNoReasonToTheNextFailureOnTheSameBackend() async throws {
        let backend = try CurlBackend()
        for _ in 0..<5 {
            let refused = try #require(try await failHandshake(on: backend))
            #expect(refused.description.contains("protocol version"), "\(refused)")
            let legacy = try #require(try await sendLegacyBundle(on: backend))
            #expect(legacy.description.localizedCaseInsensitiveContains("unsupported"), "\(legacy)")
            #expect(!legacy.description.contains("shutdown while in init"), "\(legacy)")
        }
    }

    /// The second backend's request may be driven on the thread that drove the first one's: the caller's.
    @Test func aFailedHandshakeLendsNoReasonToTheNextFailureOnAnotherBackend() async throws {
        for _ in 0..<20 {
            _ = try await failHandshake(on: try CurlBackend())
            let legacy = try #require(try await sendLegacyBundle(on: try CurlBackend()))
            #expect(legacy.description.localizedCaseInsensitiveContains("unsupported"), "\(legacy)")
        }
    }

    /// The thread an awaited request was driven on is the caller's, not the library's: it is handed back
    /// with nothing in OpenSSL's queue. The caller here is a task on another backend's thread, so that the
    /// test looks at the very thread that drove the request. The refusal takes about as long as the
    /// millisecond a caller drives its request for (1.5–1.8 ms here, the request built and sent included):
    /// without the emptying, most of the ten left "shutdown while in init" on the caller's thread; one the
    /// loop's thread finished instead leaves nothing there to find.
    @Test func theCallersThreadIsHandedBackWithOpenSSLsQueueEmpty() async throws {
        let peek = try #require(OpenSSLErrors.peek, "libcurl loaded no OpenSSL")
        let host = try CurlBackend()
        let left = try await Task(executorPreference: host.executor) {
            var left: [UInt] = []
            for _ in 0..<10 {
                // A new backend each time, whose thread has gone idle: a backend whose caller waited past
                // the millisecond hands the next few requests to its own thread, as does a busy one.
                let backend = try CurlBackend()
                try await Task.sleep(for: .milliseconds(20))
                _ = try await failHandshake(on: backend)
                left.append(peek())
            }
            return left
        }.value
        #expect(left == Array(repeating: 0, count: 10))
    }
}

/// OpenSSL's `ERR_peek_error`, found through libcurl's handle as the library finds its functions.
enum OpenSSLErrors {
    static let peek: (@convention(c) () -> UInt)? = {
        guard let library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL),
            let function = dlsym(library, "ERR_peek_error")
        else { return nil }
        return unsafeBitCast(function, to: (@convention(c) () -> UInt).self)
    }()
}
