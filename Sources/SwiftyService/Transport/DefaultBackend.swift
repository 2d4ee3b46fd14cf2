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
