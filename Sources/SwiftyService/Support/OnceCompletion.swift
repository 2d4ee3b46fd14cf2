/// A completion that runs once: the first call passes, every later one does nothing. Backends keep their
/// promise of exactly one answer with it, whatever races they have inside (an answer and a cancellation, a
/// timer and a transfer).
package final class OnceCompletion<Value: Sendable>: Sendable {
    private let completion: Locked<(@Sendable (Value) -> Void)?>

    package init(_ completion: @escaping @Sendable (Value) -> Void) {
        self.completion = .make(completion)
    }

    /// Calls the completion with `value`, unless it was called (or taken) already.
    package func callAsFunction(_ value: Value) {
        take()?(value)
    }

    /// The completion, for the one caller that gets it first — to call later, elsewhere; `nil` for the others.
    package func take() -> (@Sendable (Value) -> Void)? {
        completion.withLock { completion in
            defer { completion = nil }
            return completion
        }
    }

    /// Whether the completion was called or taken.
    package var isSpent: Bool { completion.withLock { $0 == nil } }
}
