import Foundation

/// A checked job: every stage configured, every edge type-checked, every stream format known.
/// Built from a spec before any audio is read.
public struct Plan: Sendable {
    /// One stage of the plan.
    public struct Node: Sendable {
        public let index: Int
        public let id: String
        /// The stage as the spec configured it.
        public let stage: ConfiguredStage
        /// The stages it reads from (merged into one input); empty for the root, which reads the
        /// input file.
        public let parents: [Int]
        public internal(set) var children: [Int]
        public let inputType: PayloadType
        public internal(set) var inputFormat: StreamFormat
        public internal(set) var outputFormat: StreamFormat

        public var kind: StageKind { stage.kind }
        public var configuration: any Sendable { stage.configuration }
        /// What it declares about itself (`Stage.declarations`), for the stages it feeds.
        public var declarations: StageDeclarations { stage.declarations }
    }

    public let name: String
    public let nodes: [Node]
    /// The spec in canonical form (sorted keys): part of every item key.
    public let canonicalSpec: Data
    /// Files the spec's path options name (given or default): rules, models. Their contents
    /// are part of every item key too.
    public let referencedFiles: [URL]
    /// The spec as a value (canonical: no `$schema`, no `description`).
    public let spec: JSONValue
    /// The spec's `"strict": true`: an item a stage warns about (a truncated file) fails.
    public var strict = false

    /// Whether any stage writes files (gives `Artifact`s, as every `write-*` kind does).
    public var writesOutputs: Bool { nodes.contains { $0.kind.output == .artifact } }

    /// Throws, as a spec error, when no stage writes anything: items would be done with no
    /// outputs. A run that wants only reports says so (`voxpipe run --no-outputs`).
    public func requireOutputs() throws {
        guard !writesOutputs else { return }
        throw VoxError(
            .invalidSpec,
            "stages: no stage writes outputs (none gives Artifact, as the write-* kinds do); add a writer, or pass "
                + "--no-outputs to run it for its reports only")
    }

    /// The extensions searched for in INPUT folders: what the first stage reads.
    public var inputExtensions: Set<String> {
        nodes.first { $0.parents.isEmpty }?.kind.inputExtensions ?? InputListing.audioExtensions
    }

    /// Every stage as the others see it, in plan order: what it declares (`Stage.declarations`)
    /// and what it contributes to provenance records.
    public var plannedStages: [PlannedStage] {
        nodes.map { node in
            PlannedStage(
                id: node.id, kind: node.kind.kind, declarations: node.declarations,
                provenance: node.stage.provenance)
        }
    }

    /// Nodes in an order where each comes after every stage it reads from.
    public var topologicalOrder: [Node] {
        var waiting = nodes.map(\.parents.count)
        var queue = nodes.filter(\.parents.isEmpty).map(\.index)
        var order: [Node] = []
        var head = 0
        // A moving head, not `removeFirst()`: that shifts the whole queue, and planning must stay
        // linear in the number of stages.
        while head < queue.count {
            let i = queue[head]
            head += 1
            order.append(nodes[i])
            for c in nodes[i].children {
                waiting[c] -= 1
                if waiting[c] == 0 { queue.append(c) }
            }
        }
        return order
    }

    /// The stage that declares the item-expansion role (`.itemExpansion`), if one does.
    public var expansionNode: Node? {
        nodes.first { $0.declarations.declares(StageDeclarationKey.itemExpansion.erased) }
    }

    /// The items a file becomes, as the stage declaring the item-expansion role says (one per seat
    /// of a split upload, one per report window); else the file itself. Reads at most the file's
    /// header and sidecar.
    public func expand(_ item: InputFile) throws -> [InputFile] {
        guard let items = try expansionNode?.declarations[.itemExpansion]?.expand(item) else { return [item] }
        return items
    }

    /// Stage `index` and every stage it feeds, directly or not.
    public func descendants(of index: Int) -> Set<Int> {
        var found: Set<Int> = []
        var stack = [index]
        while let i = stack.popLast() {
            if nodes.indices.contains(i), found.insert(i).inserted { stack += nodes[i].children }
        }
        return found
    }

    /// How many seconds at the end of `node`'s output are all that any stage downstream needs;
    /// nil when something needs the whole stream.
    public func lookback(after index: Int) -> Double? {
        lookback(after: index) { lookback(after: $0) }
    }

    /// `lookback(after:)` of every stage, found once, the stages nearest the outputs first (a
    /// long chain of pass-through stages would otherwise be walked again for each).
    public var lookbacks: [Double?] {
        var found = [Double?](repeating: nil, count: nodes.count)
        for node in topologicalOrder.reversed() { found[node.index] = lookback(after: node.index) { found[$0] } }
        return found
    }

    private func lookback(after index: Int, children lookbackAfter: (Int) -> Double?) -> Double? {
        var needed = 0.0
        for child in nodes[index].children {
            switch nodes[child].stage.demand {
            case .whole: return nil
            case .tail(let seconds): needed = max(needed, seconds)
            case .passThrough:
                guard !nodes[child].children.isEmpty, let more = lookbackAfter(child) else { return nil }
                needed = max(needed, more)
            }
        }
        return nodes[index].children.isEmpty ? nil : needed
    }

    /// The files each item's folder will hold, by name (`NNNN` where a stage numbers them).
    public var plannedOutputs: [String] {
        topologicalOrder.flatMap { $0.stage.plannedOutputs(id: $0.id, input: $0.inputType) }
    }

    /// The plan as `voxpipe validate` prints it: each stage with its types and the format on
    /// its input edge.
    public func describe() -> String {
        var lines = ["plan '\(name)': \(nodes.count) stage\(nodes.count == 1 ? "" : "s")"]
        let order = topologicalOrder
        let idWidth = order.map(\.id.count).max() ?? 0
        let kindWidth = order.map(\.kind.kind.count).max() ?? 0
        for node in order {
            let from =
                node.parents.isEmpty
                ? "from input file" : "from " + node.parents.map { "'\(nodes[$0].id)'" }.joined(separator: " + ")
            let mixed = Set(node.parents.map { nodes[$0].kind.output }).count > 1
            let types = "\(mixed ? node.kind.inputDescription : node.inputType.rawValue) → \(node.kind.output)"
            var line = "  \(node.id.padding(toLength: idWidth, withPad: " ", startingAt: 0))  "
            line += "\(node.kind.kind.padding(toLength: kindWidth, withPad: " ", startingAt: 0))  "
            line += "\(types.padding(toLength: 26, withPad: " ", startingAt: 0))  \(from)"
            if node.kind.output == .audioBlock || node.kind.output == .audioChunk || node.kind.output == .speech {
                line += ", gives \(node.outputFormat)"
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}

/// Loads a spec and checks it, in DESIGN.md's order, stopping at the first problem with its
/// JSON path: unknown kind or option, bad value, unknown or cyclic `from`, type mismatch, and a
/// stream format a stage cannot take.
public enum Planner {
    static let topLevelKeys: Set = ["$schema", "name", "description", "strict", "stages"]
    static let stageKeys: Set = ["id", "kind", "from"]

    /// Loads the spec file at `url`; errors start with the file's path.
    public static func load(specAt url: URL, registry: StageRegistry) throws -> Plan {
        let data: Data
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw VoxError(.invalidSpec, "\(url.path): no such spec file")
        }
        guard !isDirectory.boolValue, let contents = FileManager.default.contents(atPath: url.path) else {
            throw VoxError(.invalidSpec, "\(url.path): cannot read spec (is it a readable file?)")
        }
        data = contents
        do {
            return try plan(
                data: data, baseDirectory: url.deletingLastPathComponent(),
                defaultName: url.deletingPathExtension().lastPathComponent, registry: registry)
        } catch let error as any CategorizedError {
            throw error.reworded { "\(url.path): \($0)" }
        }
    }

    /// Plans a spec given as JSON bytes.
    public static func plan(
        data: Data, baseDirectory: URL, defaultName: String = "job", registry: StageRegistry
    ) throws -> Plan {
        let json: JSONValue
        do {
            // JSONSerialization says where the JSON breaks (line and column); JSONDecoder does not.
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            json = try JSONValue.parse(data)
        } catch {
            let ns = error as NSError
            let detail =
                (ns.userInfo["NSDebugDescription"] as? String)
                ?? ((ns.userInfo[NSUnderlyingErrorKey] as? NSError)?.userInfo["NSDebugDescription"] as? String)
                ?? describe(error)
            throw VoxError(.invalidSpec, "not valid JSON: \(detail)")
        }
        return try plan(json: json, baseDirectory: baseDirectory, defaultName: defaultName, registry: registry)
    }

    public static func plan(
        json: JSONValue, baseDirectory: URL, defaultName: String = "job", registry: StageRegistry
    ) throws -> Plan {
        guard let top = json.objectValue else {
            throw VoxError(.invalidSpec, "expected a JSON object with \"stages\", got \(json.typeDescription)")
        }
        for key in top.keys.sorted() where !topLevelKeys.contains(key) {
            throw VoxError(.invalidSpec, "\(key): unknown top-level field (known: name, description, strict, stages)")
        }
        if let name = top["name"], name.stringValue == nil {
            throw VoxError(.invalidSpec, "name: expected a string, got \(name.typeDescription)")
        }
        if let strict = top["strict"], strict.boolValue == nil {
            throw VoxError(.invalidSpec, "strict: expected a boolean, got \(strict.typeDescription)")
        }
        guard let stagesValue = top["stages"] else {
            throw VoxError(.invalidSpec, "stages: missing; a spec needs at least one stage")
        }
        guard let stages = stagesValue.arrayValue else {
            throw VoxError(.invalidSpec, "stages: expected an array, got \(stagesValue.typeDescription)")
        }
        guard !stages.isEmpty else { throw VoxError(.invalidSpec, "stages: empty; a spec needs at least one stage") }

        // 1. Each stage's id, kind and options.
        struct Parsed {
            var id: String
            var kind: StageKind
            var from: [String]?
            var stage: ConfiguredStage
        }
        var parsed: [Parsed] = []
        var referenced: [URL] = []
        var seen: [String: Int] = [:]
        for (i, value) in stages.enumerated() {
            let path = "stages[\(i)]"
            guard let object = value.objectValue else {
                throw VoxError(.invalidSpec, "\(path): expected an object, got \(value.typeDescription)")
            }
            guard let idValue = object["id"] else { throw VoxError(.invalidSpec, "\(path).id: missing") }
            guard let id = idValue.stringValue else {
                throw VoxError(.invalidSpec, "\(path).id: expected a string, got \(idValue.typeDescription)")
            }
            guard isValidID(id) else {
                throw VoxError(
                    .invalidSpec,
                    "\(path).id: \"\(id)\" is not a valid id (letters, digits, '-' and '_', starting with a letter "
                        + "or digit; it names output files)"
                )
            }
            if let other = seen[id] {
                throw VoxError(.invalidSpec, "\(path).id: \"\(id)\" is already the id of stages[\(other)]")
            }
            seen[id] = i
            guard let kindValue = object["kind"] else {
                throw VoxError(.invalidSpec, "\(path).kind: missing (stage '\(id)')")
            }
            guard let kindName = kindValue.stringValue else {
                throw VoxError(
                    .invalidSpec, "\(path).kind: expected a string, got \(kindValue.typeDescription) (stage '\(id)')")
            }
            guard let kind = registry[kindName] else {
                throw VoxError(
                    .invalidSpec,
                    "\(path).kind: unknown kind \"\(kindName)\" (stage '\(id)'; known: "
                        + "\(registry.kinds.map(\.kind).joined(separator: ", ")))"
                )
            }
            var from: [String]?
            if let fromValue = object["from"] {
                if let f = fromValue.stringValue {
                    from = [f]
                } else if let list = fromValue.arrayValue, !list.isEmpty, list.allSatisfy({ $0.stringValue != nil }) {
                    from = list.compactMap(\.stringValue)
                } else {
                    throw VoxError(
                        .invalidSpec,
                        "\(path).from: expected a stage id or a list of them, got \(fromValue.typeDescription) "
                            + "(stage '\(id)')"
                    )
                }
            }
            let optionValues = object.filter { !stageKeys.contains($0.key) }
            let configured: ConfiguredStage
            do {
                configured = try kind.configure(
                    StageOptions.validated(
                        optionValues, against: kind.options, stageID: id, path: path, owner: kind.kind,
                        baseDirectory: baseDirectory))
            } catch let error as any CategorizedError {
                throw error.reworded { "\($0) (stage '\(id)')" }
            }
            referenced += referencedPaths(optionValues, specs: kind.options, baseDirectory: baseDirectory)
            referenced += configured.identityFiles
            parsed.append(Parsed(id: id, kind: kind, from: from, stage: configured))
        }

        // 2. Edges: `from` defaults to the stage before; the first stage reads the input file.
        var parents: [[Int]] = []
        for (i, stage) in parsed.enumerated() {
            if let from = stage.from {
                var list: [Int] = []
                for name in from {
                    guard let p = seen[name] else {
                        throw VoxError(
                            .invalidSpec,
                            "stages[\(i)].from: no stage has the id \"\(name)\" (stage '\(stage.id)'; ids: "
                                + "\(parsed.map(\.id).joined(separator: ", ")))"
                        )
                    }
                    guard p != i else {
                        throw VoxError(.invalidSpec, "stages[\(i)].from: stage '\(stage.id)' cannot read from itself")
                    }
                    if !list.contains(p) { list.append(p) }
                }
                parents.append(list)
            } else {
                parents.append(i == 0 ? [] : [i - 1])
            }
        }
        try checkAcyclic(parents, ids: parsed.map(\.id))
        try checkStageReferences(parsed.map { ($0.id, $0.kind) }, options: stages.map { $0.objectValue ?? [:] })

        // 3. Types on every edge.
        var nodes: [Plan.Node] = []
        for (i, stage) in parsed.enumerated() {
            let inputType: PayloadType
            if let first = parents[i].first {
                for p in parents[i] {
                    let parent = parsed[p]
                    guard stage.kind.accepts(parent.kind.output) else {
                        throw VoxError(
                            .invalidSpec,
                            "stages[\(i)] '\(stage.id)': \(stage.kind.kind) takes \(stage.kind.inputDescription) but "
                                + "'\(parent.id)' (\(parent.kind.kind)) gives \(parent.kind.output)"
                        )
                    }
                }
                inputType = parsed[first].kind.output
            } else {
                guard stage.kind.accepts(.inputFile) else {
                    throw VoxError(
                        .invalidSpec,
                        "stages[\(i)] '\(stage.id)': the first stage reads the input files, but \(stage.kind.kind) "
                            + "takes \(stage.kind.inputDescription); start with a decode stage"
                    )
                }
                inputType = .inputFile
            }
            nodes.append(
                Plan.Node(
                    index: i, id: stage.id, stage: stage.stage, parents: parents[i], children: [],
                    inputType: inputType, inputFormat: .source, outputFormat: .source))
        }
        for i in nodes.indices { for p in parents[i] { nodes[p].children.append(i) } }
        try checkDeclarations(nodes, explicitFrom: parsed.map { $0.from != nil })

        let partial = Plan(name: "", nodes: nodes, canonicalSpec: Data(), referencedFiles: [], spec: .null)
        let order = partial.topologicalOrder.map(\.index)

        // Item facts: each one a stage uses must be given by a stage it reads from, directly or
        // not. What reaches each stage is gathered once, parents first.
        var givenUpstream = [Set<ItemFact>](repeating: [], count: parsed.count)
        for i in order {
            for p in parents[i] { givenUpstream[i].formUnion(givenUpstream[p].union(parsed[p].kind.factsGiven)) }
        }
        for (i, stage) in parsed.enumerated() where !stage.kind.factsUsed.isEmpty {
            for fact in stage.kind.factsUsed where !givenUpstream[i].contains(fact) {
                let givers = registry.kinds.filter { $0.factsGiven.contains(fact) }.map(\.kind).joined(separator: ", ")
                throw VoxError(
                    .invalidSpec,
                    "stages[\(i)] '\(stage.id)': \(stage.kind.kind) records the item's \(fact.name), which no "
                        + "stage before it gives (\(givers.isEmpty ? "no kind does" : "given by: \(givers)"))"
                )
            }
        }

        // 4. Stream formats, from the roots down; a stage reading several takes its first's format.
        for i in order {
            let input = parents[i].first.map { nodes[$0].outputFormat } ?? .source
            nodes[i].inputFormat = input
            do {
                nodes[i].outputFormat = try nodes[i].stage.outputFormat(input: input)
            } catch let error as PlanError {
                let from =
                    parents[i].first.map { "'\(nodes[$0].id)' (\(nodes[$0].kind.kind)) gives \(input)" }
                    ?? "the input is \(input)"
                throw VoxError(.invalidSpec, "stages[\(i)] '\(nodes[i].id)': \(error.message), but \(from)")
            }
        }

        var canonical = top
        canonical.removeValue(forKey: "$schema")
        canonical.removeValue(forKey: "description")
        var plan = Plan(
            name: top["name"]?.stringValue ?? defaultName, nodes: nodes,
            canonicalSpec: JSONValue.object(canonical).canonicalData(),
            referencedFiles: Array(Set(referenced)), spec: .object(canonical))
        plan.strict = top["strict"]?.boolValue ?? false
        return plan
    }

    /// Every stage reads from stages that declare what it needs (`Stage.declarationsUsed`); the
    /// error names the `from` edge (`stages[i]` where `from` is the stage before, by default).
    static func checkDeclarations(_ nodes: [Plan.Node], explicitFrom: [Bool]) throws {
        for node in nodes {
            for needed in node.kind.declarationsUsed {
                for p in node.parents where !nodes[p].declarations.declares(needed) {
                    let path = explicitFrom[node.index] ? "stages[\(node.index)].from" : "stages[\(node.index)]"
                    throw VoxError(
                        .invalidSpec,
                        "\(path): \(node.kind.kind) needs \(needed) declared by every stage it reads from, but "
                            + "'\(nodes[p].id)' (\(nodes[p].kind.kind)) declares none (stage '\(node.id)')")
                }
            }
        }
    }

    /// Every option naming another stage (`OptionSpec.Kind.stage`) names one of the spec, of a
    /// kind it accepts; the error gives the JSON path.
    static func checkStageReferences(_ stages: [(id: String, kind: StageKind)], options: [[String: JSONValue]]) throws {
        for (i, stage) in stages.enumerated() {
            for spec in stage.kind.options {
                guard case .stage(let kinds) = spec.kind, let name = options[i][spec.name]?.stringValue else {
                    continue
                }
                let path = "stages[\(i)].\(spec.name)"
                guard let target = stages.first(where: { $0.id == name }) else {
                    throw VoxError(
                        .invalidSpec,
                        "\(path): no stage has the id \"\(name)\" (stage '\(stage.id)'; ids: "
                            + "\(stages.map(\.id).joined(separator: ", ")))")
                }
                guard target.id != stage.id else {
                    throw VoxError(.invalidSpec, "\(path): stage '\(stage.id)' cannot name itself")
                }
                guard kinds.isEmpty || kinds.contains(target.kind.kind) else {
                    throw VoxError(
                        .invalidSpec,
                        "\(path): stage '\(name)' is a \(target.kind.kind) stage; expected "
                            + "\(kinds.joined(separator: " or ")) (stage '\(stage.id)')")
                }
            }
        }
    }

    /// Throws for the first cycle among the `from` edges (`parents`), found by one depth-first
    /// walk over every stage: reaching a stage that is still on the walk closes a cycle.
    static func checkAcyclic(_ parents: [[Int]], ids: [String]) throws {
        enum Mark { case new, onWalk, done }
        var marks = [Mark](repeating: .new, count: parents.count)
        for start in parents.indices where marks[start] == .new {
            // Each entry: a stage and how many of its parents the walk has taken.
            var walk: [(stage: Int, taken: Int)] = [(start, 0)]
            marks[start] = .onWalk
            while let (stage, taken) = walk.last {
                guard taken < parents[stage].count else {
                    marks[stage] = .done
                    walk.removeLast()
                    continue
                }
                walk[walk.count - 1].taken += 1
                let parent = parents[stage][taken]
                switch marks[parent] {
                case .new:
                    marks[parent] = .onWalk
                    walk.append((parent, 0))
                case .onWalk:
                    let from = walk.firstIndex { $0.stage == parent } ?? 0
                    let cycle = (walk[from...].map(\.stage) + [parent]).map { "'\(ids[$0])'" }
                    throw VoxError(
                        .invalidSpec,
                        "stages[\(parent)].from: cycle \(cycle.joined(separator: " → ")) (each stage reads from the "
                            + "next)")
                case .done:
                    break
                }
            }
        }
    }

    /// The paths that path options (in provider blocks too) name or default to.
    static func referencedPaths(_ values: [String: JSONValue], specs: [OptionSpec], baseDirectory: URL) -> [URL] {
        var urls: [URL] = []
        for spec in specs {
            let value = values[spec.name] ?? spec.defaultValue
            switch spec.kind {
            case .path:
                if let path = value?.stringValue {
                    urls.append(URL(fileURLWithPath: path, relativeTo: baseDirectory).standardizedFileURL)
                }
            case .provider(let providers):
                if let object = value?.objectValue, let name = object["name"]?.stringValue,
                    let provider = providers.first(where: { $0.name == name })
                {
                    urls += referencedPaths(object, specs: provider.options, baseDirectory: baseDirectory)
                }
            default:
                break
            }
        }
        return urls
    }

    static func isValidID(_ id: String) -> Bool {
        guard let first = id.unicodeScalars.first, first.properties.isAlphabetic || ("0"..."9").contains(first),
            id.count <= 64
        else { return false }
        return id.unicodeScalars.allSatisfy {
            ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "-" || $0 == "_"
        }
    }
}
