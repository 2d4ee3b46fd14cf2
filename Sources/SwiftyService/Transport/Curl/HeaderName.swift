/// A header name that hashes and compares as HTTP does: ASCII letters in either case are the same.
struct HeaderName: Hashable {
    /// The name as the server spelled it.
    let text: String
    /// FNV-1a of the name with ASCII letters in lower case, made once: hashing byte by byte into the
    /// dictionary's `Hasher` was the loop thread's costliest Swift code per response.
    private let folded: UInt64

    init(_ text: String) {
        self.text = text
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte)) &* 0x100_0000_01b3
        }
        folded = hash
    }

    static func == (a: HeaderName, b: HeaderName) -> Bool {
        a.folded == b.folded && sameName(a.text, b.text)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(folded)
    }

    /// ASCII case-insensitive comparison of header names.
    private static func sameName(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count
            && zip(a.utf8, b.utf8).allSatisfy {
                $0 == $1 || ($0 | 0x20 == $1 | 0x20 && ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A)
            }
    }
}
