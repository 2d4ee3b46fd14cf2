/// A value behind one reference, for a struct that is copied more often than changed: a copy of the struct is
/// then one retain, however many references the value holds. Changed only through ``unique(_:)``, which
/// copies the value first when the box is shared, so no two holders ever see one instance change.
final class CopyOnWriteBox<Value: Sendable>: @unchecked Sendable {
    var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// `box` itself when nothing else holds it; otherwise a box of its own with a copy of the value, put in
    /// its place.
    static func unique(_ box: inout CopyOnWriteBox) -> CopyOnWriteBox {
        if !isKnownUniquelyReferenced(&box) { box = CopyOnWriteBox(box.value) }
        return box
    }
}
