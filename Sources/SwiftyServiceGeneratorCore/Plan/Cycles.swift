/// Finds types that contain themselves by value (a struct holding an optional of itself, a union of types
/// that hold the union), which Swift cannot lay out, and breaks each cycle.
///
/// A union on a cycle becomes `indirect`; a struct on a cycle without a union becomes a final class, which
/// holds its members by reference.
enum Cycles {
    static func markIndirect(_ roots: [ModelDecl]) {
        var all: [String: ModelDecl] = [:]
        func collect(_ decl: ModelDecl) {
            all[decl.qualifiedName] = decl
            decl.nested.forEach(collect)
        }
        roots.forEach(collect)
        var edges: [String: [String]] = [:]
        for (name, decl) in all {
            var targets: [String] = []
            func add(_ type: SwiftType) {
                if case let .model(target, _) = type, all[target] != nil { targets.append(target) }
            }
            switch decl.body {
            case let .structure(properties, _): properties.forEach { add($0.type) }
            case let .union(cases, _): cases.forEach { add($0.type) }
            case let .alias(type): add(type)
            default: break
            }
            edges[name] = targets
        }
        // Boxing a union or making a struct a class breaks every cycle through it; repeat until none is left.
        while true {
            var open: [String: [String]] = [:]
            for (name, targets) in edges {
                guard let decl = all[name], !decl.isIndirect, !decl.isReference else { continue }
                open[name] = targets
            }
            let cycles = stronglyConnected(nodes: all.keys.sorted(), edges: open).filter { component in
                component.count > 1 || (open[component[0]] ?? []).contains(component[0])
            }
            if cycles.isEmpty { return }
            var marked = false
            for component in cycles {
                let decls = component.compactMap { all[$0] }
                let unions = decls.filter { if case .union = $0.body { true } else { false } }
                if !unions.isEmpty {
                    for union in unions { union.isIndirect = true }
                    marked = true
                } else {
                    for decl in decls {
                        guard case .structure = decl.body else { continue }
                        decl.isReference = true
                        marked = true
                    }
                }
            }
            // Type aliases of one another: nothing to box, and Swift reports the cycle itself.
            if !marked { return }
        }
    }

    /// Tarjan's algorithm, iteratively (descriptions have long chains of references).
    static func stronglyConnected(nodes: [String], edges: [String: [String]]) -> [[String]] {
        var index = 0
        var indices: [String: Int] = [:]
        var lowLinks: [String: Int] = [:]
        var onStack: Set<String> = []
        var stack: [String] = []
        var components: [[String]] = []
        for start in nodes where indices[start] == nil {
            var work: [(node: String, next: Int)] = [(start, 0)]
            indices[start] = index
            lowLinks[start] = index
            index += 1
            stack.append(start)
            onStack.insert(start)
            while let (node, next) = work.last {
                let targets = edges[node] ?? []
                if next < targets.count {
                    work[work.count - 1].next += 1
                    let target = targets[next]
                    if indices[target] == nil {
                        indices[target] = index
                        lowLinks[target] = index
                        index += 1
                        stack.append(target)
                        onStack.insert(target)
                        work.append((target, 0))
                    } else if onStack.contains(target) {
                        lowLinks[node] = min(lowLinks[node]!, indices[target]!)
                    }
                    continue
                }
                work.removeLast()
                if let parent = work.last?.node { lowLinks[parent] = min(lowLinks[parent]!, lowLinks[node]!) }
                if lowLinks[node] == indices[node] {
                    var component: [String] = []
                    while let top = stack.popLast() {
                        onStack.remove(top)
                        component.append(top)
                        if top == node { break }
                    }
                    components.append(component.sorted())
                }
            }
        }
        return components
    }
}
