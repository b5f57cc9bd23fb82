import Foundation
import Testing
import VoxCore
import VoxFieldService
import VoxTestSupport
import VoxTesting

@testable import VoxAgent

let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

func transcript(_ text: String, index: Int, language: String? = nil) -> Transcript {
    let chunk = AudioChunk(
        format: AudioFormat(sampleRate: 16000, channels: 1), samples: [], start: Double(index * 5),
        end: Double(index * 5 + 4), index: index, cut: .voice)
    return Transcript(chunk: chunk, text: text, words: [], language: language, provider: "test", model: nil)
}

/// The offline rules agents over text sessions: routing, memory across turns, records saved
/// once their fields are there, stable ids.
struct AgentStageTests {
    func run(
        _ lines: [String], agent: String? = nil, sidecar: [String: JSONValue] = ["startedAt": "2026-03-02T09:15:00Z"]
    ) async throws -> [AgentTurn] {
        var options: [String: JSONValue] = [
            "provider": ["name": "rules"], "records": .string("Pipelines/field-service"),
        ]
        if let agent { options["agent"] = .string(agent) }
        let harness = try StageHarness(AgentStage.self, options: options, baseDirectory: packageRoot)
        let facts = ItemFacts()
        facts[.session] = SessionSidecar(fields: sidecar)
        return try await harness.run(
            lines.enumerated().map { transcript($1, index: $0) }, commit: false, facts: facts
        ).outputs
    }

    func records(_ turns: [AgentTurn]) -> [String: JSONValue] {
        Dictionary(turns.flatMap(\.calls).filter(\.accepted).map { ($0.recordType ?? "?", $0.arguments ?? .null) }) {
            a, _ in a
        }
    }

    @Test func aCallerAddingAContactGetsOneContactRecord() async throws {
        let turns = try await run([
            "I want to add a new contact.", "Her name is Maria Lopez.",
            "Her phone number is 555-0199 and her email is maria at example dot com.",
        ])
        #expect(turns.map(\.agent) == ["contacts", "contacts", "contacts"])
        #expect(
            turns.map(\.reply.text) == [
                "What is the name?", "What is the phone number or e-mail address?", "I saved Maria Lopez as a contact.",
            ])
        #expect(
            records(turns) == [
                "contact": ["name": "Maria Lopez", "phone": "555-0199", "email": "maria@example.com"]
            ])
        #expect(turns[0].handoff == AgentTurn.Handoff(from: "triage", to: "contacts", reason: "\"contact\""))
    }

    @Test func triageHandsAJobThenAnAppointmentToTheirAgentsAndTheCallerIsRemembered() async throws {
        let turns = try await run([
            "Hello, this is John Miller.", "The heating is broken at 42 Main Street, it is urgent.",
            "Can you send someone on Thursday at 9am?",
        ])
        #expect(turns.map(\.agent) == ["triage", "jobs", "scheduling"])
        #expect(
            records(turns) == [
                "job": [
                    "customerName": "John Miller", "address": "42 Main Street", "priority": "urgent",
                    "description": "The heating is broken at 42 Main Street, it is urgent.",
                ],
                "appointment": [
                    "contactName": "John Miller", "date": "2026-03-05", "time": "09:00", "address": "42 Main Street",
                ],
            ])
    }

    @Test func anEstimateIsSavedWhenTheCallerSaysItIsCompleteOrWhenTheSessionEnds() async throws {
        let lines = [
            "I need an estimate for Sarah Johnson.", "Two filters at $50 each.",
            "And three hours of labor at 80 dollars per hour.",
        ]
        let expected: JSONValue = [
            "customerName": "Sarah Johnson", "currency": "USD", "subtotal": 340, "total": 340,
            "lineItems": [
                ["description": "filters", "quantity": 2, "unitPrice": 50, "total": 100],
                ["description": "hours of labor", "quantity": 3, "unitPrice": 80, "total": 240],
            ],
        ]
        let closed = try await run(lines + ["That's all."])
        #expect(records(closed) == ["estimate": expected])
        #expect(closed.last?.reply.text == "The estimate for Sarah Johnson comes to 340.00 USD.")
        let open = try await run(lines)
        #expect(records(open) == ["estimate": expected])
        #expect(open.last?.calls.count == 1)
    }

    @Test func aGermanCallerBooksAnAppointmentInGerman() async throws {
        let turns = try await run(
            [
                "Guten Morgen, ich möchte einen Termin vereinbaren.", "Mein Name ist Jonas Weber.",
                "Am Dienstag um 14 Uhr in der Hauptstraße 5.",
            ], sidecar: ["language": "de", "startedAt": "2026-03-02T09:15:00Z"])
        #expect(
            turns.map(\.reply.text) == [
                "Für wen ist der Termin?", "An welchem Tag?",
                "Der Termin für Jonas Weber ist am 2026-03-03 um 14:00 Uhr.",
            ])
        #expect(
            records(turns) == [
                "appointment": [
                    "contactName": "Jonas Weber", "date": "2026-03-03", "time": "14:00", "address": "Hauptstraße 5",
                ]
            ])
    }

    @Test func recordIdsAreTheSameOnARerunAndDifferPerTurn() async throws {
        let lines = [
            "Add a contact named Anna Berg, email anna@berg.de.", "New contact: Bob Stone, phone 030 1234567.",
        ]
        let first = try await run(lines), second = try await run(lines)
        let ids = first.flatMap(\.calls).map(\.recordID)
        #expect(ids.count == 2 && Set(ids).count == 2)
        #expect(ids == second.flatMap(\.calls).map(\.recordID))
        #expect(ids.allSatisfy { $0.hasPrefix("contact-") && $0.count == "contact-".count + 12 })
    }

    @Test func aSavedRecordIsNotSavedAgainByLaterDetails() async throws {
        let turns = try await run([
            "Add a contact named Anna Berg, email anna@berg.de.", "Her phone is 030 1234567.",
        ])
        #expect(turns.flatMap(\.calls).count == 1)
    }

    @Test func aPinnedAgentIgnoresRouting() async throws {
        let turns = try await run(
            ["The boiler is broken, can you send someone tomorrow at 10 am?"], agent: "scheduling")
        #expect(turns.map(\.agent) == ["scheduling"])
        #expect(turns[0].reply.text == "Who is the appointment for?")
    }

    @Test func anInvalidCallIsRejectedNamingThePathAndNeverAccepted() throws {
        let catalog = try RecordCatalog(folder: packageRoot.appendingPathComponent("Pipelines/field-service"))
        let tools = Toolbox(catalog: catalog, item: "a.wav", turn: 3)
        let wrongType = tools.call(
            name: "save_contact", arguments: nil, raw: #"{"name": "A", "phone": 5550199}"#, id: "call_1", index: 0)
        #expect(wrongType.rejection == .init(path: "$.phone", message: "expected string, got a number"))
        #expect(wrongType.recordType == "contact" && !wrongType.accepted)
        let malformed = tools.call(name: "save_contact", arguments: nil, raw: #"{"name": "A""#, id: "call_2", index: 1)
        #expect(malformed.rejection?.path == "$" && malformed.rawArguments == #"{"name": "A""#)
        let unknown = tools.call(name: "delete_everything", arguments: ["x": 1], raw: nil, id: nil, index: 2)
        #expect(unknown.rejection?.message.hasPrefix("no function delete_everything") == true)
    }

    @Test func theSpecMustNameARecordsFolderWithTheAgentsRecordTypes() throws {
        let dir = temporaryDirectory()
        try Data(#"{"type": "object"}"#.utf8).write(to: dir.appendingPathComponent("contact.schema.json"))
        #expect {
            try StageHarness(
                AgentStage.self, options: ["provider": ["name": "rules"], "records": .string(dir.path)])
        } throws: { error in
            "\(error)".contains("has no job.schema.json, which the jobs agent saves")
        }
        #expect(
            throws: Never.self,
            performing: {
                try StageHarness(
                    AgentStage.self,
                    options: ["provider": ["name": "rules"], "records": .string(dir.path), "agent": "contacts"])
            })
    }
}

/// Values found in single utterances.
struct SlotExtractorTests {
    let extractor = SlotExtractor(referenceDate: DateComponents(year: 2026, month: 3, day: 2), currency: "USD")

    @Test func namesPhonesAndEmailsAreFound() {
        let a = extractor.extract("Hi, my name is Maria Lopez, call me at (030) 123-4567 or maria.lopez@example.org.")
        #expect(a.name == "Maria Lopez" && a.phone == "030-123-4567" && a.email == "maria.lopez@example.org")
        #expect(extractor.extract("ich heiße Jonas Weber").name == "Jonas Weber")
        #expect(extractor.extract("Her email is Maria at www.example.com").email == "maria@example.com")
        #expect(extractor.extract("Guten Morgen").name == nil)
    }

    @Test func addressesInEnglishAndGerman() {
        #expect(extractor.extract("the heating is broken at 42 main street").address == "42 Main Street")
        #expect(extractor.extract("bitte in die Lindenallee 12b kommen").address == "Lindenallee 12b")
    }

    @Test func datesResolveAgainstTheSessionDay() {
        // 2026-03-02 is a Monday.
        #expect(extractor.extract("on Thursday").date == "2026-03-05")
        #expect(extractor.extract("next Monday please").date == "2026-03-09")
        #expect(extractor.extract("tomorrow at noon").date == "2026-03-03")
        #expect(extractor.extract("Guten Morgen!").date == nil)
        #expect(extractor.extract("morgen um 8 Uhr").date == "2026-03-03")
        #expect(extractor.extract("am 3. März").date == "2026-03-03")
        #expect(extractor.extract("on the 1st of February").date == "2027-02-01")
        #expect(SlotExtractor(referenceDate: nil, currency: "USD").extract("on Thursday").date == nil)
    }

    @Test func timesInBothLanguages() {
        #expect(extractor.extract("at 9am").time == "09:00")
        #expect(extractor.extract("at 2:30 p.m.").time == "14:30")
        #expect(extractor.extract("um 14 Uhr 30").time == "14:30")
        #expect(extractor.extract("at 16:45").time == "16:45")
        #expect(extractor.extract("at nine in the morning").time == "09:00")
        #expect(extractor.extract("it costs $12.50").time == nil)
    }

    @Test func lineItemsWithQuantitiesAndAmounts() {
        let found = extractor.extract("Two filters at $50 each and 1.5 hours of labor for 80 euros per hour.")
        #expect(
            found.lineItems == [
                .init(description: "filters", quantity: 2, unitPrice: 50),
                .init(description: "hours of labor", quantity: 1.5, unitPrice: 80),
            ])
        #expect(found.currency == "USD")
        #expect(
            extractor.extract("drei Ventile zu 20 Euro").lineItems == [
                .init(description: "Ventile", quantity: 3, unitPrice: 20)
            ])
    }
}
