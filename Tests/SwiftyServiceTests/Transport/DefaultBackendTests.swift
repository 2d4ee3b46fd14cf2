import Foundation
import SwiftyService
import Testing

/// What a realm that sets no backend sends with: libcurl directly on Linux, URLSession on Apple platforms. The
/// conformance suite checks both backends, so the default behaves as they do.
@Suite struct DefaultBackendTests {
    @Test func aRealmThatSetsNoBackendUsesThePlatformsDefault() {
        let backend = uniqueRealm().backend
        #if canImport(FoundationNetworking)
        #expect(
            backend is CurlBackend,
            "Linux: CurlBackend, as libcurl is present wherever FoundationNetworking is")
        #else
        #expect(backend is URLSessionBackend)
        #endif
    }

    @Test func realmsThatSetNoBackendShareOne() {
        let first = identity(of: uniqueRealm().backend)
        #expect(first != nil)
        #expect(first == identity(of: uniqueRealm().backend))
    }

    @Test func aRealmThatSetsABackendKeepsIt() {
        let realm = uniqueRealm().use(URLSessionBackend.shared)
        #expect(identity(of: realm.backend) == ObjectIdentifier(URLSessionBackend.shared))
    }
}

/// Which instance a shipped backend is.
private func identity(of backend: any NetworkBackend) -> ObjectIdentifier? {
    if let curl = backend as? CurlBackend { return ObjectIdentifier(curl) }
    if let session = backend as? URLSessionBackend { return ObjectIdentifier(session) }
    return nil
}
