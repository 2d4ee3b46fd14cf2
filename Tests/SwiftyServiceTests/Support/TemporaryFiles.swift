import Foundation

/// A test's own directory in the temporary directory, for every file and directory the test makes there:
/// it goes, with everything in it, when the last reference to it goes. A suite keeps one in a property, and
/// Swift Testing makes an instance of the suite for each test (each case of a parameterized one) and lets it
/// go once the test has returned: after the test's last await, so a server or a transfer that uses a file
/// until then still finds it. A closure that captures the suite and outlives the test (one a realm's backend
/// or middleware keeps: realms live as long as the process) would keep the directory as long.
final class TemporaryFiles: Sendable {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("swiftyservice-tests-\(UUID().uuidString)")

    /// A path in ``directory`` that no other call returns, `label` and a UUID. Nothing is made at the path,
    /// as a test may be there to see a download make it; ``directory`` is, so that a file can go right there.
    func uniquePath(_ label: String) -> URL {
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("\(label)-\(UUID().uuidString)")
    }

    deinit {
        // Once more if the first pass failed: a cancelled download winding down beside the test can remove or
        // add a file while that pass walks the directory, and the pass then gives up.
        if (try? FileManager.default.removeItem(at: directory)) == nil {
            try? FileManager.default.removeItem(at: directory)
        }
    }
}
