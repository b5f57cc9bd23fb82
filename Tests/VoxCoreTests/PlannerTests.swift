import Foundation
import Testing
import VoxTestSupport

@testable import VoxCore

@Suite struct PlannerTests {
    func planError(_ json: String) -> String? {
        do {
            _ = try plan(json)
            return nil
        } catch let e as VoxError {
            #expect(e.code == .invalidSpec)
            return e.message
        } catch { return "\(error)" }
    }

    @Test func aValidSpecTypeChecksAndCarriesFormatsForward() throws {
        let p = try plan(
            #"{"stages":[{"id":"src","kind":"tone"},{"id":"g","kind":"gain"},{"id":"w","kind":"sum-writer"},"#
                + #"{"id":"w2","kind":"sum-writer","from":"src"}]}"#
        )
        #expect(p.nodes.map(\.id) == ["src", "g", "w", "w2"])
        #expect(p.nodes[0].children == [1, 3])
        #expect(p.nodes[2].parents == [1])
        #expect(p.nodes[1].outputFormat == .source)
    }

    @Test func unknownKindNamesPathStageAndKnownKinds() {
        #expect(
            planError(#"{"stages":[{"id":"a","kind":"tone"},{"id":"b","kind":"bogus"}]}"#)
                == #"stages[1].kind: unknown kind "bogus" (stage 'b'; known: tone, gain, chunker, sum-writer, "#
                + #"takes-transcript, reporting-source, report-writer, dead-writer, request-reader)"#
        )
    }

    @Test func aStageThatRecordsAnItemFactNeedsAStageUpstreamThatGivesIt() throws {
        #expect(
            planError(
                #"{"stages":[{"id":"src","kind":"tone"},{"id":"g","kind":"gain"},{"id":"r","kind":"report-writer"}]}"#)
                == "stages[2] 'r': report-writer records the item's moderationReport, which no stage before it "
                + "gives (given by: reporting-source)"
        )
        // Given upstream, through another stage: fine.
        _ = try plan(
            #"{"stages":[{"id":"src","kind":"reporting-source"},{"id":"g","kind":"gain"},{"id":"r","#
                + #""kind":"report-writer"}]}"#
        )
    }

    @Test func unknownOptionNamesPathAndStage() {
        #expect(
            planError(#"{"stages":[{"id":"a","kind":"tone","blokcs":3}]}"#)
                == "stages[0].blokcs: unknown option for tone (known: blocks, failOn, rate, refuse, refuseAs) (stage "
                + "'a')"
        )
    }

    @Test func wrongValueTypeNamesPath() {
        #expect(
            planError(#"{"stages":[{"id":"a","kind":"tone","blocks":"three"}]}"#)
                == "stages[0].blocks: expected an integer, got a string (stage 'a')")
        #expect(
            planError(#"{"stages":[{"id":"a","kind":"tone","blocks":2.5}]}"#)
                == "stages[0].blocks: expected an integer, got a number (stage 'a')")
        #expect(
            planError(#"{"stages":[{"id":"a","kind":"tone","blocks":5000}]}"#)
                == "stages[0].blocks: 5000 is out of range 0…1000 (stage 'a')")
    }

    @Test func fromNamingNoStageIsAnError() {
        #expect(
            planError(#"{"stages":[{"id":"a","kind":"tone"},{"id":"b","kind":"gain","from":"nope"}]}"#)
                == #"stages[1].from: no stage has the id "nope" (stage 'b'; ids: a, b)"#)
    }

    @Test func cyclicFromIsAnError() {
        let message = planError(
            #"{"stages":[{"id":"a","kind":"tone"},{"id":"b","kind":"gain","from":"c"},{"id":"c","kind":"gain","#
                + #""from":"b"}]}"#
        )
        #expect(message == "stages[1].from: cycle 'b' → 'c' → 'b' (each stage reads from the next)")
    }

    @Test func typeMismatchNamesBothStagesAndTypes() {
        #expect(
            planError(#"{"stages":[{"id":"a","kind":"tone"},{"id":"t","kind":"takes-transcript"}]}"#)
                == "stages[1] 't': takes-transcript takes Transcript but 'a' (tone) gives AudioBlock")
    }

    @Test func theFirstStageMustReadFiles() {
        #expect(
            planError(#"{"stages":[{"id":"g","kind":"gain"}]}"#)
                == "stages[0] 'g': the first stage reads the input files, but gain takes AudioBlock; start with a "
                + "decode stage"
        )
    }

    @Test func aFormatAStageCannotTakeIsAPlanError() {
        // gain refuses fixed-rate input; tone gives source rate, so a chain of two gains is fine.
        #expect(
            planError(#"{"stages":[{"id":"a","kind":"tone"},{"id":"g","kind":"gain"},{"id":"h","kind":"gain"}]}"#)
                == nil)
        // A tone with a fixed rate cannot feed it: the error names both stages and the format.
        #expect(
            planError(#"{"stages":[{"id":"a","kind":"tone","rate":8000},{"id":"g","kind":"gain"}]}"#)
                == "stages[1] 'g': gain takes only source-rate audio, but 'a' (tone) gives 8 kHz source channels")
    }

    @Test func duplicateIdsAndBadIdsAreErrors() {
        #expect(
            planError(#"{"stages":[{"id":"a","kind":"tone"},{"id":"a","kind":"gain"}]}"#)
                == #"stages[1].id: "a" is already the id of stages[0]"#)
        #expect(
            planError(#"{"stages":[{"id":"a/b","kind":"tone"}]}"#)?.hasPrefix(#"stages[0].id: "a/b" is not a valid id"#)
                == true)
    }

    @Test func malformedJSONAndMissingStagesAreErrors() {
        #expect(planError("{\"stages\": [")?.hasPrefix("not valid JSON") == true)
        #expect(planError(#"{"name":"x"}"#) == "stages: missing; a spec needs at least one stage")
        #expect(
            planError(#"{"stages":[],"extra":1}"#)
                == "extra: unknown top-level field (known: name, description, strict, stages)")
    }

    @Test func canonicalSpecIgnoresKeyOrderAndSchema() throws {
        let a = try plan(#"{"$schema":"schema.json","stages":[{"id":"a","kind":"tone","blocks":2}]}"#)
        let b = try plan(#"{"stages":[{"blocks":2,"kind":"tone","id":"a"}]}"#)
        #expect(a.canonicalSpec == b.canonicalSpec)
        let c = try plan(#"{"stages":[{"blocks":3,"kind":"tone","id":"a"}]}"#)
        #expect(a.canonicalSpec != c.canonicalSpec)
    }

    /// A chain of `count` stages: a reporting source, gains, a report writer.
    static func chain(_ count: Int) -> String {
        var stages = [#"{"id":"src","kind":"reporting-source"}"#]
        stages += (1..<count - 1).map { #"{"id":"g\#($0)","kind":"gain"}"# }
        stages.append(#"{"id":"r","kind":"report-writer"}"#)
        return #"{"stages":["# + stages.joined(separator: ",") + "]}"
    }

    /// The CPU time this thread spends in `body`: the work it did, however busy the machine.
    static func threadCPUSeconds(_ body: () throws -> Void) rethrows -> Double {
        func now() -> Double {
            var time = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
            return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }
        let start = now()
        try body()
        return now() - start
    }

    // Planning is near-linear in the stages (issue 27, item 6): a 20,000-stage chain took minutes
    // when each stage's cycle check walked (and copied) the whole chain above it. Ten times the
    // stages takes about ten times the work, not a hundred: measured in this thread's CPU time
    // (planning is synchronous), which another process's load does not stretch as it does a clock.
    @Test func aTwentyThousandStageChainPlansWithEveryFactAndLookbackInLinearTime() throws {
        let count = 20_000
        let small = Self.chain(count / 10), large = Self.chain(count)
        let smallSeconds = try (0..<3).map { _ in try Self.threadCPUSeconds { _ = try plan(small) } }.min() ?? 0
        var p: Plan?
        let largeSeconds = try Self.threadCPUSeconds { p = try plan(large) }
        #expect(
            largeSeconds < 30 * smallSeconds,
            "\(count) stages took \(largeSeconds) s of CPU, \(count / 10) took \(smallSeconds) s")
        let planned = try #require(p)
        #expect(planned.nodes.count == count)
        #expect(planned.topologicalOrder.map(\.index) == Array(0..<count))
        #expect(planned.lookbacks.allSatisfy { $0 == nil })
    }

    @Test func aCycleDeepInALongChainIsNamedFromWhereTheWalkMetIt() {
        var stages = [#"{"id":"src","kind":"tone"}"#]
        stages += (1...50).map { #"{"id":"g\#($0)","kind":"gain"}"# }
        stages.append(#"{"id":"x","kind":"gain","from":"y"}"#)
        stages.append(#"{"id":"y","kind":"gain","from":"x"}"#)
        #expect(
            planError(#"{"stages":["# + stages.joined(separator: ",") + "]}")
                == "stages[51].from: cycle 'x' → 'y' → 'x' (each stage reads from the next)")
    }
}
