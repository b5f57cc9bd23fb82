import Foundation

extension Plan {
    /// The plan as a server runs it, one request a turn: the writers (stages that give
    /// `Artifact`s) and every stage fed by one are left out, since the answer goes back in the
    /// response, and each stage takes its one-turn configuration (`Stage.oneTurn`: a chunker gives
    /// the whole clip of up to `maxSeconds` as one chunk). A typed transform of the checked plan:
    /// the spec is planned once, and the stages kept are those it configured.
    public func servingOneTurn(maxSeconds: Double) -> Plan {
        var dropped: Set<Int> = []
        for node in topologicalOrder
        where node.kind.output == .artifact || node.parents.contains(where: dropped.contains) {
            dropped.insert(node.index)
        }
        return keeping(Set(nodes.map(\.index)).subtracting(dropped)) { $0.stage.oneTurn(maxSeconds: maxSeconds) }
    }

    /// The plan up to and including the stage `id`: that stage and the stages it reads from,
    /// directly or not (what feeds a transcribe stage, for a server's transcription-only routes),
    /// each as configured. The plan unchanged when it has no such stage.
    public func endingAt(_ id: String) -> Plan {
        guard let end = stage(id) else { return self }
        var kept: Set<Int> = [end.index]
        for node in topologicalOrder.reversed() where kept.contains(node.index) {
            kept.formUnion(node.parents)
        }
        return keeping(kept) { $0.stage }
    }

    /// The stages of `kept`, renumbered, with the edges between them, each as `configure` gives it.
    private func keeping(_ kept: Set<Int>, configure: (Node) -> ConfiguredStage) -> Plan {
        let kept = nodes.filter { kept.contains($0.index) }
        let newIndex = Dictionary(uniqueKeysWithValues: kept.enumerated().map { ($1.index, $0) })
        let served = kept.map { node in
            Node(
                index: newIndex[node.index] ?? 0, id: node.id, stage: configure(node),
                parents: node.parents.compactMap { newIndex[$0] }, children: node.children.compactMap { newIndex[$0] },
                inputType: node.inputType, inputFormat: node.inputFormat, outputFormat: node.outputFormat)
        }
        var plan = Plan(
            name: name, nodes: served, canonicalSpec: canonicalSpec, referencedFiles: referencedFiles, spec: spec)
        plan.strict = strict
        return plan
    }

    /// The plan with every stage that can translate into English translating (`Translatable`:
    /// whisper's `task: translate`), for serve's `/v1/audio/translations`; nil when no stage can.
    /// A typed transform of the checked plan, like `servingOneTurn`: no spec is edited or planned
    /// again.
    public func translating() -> Plan? {
        var found = false
        let changed = nodes.map { node -> Node in
            guard let variant = node.stage.translating() else { return node }
            found = true
            return Node(
                index: node.index, id: node.id, stage: variant, parents: node.parents, children: node.children,
                inputType: node.inputType, inputFormat: node.inputFormat, outputFormat: node.outputFormat)
        }
        guard found else { return nil }
        var plan = Plan(
            name: name, nodes: changed, canonicalSpec: canonicalSpec, referencedFiles: referencedFiles, spec: spec)
        plan.strict = strict
        return plan
    }

    /// The first stage (in plan order) that gives `output` from an input of `input`: how a
    /// server finds the stage a request enters at or a stage it needs, by what the stage does.
    public func firstStage(giving output: PayloadType, from input: PayloadType? = nil) -> Node? {
        nodes.first { node in node.kind.output == output && (input.map { node.kind.accepts($0) } ?? true) }
    }

    /// The stage with `id`.
    public func stage(_ id: String) -> Node? { nodes.first { $0.id == id } }
}

/// A stage configuration, or a provider's settings, with a variant that translates speech into
/// English (`Plan.translating()`).
public protocol Translatable: Sendable {
    /// The same, translating; nil when it cannot.
    func translating() -> Self?
}

extension ChosenProvider {
    /// The same provider with `settings` of its own type in place of its own.
    public func with(settings: any Sendable) -> ChosenProvider { ChosenProvider(entry: entry, settings: settings) }

    /// The provider translating, when its settings can (`Translatable`).
    public func translating() -> ChosenProvider? {
        guard let translatable = settings as? any Translatable, let variant = translatable.translating() else {
            return nil
        }
        return with(settings: variant)
    }
}
