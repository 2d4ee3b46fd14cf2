import Foundation

/// A one-shot timer that can be called off, freeing its closure at once (`asyncAfter` would hold it until the
/// deadline, however long before that the work it guards ended). Its owner keeps it: a deadline let go of
/// is called off.
final class Deadline: @unchecked Sendable {
    // DispatchSourceTimer is thread-safe (cancel may race the handler); it is not annotated Sendable.
    private let timer: any DispatchSourceTimer

    /// Runs `action` on a global queue after `seconds`, unless cancelled first.
    init(after seconds: TimeInterval, _ action: @escaping @Sendable () -> Void) {
        timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + seconds)
        // The handler does not capture the timer: a fired one-shot timer then holds nothing but `action`
        // until the owner lets go of the deadline.
        timer.setEventHandler(handler: action)
        timer.activate()
    }

    /// Calls the deadline off; the action does not run unless it has started already.
    func cancel() { timer.cancel() }

    deinit { timer.cancel() }
}
