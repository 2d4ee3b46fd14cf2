import Foundation

/// Locks that objects share for the parts they make once asked for (a response head's fields, a request's
/// `URLRequest`): a lock of each object's own would cost every one of them an allocation, for parts that few
/// are ever asked for.
enum SharedLocks {
    private static let locks: [NSLock] = (0..<16).map { _ in NSLock() }

    /// The lock of `object`: the same one every time.
    static func lock(for object: AnyObject) -> NSLock {
        // Objects are 16-byte aligned: the bits above those pick the lock.
        locks[Int((UInt(bitPattern: ObjectIdentifier(object)) >> 4) & 15)]
    }
}
