import Foundation
import Testing
import VoxCore
import VoxTestSupport

@testable import VoxAgent

/// Record schemas reject what they should, naming the JSON path of the violation.
struct JSONSchemaTests {
    let catalog: RecordCatalog

    init() throws {
        catalog = try RecordCatalog(folder: packageRoot.appendingPathComponent("Pipelines/field-service"))
    }

    func violation(_ type: String, _ json: String) -> String? {
        guard let record = catalog.type(named: type), let value = try? JSONValue.parse(Data(json.utf8)) else {
            return "unparsable"
        }
        do {
            try catalog.validate(value, as: record)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func theShippedRecordTypesAreTheFourFieldServiceRecords() {
        #expect(catalog.types.map(\.name) == ["appointment", "contact", "estimate", "job"])
        #expect(catalog.types.map(\.function).contains("save_estimate"))
    }

    @Test func validRecordsPass() {
        #expect(violation("contact", #"{"name": "Maria Lopez", "email": "maria@example.com"}"#) == nil)
        #expect(violation("appointment", #"{"contactName": "A B", "date": "2026-03-05", "time": "09:00"}"#) == nil)
        #expect(
            violation(
                "estimate",
                #"{"customerName": "S J", "currency": "USD", "subtotal": 340, "total": 340, "lineItems": ["#
                    + #"{"description": "filters", "quantity": 2, "unitPrice": 50, "total": 100},"#
                    + #"{"description": "labor", "quantity": 3, "unitPrice": 80, "total": 240}]}"#) == nil)
    }

    @Test func aWrongTypeIsRejectedAtItsPath() {
        #expect(
            violation("contact", #"{"name": "Maria", "phone": 5550199}"#) == "$.phone: expected string, got a number")
    }

    @Test func aMissingRequiredFieldIsRejectedAtItsPathInsideAnArray() {
        #expect(
            violation(
                "estimate",
                #"{"customerName": "S", "currency": "USD", "subtotal": 100, "total": 100, "lineItems": ["#
                    + #"{"description": "a", "quantity": 1, "unitPrice": 50, "total": 50},"#
                    + #"{"description": "b", "unitPrice": 50, "total": 50}]}"#)
                == "$.lineItems[1].quantity: required property is missing")
    }

    @Test func totalsThatDoNotAddUpAreRejected() {
        #expect(
            violation(
                "estimate",
                #"{"customerName": "S", "currency": "USD", "subtotal": 100, "total": 120, "lineItems": ["#
                    + #"{"description": "a", "quantity": 2, "unitPrice": 50, "total": 100}]}"#)
                == "$.total: is 120.00 but line items and tax add up to 100.00")
        #expect(
            violation(
                "estimate",
                #"{"customerName": "S", "currency": "USD", "subtotal": 90, "total": 90, "lineItems": ["#
                    + #"{"description": "a", "quantity": 2, "unitPrice": 50, "total": 90}]}"#)
                == "$.lineItems[0].total: is 90.00 but quantity × unitPrice is 100.00")
    }

    @Test func enumsFormatsAnyOfAndUnknownPropertiesAreChecked() {
        #expect(
            violation(
                "job", #"{"customerName": "A", "address": "1 A St", "description": "fix it", "priority": "asap"}"#)
                == #"$.priority: must be one of "low", "normal", "urgent""#)
        #expect(
            violation("appointment", #"{"contactName": "A", "date": "2026-02-30", "time": "09:00"}"#)
                == #"$.date: "2026-02-30" is not a valid date"#)
        #expect(violation("contact", #"{"name": "A"}"#) == "$.phone: required property is missing")
        #expect(
            violation("contact", #"{"name": "A", "email": "a@b.de", "colour": "red"}"#)
                == "$.colour: property is not allowed")
    }

    @Test func aSchemaWithAKeywordTheValidatorDoesNotCheckIsRefusedWhenItLoads() throws {
        let dir = temporaryDirectory()
        try Data(#"{"type": "object", "properties": {"a": {"type": "string", "contentEncoding": "base64"}}}"#.utf8)
            .write(to: dir.appendingPathComponent("thing.schema.json"))
        #expect {
            try RecordCatalog(folder: dir)
        } throws: { error in
            "\(error)".contains(
                #"thing.schema.json: #/properties/a/contentEncoding: unsupported keyword "contentEncoding""#)
        }
    }
}
