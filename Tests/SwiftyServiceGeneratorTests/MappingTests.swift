import Testing

@testable import SwiftyServiceGeneratorCore

/// How schemas and operations become Swift, on small descriptions written for each case (the Zoo client's
/// tests check what the code then does).
@Suite struct MappingTests {
    /// The generated files of a description given as YAML text, by path.
    func generate(_ yaml: String, _ configure: (inout GeneratorConfiguration) -> Void = { _ in }) throws -> [String: String] {
        let files = DescriptionFiles(root: try TextInput.read(Array(yaml.utf8)))
        let description = try OpenAPIReader.read(files)
        var configuration = GeneratorConfiguration()
        configure(&configuration)
        let generation = try Generator.generate(
            description, files: files, configuration: configuration, source: "/memory/openapi.yaml")
        return Dictionary(uniqueKeysWithValues: generation.files.map { ($0.path, $0.contents) })
    }

    func description(paths: String = "{}", schemas: String) -> String {
        """
        openapi: 3.1.0
        info: {title: Test, version: '1'}
        paths: \(paths)
        components:
          schemas:
        \(schemas.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """
    }

    @Test func nullableInEveryVersionsSpellingIsAnOptional() throws {
        let files = try generate(
            description(
                schemas: """
                    Owner: {type: object, properties: {name: {type: string}}}
                    Pet:
                      type: object
                      required: [a, b, c, d, e]
                      properties:
                        a: {type: string, nullable: true}
                        b: {type: [string, 'null']}
                        c: {oneOf: [{type: 'null'}, {$ref: '#/components/schemas/Owner'}]}
                        d: {allOf: [{$ref: '#/components/schemas/Owner'}], nullable: true}
                        e: {type: string}
                    """))
        let pet = try #require(files["Models/Pet.swift"])
        #expect(pet.contains("public var a: String?"))
        #expect(pet.contains("public var b: String?"))
        #expect(pet.contains("public var c: Owner?"))
        #expect(pet.contains("public var d: Owner?"))
        #expect(pet.contains("public var e: String\n"))
    }

    @Test func oneOfThatOnlyConstrainsPropertiesIsNoUnion() throws {
        let files = try generate(
            description(
                schemas: """
                    Contact:
                      type: object
                      properties: {email: {type: string}, phone: {type: string}}
                      oneOf: [{required: [email]}, {required: [phone]}]
                    """))
        let contact = try #require(files["Models/Contact.swift"])
        #expect(contact.contains("public struct Contact: Codable, Hashable, Sendable"))
        #expect(contact.contains("public var email: String?"))
    }

    @Test func namesSwiftKeepsForItselfAreAvoided() throws {
        let files = try generate(
            description(
                schemas: """
                    Error: {type: object, properties: {type: {type: string, enum: [a, b]}, self: {type: string}}}
                    Data: {type: string}
                    """))
        let error = try #require(files["Models/ErrorModel.swift"])
        #expect(error.contains("public struct ErrorModel"))
        #expect(error.contains("public var type: ErrorModel.Kind?"))
        #expect(error.contains("public enum Kind: Codable, Hashable, Sendable, RawRepresentable"))
        #expect(error.contains("public var selfValue: String?"))
        #expect(files["Models/DataModel.swift"]?.contains("public typealias DataModel = String") == true)
    }

    @Test func anInlineSchemaWrittenOutAgainIsTheSameType() throws {
        let address = "{type: object, properties: {city: {type: string}, zip: {type: string}}}"
        let files = try generate(
            description(
                schemas: """
                    Customer: {type: object, properties: {billing: \(address), shipping: \(address)}}
                    """))
        let customer = try #require(files["Models/Customer.swift"])
        #expect(customer.contains("public var billing: Customer.Billing?"))
        #expect(customer.contains("public var shipping: Customer.Billing?"))
        #expect(!customer.contains("struct Shipping"))
    }

    @Test func aNestedTypeNeverHidesATopLevelOne() throws {
        let files = try generate(
            description(
                schemas: """
                    Customer: {type: object, properties: {id: {type: string}}}
                    Order:
                      type: object
                      properties:
                        customer: {anyOf: [{type: string}, {$ref: '#/components/schemas/Customer'}]}
                    """))
        let order = try #require(files["Models/Order.swift"])
        #expect(order.contains("public var customer: Order.CustomerValue?"))
        #expect(order.contains("case customer(Customer)"))
    }

    @Test func casesAreNamedAfterTheOperationLessItsTagOrAfterMethodAndPath() throws {
        let files = try generate(
            description(
                paths: """

                      /repos/{owner}/{repo}/contents:
                        get:
                          tags: [repos]
                          operationId: repos/get-content
                          parameters:
                            - {name: owner, in: path, required: true, schema: {type: string}}
                            - {name: repo, in: path, required: true, schema: {type: string}}
                          responses: {'200': {description: ok}}
                      /meta:
                        get:
                          responses: {'200': {description: ok}}
                    """, schemas: "{}"))
        let repos = try #require(files["ReposService.swift"])
        #expect(repos.contains("case getContent(owner: String, repo: String)"))
        #expect(repos.contains(#"case let .getContent(owner, repo): "repos/\(pathSegment: owner)/\(pathSegment: repo)/contents""#))
        #expect(files["TestService.swift"]?.contains("case getMeta") == true)
    }

    @Test func jsonIsPreferredAmongABodysMediaTypes() throws {
        let files = try generate(
            description(
                paths: """

                      /things:
                        post:
                          operationId: addThing
                          requestBody:
                            required: true
                            content:
                              application/xml: {schema: {type: object, properties: {a: {type: string}}}}
                              application/vnd.api+json: {schema: {type: object, properties: {a: {type: string}}}}
                          responses: {'204': {description: ok}}
                    """, schemas: "{}"))
        let service = try #require(files["TestService.swift"])
        #expect(service.contains(#"Test.jsonBody(body, contentType: "application/vnd.api+json")"#))
        #expect(service.contains("case addThing(body: TestService.AddThingRequest)"))
    }
}
