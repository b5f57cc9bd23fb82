import Foundation
import Testing
import VoxCore

/// Key files as voxpipe reads them: comments and blank lines are not keys, and a file without a
/// key is an error, never "no key".
@Suite struct KeyFileTests {
    @Test func commentsAndBlankLinesAreNotKeys() {
        #expect(KeyFile.keys("# the tutor app\n\n  sk-one  \n#sk-not-a-key\r\nsk-two\n") == ["sk-one", "sk-two"])
    }

    @Test func aFileOfCommentsOnlyOrNothingIsAnErrorNamingIt() throws {
        for text in ["", "\n\n", "# nothing yet\n"] {
            let url = temporaryFile(text)
            let expected = VoxError(
                .unavailable, "the API key file \(url) holds no key (only blank or # comment lines)")
            #expect(throws: expected) { try KeyFile.read(url) }
        }
        #expect(throws: VoxError(.unavailable, "cannot read the API key file /nonexistent/key")) {
            try KeyFile.read("/nonexistent/key")
        }
    }

    func temporaryFile(_ text: String) -> String {
        let path = "/tmp/voxpipe-keyfile-\(UInt64.random(in: 0...UInt64.max))"
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }
}
