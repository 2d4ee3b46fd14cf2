import Foundation

/// Lays the generated code out in files, each with its header and imports.
struct FileEmitter {
    let namespace: String
    let access: String
    let description: APIDescription
    let realmKey: String
    let source: String
    let configuration: GeneratorConfiguration

    private var header: String {
        let file = URL(fileURLWithPath: source).lastPathComponent
        var title = description.title
        if !description.version.isEmpty { title += " \(description.version)" }
        return "\(Generator.marker) from \(file) (\(title)); do not edit."
    }

    private func file(_ path: String, networking: Bool, library: Bool, _ body: (inout SwiftWriter) -> Void)
        -> GeneratedFile
    {
        var writer = SwiftWriter()
        writer.line(header)
        writer.line()
        writer.line("import Foundation")
        if library { writer.line("import SwiftyService") }
        if networking {
            writer.line()
            writer.line("#if canImport(FoundationNetworking)")
            writer.line("import FoundationNetworking")
            writer.line("#endif")
        }
        writer.line()
        body(&writer)
        return GeneratedFile(path: path, contents: writer.text)
    }

    func files(groups: [EndpointGroup], models: [ModelDecl]) -> [GeneratedFile] {
        let modelEmitter = ModelEmitter(namespace: namespace, access: access)
        let endpointEmitter = EndpointEmitter(
            namespace: namespace, access: access, models: modelEmitter,
            secured: description.securitySchemes.contains { if case .unsupported = $0.kind { false } else { true } })
        let support = SupportEmitter(namespace: namespace, access: access, realmKey: realmKey, description: description)
        let multipart = multipartModels(groups)
        var files: [GeneratedFile] = []
        let base = configuration.layout == .grouped ? configuration.groupedFileName ?? namespace : namespace
        files.append(
            file("\(base).swift", networking: endpointEmitter.secured, library: true) { support.emit(into: &$0) })
        switch configuration.layout {
        case .files:
            var used = Set<String>([namespace.lowercased()])
            func unique(_ name: String) -> String {
                var candidate = name
                var number = 2
                while !used.insert(candidate.lowercased()).inserted {
                    candidate = "\(name)\(number)"
                    number += 1
                }
                return candidate
            }
            for group in groups {
                files.append(
                    file("\(unique(group.name)).swift", networking: false, library: true) { writer in
                        endpointEmitter.emit(group, into: &writer)
                        emitMultipart(multipart.filter { $0.owner == group.name }, into: &writer)
                    })
            }
            for model in models {
                let forms = multipart.filter { $0.owner == model.name }
                files.append(
                    file("Models/\(unique(model.name)).swift", networking: false, library: !forms.isEmpty) { writer in
                        modelEmitter.emit(model, into: &writer)
                        emitMultipart(forms, into: &writer)
                    })
            }
        case .grouped:
            files.append(
                file("\(base)Endpoints.swift", networking: false, library: true) { writer in
                    for (index, group) in groups.enumerated() {
                        if index > 0 { writer.line() }
                        endpointEmitter.emit(group, into: &writer)
                    }
                    emitMultipart(multipart.filter { owner in groups.contains { $0.name == owner.owner } }, into: &writer)
                })
            files.append(
                file("\(base)Models.swift", networking: false, library: true) { writer in
                    for (index, model) in models.enumerated() {
                        if index > 0 { writer.line() }
                        modelEmitter.emit(model, into: &writer)
                    }
                    emitMultipart(multipart.filter { owner in models.contains { $0.name == owner.owner } }, into: &writer)
                })
        }
        if configuration.samples {
            let samples = SampleEmitter(namespace: namespace, access: access, models: models + groups.map(\.types))
            files.append(
                file("\(base)Samples.swift", networking: false, library: true) { writer in
                    for (index, group) in groups.enumerated() {
                        if index > 0 { writer.line() }
                        samples.emit(group, into: &writer)
                    }
                })
        }
        return files.map { file in
            var contents = file.contents
            while contents.hasSuffix("\n") { contents.removeLast() }
            return GeneratedFile(path: file.path, contents: contents + "\n")
        }
    }

    /// A multipart body's model, and the top-level type its extension goes with.
    private struct MultipartModel {
        let decl: ModelDecl
        let encodings: [String: MediaType.Encoding]
        let owner: String
    }

    private func multipartModels(_ groups: [EndpointGroup]) -> [MultipartModel] {
        var result: [MultipartModel] = []
        for group in groups {
            for endpoint in group.cases {
                guard case let .multipartModel(decl, encodings) = endpoint.body,
                    !result.contains(where: { $0.decl === decl })
                else { continue }
                let owner = String(decl.qualifiedName.split(separator: ".").first ?? "")
                result.append(MultipartModel(decl: decl, encodings: encodings, owner: owner))
            }
        }
        return result
    }

    private func emitMultipart(_ models: [MultipartModel], into writer: inout SwiftWriter) {
        for model in models {
            guard case let .structure(properties, _) = model.decl.body else { continue }
            writer.line()
            writer.block("extension \(model.decl.qualifiedName)") { writer in
                writer.doc("The value as a `multipart/form-data` body: one part per member, arrays a part per element.")
                writer.block("var multipartForm: MultipartForm") { writer in
                    writer.line("var form = MultipartForm()")
                    for property in properties {
                        let name = Naming.escaped(property.name)
                        let contentType = model.encodings[property.key]?.contentType
                        if property.optional {
                            writer.block("if let \(name)") { writer in
                                part(name, property, contentType, into: &writer)
                            }
                        } else {
                            part(name, property, contentType, into: &writer)
                        }
                    }
                    writer.line("return form")
                }
            }
        }
    }

    private func part(_ value: String, _ property: ModelDecl.Property, _ contentType: String?, into writer: inout SwiftWriter)
    {
        let key = SwiftWriter.literal(property.key)
        func single(_ value: String, _ type: SwiftType, into writer: inout SwiftWriter) {
            if type.underlying == .data {
                let type = SwiftWriter.literal(contentType ?? "application/octet-stream")
                writer.line("form.addData(\(value), name: \(key), filename: \(key), contentType: \(type))")
            } else if let text = ParameterText.text(value, type, namespace) {
                writer.line("form.addField(\(key), value: \(text))")
            } else {
                let type = SwiftWriter.literal(contentType ?? "application/json")
                writer.line(
                    "form.addData(Data(\(namespace).jsonText(\(value)).utf8), name: \(key), contentType: \(type))")
            }
        }
        if case let .array(element) = property.type.underlying, element.isScalar || element.underlying == .data {
            writer.block("for element in \(value)") { single("element", element, into: &$0) }
        } else {
            single(value, property.type, into: &writer)
        }
    }
}
