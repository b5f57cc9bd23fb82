import Foundation
import Testing
import VoxTestSupport
@testable import VoxCore

@Suite struct PlannerTests {
    func planError(_ json: String) -> String? {
        do { _ = try plan(json); return nil } catch let e as VoxError { #expect(e.code == .invalidSpec); return e.message } catch { return "\(error)" }
    }

    @Test func aValidSpecTypeChecksAndCarriesFormatsForward() throws {
        let p = try plan(#"{"stages":[{"id":"src","kind":"tone"},{"id":"g","kind":"gain"},{"id":"w","kind":"sum-writer"},{"id":"w2","kind":"sum-writer","from":"src"}]}"#)
        #expect(p.nodes.map(\.id) == ["src", "g", "w", "w2"])
        #expect(p.nodes[0].children == [1, 3])
        #expect(p.nodes[2].parents == [1])
        #expect(p.nodes[1].outputFormat == .source)
    }

    @Test func unknownKindNamesPathStageAndKnownKinds() {
        #expect(planError(#"{"stages":[{"id":"a","kind":"tone"},{"id":"b","kind":"bogus"}]}"#)
            == #"stages[1].kind: unknown kind "bogus" (stage 'b'; known: tone, gain, chunker, sum-writer, takes-transcript, reporting-source, report-writer)"#)
    }

    @Test func aStageThatRecordsAnItemFactNeedsAStageUpstreamThatGivesIt() throws {
        #expect(planError(#"{"stages":[{"id":"src","kind":"tone"},{"id":"g","kind":"gain"},{"id":"r","kind":"report-writer"}]}"#)
            == "stages[2] 'r': report-writer records the item's report, which no stage before it gives (given by: reporting-source)")
        // Given upstream, through another stage: fine.
        _ = try plan(#"{"stages":[{"id":"src","kind":"reporting-source"},{"id":"g","kind":"gain"},{"id":"r","kind":"report-writer"}]}"#)
    }

    @Test func unknownOptionNamesPathAndStage() {
        #expect(planError(#"{"stages":[{"id":"a","kind":"tone","blokcs":3}]}"#)
            == "stages[0].blokcs: unknown option for tone (known: blocks, failOn, rate, refuse, refuseAs) (stage 'a')")
    }

    @Test func wrongValueTypeNamesPath() {
        #expect(planError(#"{"stages":[{"id":"a","kind":"tone","blocks":"three"}]}"#)
            == "stages[0].blocks: expected an integer, got a string (stage 'a')")
        #expect(planError(#"{"stages":[{"id":"a","kind":"tone","blocks":2.5}]}"#)
            == "stages[0].blocks: expected an integer, got a number (stage 'a')")
        #expect(planError(#"{"stages":[{"id":"a","kind":"tone","blocks":5000}]}"#)
            == "stages[0].blocks: 5000 is out of range 0…1000 (stage 'a')")
    }

    @Test func fromNamingNoStageIsAnError() {
        #expect(planError(#"{"stages":[{"id":"a","kind":"tone"},{"id":"b","kind":"gain","from":"nope"}]}"#)
            == #"stages[1].from: no stage has the id "nope" (stage 'b'; ids: a, b)"#)
    }

    @Test func cyclicFromIsAnError() {
        let message = planError(#"{"stages":[{"id":"a","kind":"tone"},{"id":"b","kind":"gain","from":"c"},{"id":"c","kind":"gain","from":"b"}]}"#)
        #expect(message == "stages[1].from: cycle 'b' → 'c' → 'b' (each stage reads from the next)")
    }

    @Test func typeMismatchNamesBothStagesAndTypes() {
        #expect(planError(#"{"stages":[{"id":"a","kind":"tone"},{"id":"t","kind":"takes-transcript"}]}"#)
            == "stages[1] 't': takes-transcript takes Transcript but 'a' (tone) gives AudioBlock")
    }

    @Test func theFirstStageMustReadFiles() {
        #expect(planError(#"{"stages":[{"id":"g","kind":"gain"}]}"#)
            == "stages[0] 'g': the first stage reads the input files, but gain takes AudioBlock; start with a decode stage")
    }

    @Test func aFormatAStageCannotTakeIsAPlanError() {
        // gain refuses fixed-rate input; tone gives source rate, so a chain of two gains is fine.
        #expect(planError(#"{"stages":[{"id":"a","kind":"tone"},{"id":"g","kind":"gain"},{"id":"h","kind":"gain"}]}"#) == nil)
        // A tone with a fixed rate cannot feed it: the error names both stages and the format.
        #expect(planError(#"{"stages":[{"id":"a","kind":"tone","rate":8000},{"id":"g","kind":"gain"}]}"#)
                == "stages[1] 'g': gain takes only source-rate audio, but 'a' (tone) gives 8 kHz source channels")
    }

    @Test func duplicateIdsAndBadIdsAreErrors() {
        #expect(planError(#"{"stages":[{"id":"a","kind":"tone"},{"id":"a","kind":"gain"}]}"#) == #"stages[1].id: "a" is already the id of stages[0]"#)
        #expect(planError(#"{"stages":[{"id":"a/b","kind":"tone"}]}"#)?.hasPrefix(#"stages[0].id: "a/b" is not a valid id"#) == true)
    }

    @Test func malformedJSONAndMissingStagesAreErrors() {
        #expect(planError("{\"stages\": [")?.hasPrefix("not valid JSON") == true)
        #expect(planError(#"{"name":"x"}"#) == "stages: missing; a spec needs at least one stage")
        #expect(planError(#"{"stages":[],"extra":1}"#) == "extra: unknown top-level field (known: name, description, stages)")
    }

    @Test func canonicalSpecIgnoresKeyOrderAndSchema() throws {
        let a = try plan(#"{"$schema":"schema.json","stages":[{"id":"a","kind":"tone","blocks":2}]}"#)
        let b = try plan(#"{"stages":[{"blocks":2,"kind":"tone","id":"a"}]}"#)
        #expect(a.canonicalSpec == b.canonicalSpec)
        let c = try plan(#"{"stages":[{"blocks":3,"kind":"tone","id":"a"}]}"#)
        #expect(a.canonicalSpec != c.canonicalSpec)
    }
}

@Suite struct DigestTests {
    @Test func knownVectors() {
        #expect(Digest.hex(Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Digest.hex(Data("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Digest.hex(Data("abc".utf8), .sha512) == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
    }

    @Test func streamingEqualsOneShotAndFiles() throws {
        let data = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let d = Digest(.sha256)
        var i = 0
        for size in [1, 63, 64, 65, 1000, 3] { d.update(data[i..<min(i + size, data.count)]); i += size }
        d.update(data[i...])
        #expect(d.finalizeHex() == Digest.hex(data))
        let url = temporaryDirectory().appendingPathComponent("f.bin")
        try data.write(to: url)
        let (hex, bytes) = try Digest.hexOfFile(at: url)
        #expect(hex == Digest.hex(data))
        #expect(bytes == 100_000)
    }
}
