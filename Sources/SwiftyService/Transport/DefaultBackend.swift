import Foundation

/// The backend of every realm that sets none: ``CurlBackend`` on Linux, ``URLSessionBackend/shared`` on Apple
/// platforms.
///
/// On Linux, URLSession is FoundationNetworking's layer over libcurl: the same library driven directly does the
/// same requests several times faster and for a fraction of the CPU, and passes the same conformance suite.
/// If libcurl cannot be loaded there, realms fall back to ``URLSessionBackend/shared`` and say so once on
/// standard error. Choose either explicitly with `realm.use(…)`.
public enum DefaultBackend {
    /// The one backend that realms without one share, made when the first of them sends.
    public static let shared: any NetworkBackend = platformDefault()

    /// ``shared``, as realms that set no backend choose it.
    static let chosen = ChosenBackend(shared)

    private static func platformDefault() -> any NetworkBackend {
        #if canImport(FoundationNetworking)
        do {
            return try CurlBackend()
        } catch {
            FileHandle.standardError.write(
                Data("SwiftyService: \(error); realms without a backend use URLSessionBackend.shared\n".utf8))
            return URLSessionBackend.shared
        }
        #else
        return URLSessionBackend.shared
        #endif
    }
}

/// A realm's backend, and what it can do beyond ``NetworkBackend``, found once as it is chosen rather than
/// cast for every request.
struct ChosenBackend: Sendable {
    let backend: any NetworkBackend
    /// The same backend, when it can carry out an awaited request on the sender's thread.
    let driven: (any CallerDrivenBackend)?

    init(_ backend: any NetworkBackend) {
        self.backend = backend
        driven = backend as? any CallerDrivenBackend
    }
}
