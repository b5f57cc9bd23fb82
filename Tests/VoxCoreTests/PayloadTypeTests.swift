import Testing
import VoxCore

/// A payload type declared outside VoxCore, as a domain module declares its own.
extension PayloadType {
    static let note = PayloadType("Note", carrying: [.reply])
}

/// Payload types are open: each is declared with what its values carry, and what it carries
/// decides which stages it may feed, wherever it was declared.
@Suite struct PayloadTypeTests {
    @Test func whatATypeCarriesFollowsFromItsDeclaration() {
        #expect(PayloadType.transcript.carried == [.transcript, .audioChunk])
        #expect(PayloadType.reply.carried == [.reply, .transcript, .audioChunk])
        #expect(PayloadType.speech.carried == [.speech, .audioChunk, .reply, .transcript])
        #expect(PayloadType.audioBlock.carried == [.audioBlock])
        // Declared here, in a test module: it carries what a reply carries, and feeds what takes one.
        #expect(PayloadType.note.carried == [.note, .reply, .transcript, .audioChunk])
        #expect(StageKind(TranscriptTaker.self).accepts(.note))
        #expect(!StageKind(TranscriptTaker.self).accepts(.audioBlock))
        #expect(PayloadType("Note") == .note && "\(PayloadType.note)" == "Note")
    }
}
