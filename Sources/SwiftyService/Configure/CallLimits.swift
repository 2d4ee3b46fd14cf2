import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The explicit choice of no limit where a setting has a default one:
/// `.setMaxResponseSize(.unlimited)`, `.setResourceTimeout(.unlimited)`.
public enum NoLimit: Sendable {
    /// No limit at all: the realm accepts whatever the server sends, for as long as it takes.
    case unlimited
}

/// What one settings layer says about a limit that has a default: a value, the default (`nil` given to
/// the setter, which inside an override means the default, not the realm's value), or none.
enum LimitSetting<Value: Sendable>: Sendable {
    case value(Value)
    case `default`
    case unlimited

    init(_ value: Value?) {
        self = value.map { .value($0) } ?? .default
    }
}

/// How a call keeps its answer, which decides the limits it gets when the realm sets none.
///
/// Buffered calls hold the body in memory and are meant to be quick: they get
/// ``RealmConfiguration/defaultMaxResponseSize`` and a deadline of
/// ``RealmConfiguration/defaultResourceTimeoutFactor`` times the timeout. An upload from a file takes as long
/// as the file and the link make it: it keeps the size cap (its answer is in memory) but gets no default
/// deadline. A download to a file and a stream keep their own bounds (the disk; line and event sizes) and get
/// neither default.
enum CallMode: Sendable {
    case buffered
    case uploadFromFile
    case downloadToFile
    case stream

    /// The mode of a request sent with `request()` or `transfer()`, as its endpoint declares it.
    init(downloadsToFile: Bool, uploadsFromFile: Bool) {
        self = downloadsToFile ? .downloadToFile : uploadsFromFile ? .uploadFromFile : .buffered
    }
}

/// The limits a request's layers chose, kept so that each way of sending it (a plain request, a stream) gets its
/// own: ``maxResponseSize(for:)`` and ``resourceTimeout(for:)``.
struct RequestLimits: Sendable {
    /// The topmost layer's choice, if any layer made one.
    let size: LimitSetting<Int>?
    let deadline: LimitSetting<TimeInterval>?
    /// The request's timeout (the longest silence), which the default deadline is a multiple of.
    let timeout: TimeInterval

    /// The largest body kept in memory for a call of `mode`; `nil` for none.
    func maxResponseSize(for mode: CallMode) -> Int? {
        switch size ?? .default {
        case let .value(bytes): bytes
        case .unlimited: nil
        case .default:
            mode == .buffered || mode == .uploadFromFile ? RealmConfiguration.defaultMaxResponseSize : nil
        }
    }

    /// The deadline of the whole call of `mode`, retries included; `nil` for none. Not checked: a value that
    /// is no number of seconds more than 0 fails the request when it is built (``Timeouts``).
    func resourceTimeout(for mode: CallMode) -> TimeInterval? {
        switch deadline ?? .default {
        case let .value(seconds): seconds
        case .unlimited: nil
        case .default:
            mode == .buffered
                ? min(timeout * RealmConfiguration.defaultResourceTimeoutFactor, .longestTimeout) : nil
        }
    }
}

extension SettingsStack {
    /// The limits the layers chose for a request whose timeout is `timeout`.
    func limits(timeout: TimeInterval) -> RequestLimits {
        RequestLimits(
            size: top { $0.maxResponseSize }, deadline: top { $0.resourceTimeout }, timeout: timeout)
    }
}

extension ServiceError {
    /// The request ended by its deadline: `.timedOut`, whose request carries the deadline as its timeout, so
    /// that the error names the limit that ended it.
    static func deadlinePassed(_ request: URLRequest, after seconds: TimeInterval) -> ServiceError {
        var named = request
        named.timeoutInterval = seconds
        return .timedOut(named)
    }
}
