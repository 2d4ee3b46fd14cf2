import Foundation
import SwiftyService
import SwiftyServiceTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The client generated from the generator's test description (`Zoo/`, from
/// Tests/SwiftyServiceGeneratorTests/Resources/Fixtures/zoo/openapi.yaml): the requests it builds, the models it
/// reads and writes, its typed answers and error bodies, and the credentials it sends.
///
/// Serialized: the endpoints share the realm `zoo`, which some tests configure.
@Suite(.serialized) struct ZooClientTests {
    static let date = Date(timeIntervalSince1970: 1_700_000_000)  // 2023-11-14T22:13:20Z
    static let uuid = UUID(uuidString: "00000000-0000-4000-8000-000000000001")!

    init() { Zoo.realm.reset() }

    // MARK: Requests

    @Test func parametersGoWhereTheDescriptionPutsThemInTheirStyle() throws {
        let request = try AnimalsService.list(
            xRequestID: Self.uuid, limit: 10, kind: .bird, tags: ["a b", "c"], ids: [1, 2], names: ["x", "y"],
            filter: AnimalsService.ListFilter(born: Self.date, heavy: true), since: Self.date, session: "s1"
        ).urlRequest()
        #expect(
            request.url?.absoluteString
                == "https://eu.zoo.example.com/v2/animals?filter%5Bborn%5D=2023-11-14&filter%5Bheavy%5D=true"
                + "&ids=1%2C2&kind=bird&limit=10&names=x%7Cy&since=2023-11-14T22%3A13%3A20Z&tags=a%20b&tags=c")
        #expect(request.httpMethod == "GET")
        #expect(request.value(forHTTPHeaderField: "X-Request-ID") == "00000000-0000-4000-8000-000000000001")
        #expect(request.value(forHTTPHeaderField: "Cookie") == "session=s1")
    }

    @Test func optionalParametersLeftOutAreNotSent() throws {
        let request = try AnimalsService.list(xRequestID: Self.uuid).urlRequest()
        #expect(request.url?.absoluteString == "https://eu.zoo.example.com/v2/animals")
        #expect(request.value(forHTTPHeaderField: "Cookie") == nil)
    }

    @Test func aPathParameterIsExactlyOneSegment() throws {
        let request = try AnimalsService.get(animalId: "a/b c?").urlRequest()
        #expect(request.url?.absoluteString == "https://eu.zoo.example.com/v2/animals/a%2Fb%20c%3F")
        #expect(throws: ServiceError.self) { try AnimalsService.get(animalId: "..").urlRequest() }
    }

    @Test func aJSONBodyIsTheModelWithItsDatesAsTheDescriptionSays() throws {
        let animal = Animal(name: "Rex", kind: .mammal, born: Self.date, seen: Self.date, default: true, type: "dog")
        let request = try AnimalsService.create(body: animal).urlRequest()
        #expect(request.httpMethod == "POST")
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(
            String(decoding: try #require(request.httpBody), as: UTF8.self)
                == #"{"@type":"dog","born":"2023-11-14","default":true,"kind":"mammal","name":"Rex","seen":"2023-11-14T22:13:20Z"}"#
        )
    }

    @Test func aBodyOfAnotherJSONTypeIsSentAsThatType() throws {
        let animal = Animal(name: "Rex", kind: .mammal, born: Self.date)
        let request = try AnimalsService.update(animalId: "1", body: animal).urlRequest()
        #expect(request.httpMethod == "PATCH")
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/merge-patch+json")
        #expect(try AnimalsService.update(animalId: "1").urlRequest().httpBody == nil)
    }

    @Test func binaryTextFormAndMultipartBodiesAreSentAsDescribed() throws {
        let photo = try AnimalsService.uploadPhoto(animalId: "1", body: Data([1, 2, 3])).urlRequest()
        #expect(photo.value(forHTTPHeaderField: "Content-Type") == "image/png")
        #expect(photo.httpBody == Data([1, 2, 3]))

        let form = try KeepersService.hire(body: KeepersService.HireRequest(name: "Ann Lee", shifts: ["early", "late"]))
            .urlRequest()
        #expect(form.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded; charset=utf-8")
        #expect(form.httpBody == Data("name=Ann%20Lee&shifts=early&shifts=late".utf8))

        let note = try KeepersService.addNote(keeperId: 7, body: "fed at noon").urlRequest()
        #expect(note.url?.path == "/v2/keepers/7/notes")
        #expect(note.value(forHTTPHeaderField: "Content-Type") == "text/plain")
        #expect(note.httpBody == Data("fed at noon".utf8))

        let record = AnimalsService.AddRecordRequest(
            note: "healthy", scan: Data("SCAN".utf8), tags: ["a", "b"], meta: AnimalsService.AddRecordRequest.Meta(weight: 3))
        let multipart = try AnimalsService.addRecord(animalId: "1", body: record).urlRequest()
        let contentType = try #require(multipart.value(forHTTPHeaderField: "Content-Type"))
        #expect(contentType.hasPrefix("multipart/form-data; boundary="))
        let body = String(decoding: try #require(multipart.httpBody), as: UTF8.self)
        #expect(body.contains("name=\"note\"\r\n\r\nhealthy\r\n"))
        #expect(body.contains("name=\"scan\"; filename=\"scan\"\r\nContent-Type: image/jpeg\r\n\r\nSCAN\r\n"))
        #expect(body.components(separatedBy: "name=\"tags\"").count == 3)
        #expect(body.contains("name=\"meta\"\r\nContent-Type: application/json\r\n\r\n{\"weight\":3}\r\n"))
    }

    @Test func anOperationWithServersOfItsOwnGoesThere() throws {
        let request = try ZooService.getReportsByYearByQuarter(year: 2024, quarter: .q1).urlRequest()
        #expect(request.url?.absoluteString == "https://reports.zoo.example.com/reports/2024/q1")
    }

    @Test func theRealmsBaseURLWinsOverTheDescriptionsServer() throws {
        Zoo.configure(baseURL: Zoo.productionServer(region: "us", version: "v3"))
        #expect(try ZooService.ping.urlRequest().url?.absoluteString == "https://us.zoo.example.com/v3/health")
        #expect(Zoo.localServer?.absoluteString == "http://localhost:8080")
    }

    @Test func everySampleBuildsItsRequest() throws {
        let samples: [(String, any SwiftyServiceProtocol)] =
            AnimalsService.samples.map { ($0.operation, $0.endpoint) } + KeepersService.samples.map { ($0.operation, $0.endpoint) }
            + ZooService.samples.map { ($0.operation, $0.endpoint) }
        #expect(samples.count == 11)
        for (operation, endpoint) in samples {
            let request = try endpoint.urlRequest()
            #expect(request.httpMethod == String(operation.split(separator: " ")[0]), "\(operation)")
        }
    }

    // MARK: Models

    @Test func modelsReadTheDescriptionsJSONAndKeepWhatTheyDoNotKnow() throws {
        let json = #"""
            {"id": "00000000-0000-4000-8000-000000000001", "name": "Rex", "kind": "fish", "born": "2020-02-29",
             "seen": "2023-11-14T23:13:20.5+01:00", "size": 7, "@type": "lion", "default": false, "legacyCode": "L1",
             "diet": {"type": "meat", "prey": "zebra"}, "attributes": {"a": "b"}, "extra": {"x": [1, "y", null]},
             "parent": {"name": "Old Rex", "kind": "mammal", "born": "2010-01-01"}, "photo": "AQID"}
            """#
        let animal = try Zoo.decoder.decode(Animal.self, from: Data(json.utf8))
        #expect(animal.id == Self.uuid)
        #expect(animal.kind == .unknown("fish"))
        #expect(animal.size == .unknown(7))
        #expect(animal.seen == Self.date.addingTimeInterval(0.5))
        #expect(animal.type == "lion")
        #expect(animal.default == false)
        #expect(animal.diet == .carnivore(Carnivore(type: "meat", prey: "zebra")))
        #expect(animal.attributes == ["a": "b"])
        #expect(animal.extra == .object(["x": .array([.number(1), .string("y"), .null])]))
        #expect(animal.parent?.name == "Old Rex")
        #expect(animal.photo == Data([1, 2, 3]))
        let written = try Zoo.encoder.encode(animal)
        let again = try Zoo.decoder.decode(Animal.self, from: written)
        #expect(again == animal)
        let object = try JSONSerialization.jsonObject(with: written) as! [String: Any]
        #expect(object["born"] as? String == "2020-02-29")
        #expect(object["kind"] as? String == "fish")
        #expect(object["legacyCode"] as? String == "L1")
    }

    @Test func aUnionReadsTheCaseItsDiscriminatorNames() throws {
        #expect(
            try Zoo.decoder.decode(Diet.self, from: Data(#"{"type": "plants", "plants": ["hay"]}"#.utf8))
                == .herbivore(Herbivore(type: "plants", plants: ["hay"])))
        #expect(throws: DecodingError.self) {
            try Zoo.decoder.decode(Diet.self, from: Data(#"{"type": "insects"}"#.utf8))
        }
    }

    @Test func aUnionWithoutDiscriminatorReadsTheFirstCaseThatFits() throws {
        #expect(try Zoo.decoder.decode(Measurement.self, from: Data("3.5".utf8)) == .number(3.5))
        #expect(try Zoo.decoder.decode(Measurement.self, from: Data(#""tall""#.utf8)) == .string("tall"))
        #expect(throws: DecodingError.self) { try Zoo.decoder.decode(Measurement.self, from: Data("[]".utf8)) }
    }

    @Test func membersTheDescriptionDoesNotNameAreKept() throws {
        let tagged = try Zoo.decoder.decode(Tagged.self, from: Data(#"{"id": 1, "a": 2, "b": 3}"#.utf8))
        #expect(tagged.id == 1)
        #expect(tagged.additionalProperties == ["a": 2, "b": 3])
        let written = try JSONSerialization.jsonObject(with: try Zoo.encoder.encode(tagged)) as! [String: Int]
        #expect(written == ["id": 1, "a": 2, "b": 3])
    }

    @Test func allOfMergesItsParts() throws {
        let problem = try Zoo.decoder.decode(
            Problem.self, from: Data(#"{"title": "Invalid", "status": 422, "errors": {"name": ["empty"]}}"#.utf8))
        #expect(problem.title == "Invalid")
        #expect(problem.status == 422)
        #expect(problem.errors == ["name": ["empty"]])
    }

    @Test func aSchemaInAnotherFileIsAModelOfItsOwn() throws {
        let report = try Zoo.decoder.decode(
            Report.self,
            from: Data(#"{"year": 2024, "quarter": "bird", "visitors": 12, "period": {"from": "2024-01-01"}}"#.utf8))
        #expect(report.quarter == .bird)
        #expect(report.period?.from == Date(timeIntervalSince1970: 1_704_067_200))
    }

    // MARK: Answers

    @Test func aTypedEndpointAnswersWithTheModel() async throws {
        let stub = StubBackend { _ in .json(#"{"name": "Rex", "kind": "mammal", "born": "2020-01-01"}"#) }
        let animal = try await AnimalsService.Typed.get(animalId: "1").override { $0.use(stub) }.request()
        #expect(animal.name == "Rex")
        let none = try await AnimalsService.Typed.delete(animalId: "1").override { $0.use(StubBackend { _ in .status(204) }) }
            .request()
        #expect(none == NoContent())
    }

    @Test func aFailedAnswersBodyIsTheDescriptionsErrorModel() async throws {
        let stub = StubBackend { _ in .json(#"{"title": "No such animal", "status": 404}"#, statusCode: 404) }
        do {
            _ = try await AnimalsService.Typed.get(animalId: "9").override { $0.use(stub) }.request()
            Issue.record("a 404 succeeded")
        } catch let error as ServiceError {
            #expect(error.errorBody(as: Problem.self)?.title == "No such animal")
        }
    }

    // MARK: Credentials

    @Test func eachEndpointIsSentWithTheCredentialsItsSecurityAsksFor() async throws {
        let stub = StubBackend { _ in .status(204) }
        Zoo.configure(
            credentials: Zoo.Credentials(
                apiKey: { "header-key" }, queryKey: { "query key" }, cookieKey: { "c00kie" },
                basic: Zoo.Credentials.basicAuthentication(user: "user", password: "pass")))
        Zoo.realm.use(stub)
        _ = try await AnimalsService.list(xRequestID: Self.uuid).request()
        _ = try await AnimalsService.delete(animalId: "1").request()
        _ = try await ZooService.ping.request()
        _ = try await KeepersService.hire(body: KeepersService.HireRequest(name: "Ann")).request()
        _ = try await KeepersService.addNote(keeperId: 1, body: "fed").request()
        let sent = stub.received.map(\.urlRequest)
        #expect(sent.count == 5)
        #expect(sent[0].value(forHTTPHeaderField: "X-API-Key") == "header-key")
        #expect(sent[1].url?.query == "key=query%20key")
        #expect(sent[1].value(forHTTPHeaderField: "X-API-Key") == nil)
        #expect(sent[2].value(forHTTPHeaderField: "X-API-Key") == nil && sent[2].url?.query == nil)
        #expect(sent[3].value(forHTTPHeaderField: "Authorization") == "Basic dXNlcjpwYXNz")
        #expect(sent[4].value(forHTTPHeaderField: "Cookie") == "zoo_session=c00kie")
    }

    @Test func aBearerTokenComesFromTheAppsTokenAuthentication() async throws {
        let stub = StubBackend { _ in .status(204) }
        Zoo.configure(credentials: Zoo.Credentials(bearer: TokenAuthentication(initial: AccessToken("t1")) { AccessToken("t2") }))
        Zoo.realm.use(stub)
        _ = try await AnimalsService.delete(animalId: "1").request()
        _ = try await AnimalsService.get(animalId: "1").request()
        #expect(stub.received[0].urlRequest.value(forHTTPHeaderField: "Authorization") == nil)
        #expect(stub.received[1].urlRequest.value(forHTTPHeaderField: "Authorization") == "Bearer t1")
    }
}
