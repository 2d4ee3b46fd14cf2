/// A value kept in one heap allocation that copies share until one of them changes it: a copy costs a
/// retain, however large the value.
struct CopyOnWriteBox<Wrapped> {
    private final class Storage {
        var value: Wrapped
        init(_ value: Wrapped) { self.value = value }
    }

    private var storage: Storage

    init(_ value: Wrapped) {
        storage = Storage(value)
    }

    var value: Wrapped {
        // Read in place: a copy of a large value would retain every one of its fields.
        _read { yield storage.value }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.value) }
            yield &storage.value
        }
    }
}

extension CopyOnWriteBox: @unchecked Sendable where Wrapped: Sendable {}
