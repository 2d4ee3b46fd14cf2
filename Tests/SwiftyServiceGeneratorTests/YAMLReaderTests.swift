import Testing

@testable import SwiftyServiceGeneratorCore
