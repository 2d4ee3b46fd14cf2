extension HeaderFields {
    /// The first field that may not be sent, and why.
    func firstInvalid() -> ServiceError.InvalidRequestReason? {
        for field in fields {
            if !HTTPToken.isValid(field.name) { return .invalidHeaderName(field.name) }
            if !Self.isValidValue(field.value) { return .invalidHeaderValue(name: field.name) }
        }
        return nil
    }
}
