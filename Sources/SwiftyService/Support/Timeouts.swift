import Foundation

extension TimeInterval {
    /// The longest timeout passed to a backend, about 116 days: a longer one (`.infinity` among them) counts
    /// as this, because URLSession on Linux and libcurl turn timeouts into integers and trap past their range.
    package static let longestTimeout: TimeInterval = 10_000_000

    /// This request timeout as every transport takes it alike: one that is not more than 0 (NaN too) is
    /// URLRequest's default, 60 s — URLSession would time out at once, libcurl never; more than
    /// ``longestTimeout`` is that.
    package var usableTimeout: TimeInterval { self > 0 ? Swift.min(self, .longestTimeout) : 60 }
}

extension TimeInterval {
    /// `7 s`, `0.5 s`, `inf s`: whole seconds without a decimal point. Int(_:) would trap on NaN, infinities
    /// and values past its range, and these come from settings and backends, which may hold any of them.
    var secondsDescription: String {
        rounded() == self && abs(self) < 1e15 ? "\(Int(self)) s" : "\(self) s"
    }
}
