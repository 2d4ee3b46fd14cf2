/// Reads a Swagger 2.0 document into the same description an OpenAPI 3 one makes.
struct SwaggerReader {
    let files: DescriptionFiles

    func read() throws -> APIDescription {
        throw DescriptionError(message: "Swagger 2.0 is not supported yet")
    }
}
