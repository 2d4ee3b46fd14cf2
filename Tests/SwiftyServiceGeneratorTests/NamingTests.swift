import Testing

@testable import SwiftyServiceGeneratorCore

/// Swift names from the names descriptions use, as a person would write them.
@Suite struct NamingTests {
    @Test func membersAreLowerCamelCase() {
        let cases = [
            ("pet_id", "petId"), ("petId", "petId"), ("X-Rate-Limit", "xRateLimit"), ("HTTPServer", "httpServer"),
            ("repos/get-content", "reposGetContent"), ("IN_PROGRESS", "inProgress"), ("+1", "plus1"), ("-1", "minus1"),
            ("2fa_enabled", "_2faEnabled"), ("", "value"), ("$ref", "ref"), ("iOS", "iOS"), ("URL", "url"),
            ("v2Beta", "v2Beta"), ("ids[]", "ids"),
        ]
        for (name, expected) in cases { #expect(Naming.lowerCamel(name) == expected, "\(name)") }
    }

    @Test func typesAreUpperCamelCase() {
        let cases = [
            ("basic-error", "BasicError"), ("pet", "Pet"), ("1-Click Applications", "OneClickApplications"),
            ("12factor", "_12factor"), ("BASIC_ERROR", "BasicError"), ("XMLHttpRequest", "XMLHttpRequest"),
        ]
        for (name, expected) in cases { #expect(Naming.upperCamel(name) == expected, "\(name)") }
    }

    @Test func typeNamesSwiftKeepsForItselfGetASuffix() {
        #expect(TypeMapper.typeName("Error") == "ErrorModel")
        #expect(TypeMapper.typeName("data") == "DataModel")
        #expect(TypeMapper.typeName("Response") == "ResponseModel")
        #expect(TypeMapper.typeName("Pet") == "Pet")
    }

    @Test func arrayElementsAreNamedInTheSingular() {
        let cases = [("Pets", "Pet"), ("Policies", "Policy"), ("Addresses", "Address"), ("Status", "StatusItem"), ("Data", "DataItem")]
        for (name, expected) in cases { #expect(Naming.singular(name) == expected, "\(name)") }
    }

    @Test func keywordsAreEscaped() {
        #expect(Naming.escaped("default") == "`default`")
        #expect(Naming.escaped("in") == "`in`")
        #expect(Naming.escaped("name") == "name")
    }

    @Test func aScopeHandsOutEachNameOnce() {
        var scope = NameScope(reserved: ["path"])
        #expect(scope.claim("path") == "path2")
        #expect(scope.claim("list") == "list")
        #expect(scope.claim("list") == "list2")
        #expect(scope.claim("list", avoiding: ["list3"]) == "list4")
    }
}
