import Foundation

extension String {
    /// The URL as error messages show it: whole up to 1,000 characters, cut there beyond with its length.
    var abbreviatedURL: String {
        guard utf8.count > 1_024 else { return self }
        return "\(prefix(1_000))…(\(utf8.count) characters)"
    }
}

extension URL {
    /// The URL of what has none: an exchange that never began, a head made without a request URL.
    static let placeholder = URL(string: "about:blank")!
}
