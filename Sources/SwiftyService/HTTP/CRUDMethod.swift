/// The four operations of a REST resource; a realm's ``CRUDMap`` turns each into an HTTP method.
public enum CRUDMethod: String, CaseIterable, Hashable, Sendable {
    /// Makes a new resource (POST by default).
    case create
    /// Reads one resource or the collection (GET by default).
    case retrieve
    /// Replaces a resource (PUT by default).
    case update
    /// Deletes a resource (DELETE by default).
    case destroy
}

/// How a realm sends each CRUD method over HTTP.
public typealias CRUDMap = [CRUDMethod: HTTPMethod]

/// Header names and values, as users write them.
public typealias HTTPHeaderDictionary = [String: String]
