// `CurlBackend` now lives in SwiftyService itself, which uses it by default on Linux. This module stays so that
// code that imports SwiftyServiceCurl keeps building unchanged.
@_exported import SwiftyService
