#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if canImport(Darwin)
typealias LockPrimitive = os_unfair_lock
#else
typealias LockPrimitive = pthread_mutex_t
#endif

/// A value and its lock in one allocation; every piece of shared mutable state in the package lives in one.
///
/// Critical sections only copy or swap values, so no lock is ever held across a call out of the package.
struct Locked<Value>: @unchecked Sendable {
    private let storage: LockedStorage<Value>

    private init(_ storage: LockedStorage<Value>) { self.storage = storage }

    static func make(_ value: Value) -> Locked<Value> { Locked(.make(value)) }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try storage.withLock(body)
    }

    /// `body`'s result, or `nil` without waiting when another thread holds the lock.
    func withLockIfAvailable<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result? {
        try storage.withLockIfAvailable(body)
    }

    var value: Value { withLock { $0 } }
}

final class LockedStorage<Value>: ManagedBuffer<Value, LockPrimitive> {
    static func make(_ value: Value) -> LockedStorage<Value> {
        let buffer = create(minimumCapacity: 1) { _ in value }
        let storage = unsafeDowncast(buffer, to: LockedStorage<Value>.self)
        storage.withUnsafeMutablePointerToElements { lock in
            #if canImport(Darwin)
            lock.initialize(to: os_unfair_lock())
            #else
            lock.initialize(to: pthread_mutex_t())
            pthread_mutex_init(lock, nil)
            #endif
        }
        return storage
    }

    // ManagedBuffer destroys the header (the value) itself; the lock is ours to tear down.
    deinit {
        withUnsafeMutablePointerToElements { lock in
            #if !canImport(Darwin)
            pthread_mutex_destroy(lock)
            #endif
            _ = lock.deinitialize(count: 1)
        }
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try withUnsafeMutablePointers { value, lock in
            #if canImport(Darwin)
            os_unfair_lock_lock(lock)
            defer { os_unfair_lock_unlock(lock) }
            #else
            pthread_mutex_lock(lock)
            defer { pthread_mutex_unlock(lock) }
            #endif
            return try body(&value.pointee)
        }
    }

    func withLockIfAvailable<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result? {
        try withUnsafeMutablePointers { value, lock in
            #if canImport(Darwin)
            guard os_unfair_lock_trylock(lock) else { return nil }
            defer { os_unfair_lock_unlock(lock) }
            #else
            guard pthread_mutex_trylock(lock) == 0 else { return nil }
            defer { pthread_mutex_unlock(lock) }
            #endif
            return try body(&value.pointee)
        }
    }
}
