//! What the reference's file tools do with a file that is not plain text: from 2.1.296 Edit and
//! NotebookEdit refuse a file that is not valid UTF-8 ([`LOSSY_FILE_REFUSED`]); from 2.1.299 a file is
//! classified ([`not_text`]: not UTF-8, NUL bytes, UTF-16 big-endian, UTF-16LE of an odd length), Read
//! says so after the content and Edit, Write and NotebookEdit refuse it ([`NOT_TEXT_REFUSED`]), and a
//! Write over a file with a UTF-8 byte-order mark keeps the mark ([`BOM_KEPT`]). Before, the file
//! tools read such a file lossily and wrote it back as UTF-8 (the reference 2.1.235, which the runtime
//! follows without a profile).
//!
//! Measured by `harness/tests/fidelity.rs` (its invalid-UTF-8, NUL-byte and BOM input classes) against
//! 2.1.296, 2.1.299 and 2.1.333, and by `probes/read/encodings.toml`; the texts are the reference's,
//! read from the 2.1.296 and 2.1.333 binaries. `since` bisected with the binaries' texts (npm tarballs of
//! 2.1.293–2.1.296; 2.1.297 and 2.1.298 were never published).

use crate::context::ToolContext;
use crate::profile::Switch;

/// From 2.1.296 Edit and NotebookEdit refuse a file that is not valid UTF-8 (a lossy decode), and Write
/// refuses content holding U+FFFD over one ([`lossy_refusal`]).
pub const LOSSY_FILE_REFUSED: Switch =
    Switch { name: "Edit refuses a file that is not valid UTF-8", since: "2.1.296", probe: "read.encodings" };

/// From 2.1.299 a file that is not text ([`not_text`]) gets a note after Read's content and is refused by
/// Edit, Write and NotebookEdit ([`read_note`], [`refusal`]); it replaces [`LOSSY_FILE_REFUSED`].
pub const NOT_TEXT_REFUSED: Switch = Switch {
    name: "a file that is not text: Read notes it, Edit / Write / NotebookEdit refuse it",
    since: "2.1.299",
    probe: "read.encodings",
};

/// From 2.1.299 a Write over a file that starts with a UTF-8 byte-order mark keeps the mark (unless the
/// new content is empty or has its own).
pub const BOM_KEPT: Switch =
    Switch { name: "Write keeps a file's byte-order mark", since: "2.1.299", probe: "read.encodings" };

/// Why a file is not text, as the reference classifies its bytes (2.1.299 on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotText {
    /// Not valid UTF-8 (and no UTF-16 mark).
    NotUtf8,
    /// A NUL byte in the first 8,000 bytes.
    Nul,
    /// Starts with `FE FF`.
    Utf16Be,
    /// Starts with `FF FE` and has an odd length.
    Utf16LeOdd,
}

impl NotText {
    /// The reference's description of the file (after "File " or "This file ").
    fn what(self) -> &'static str {
        match self {
            NotText::NotUtf8 => "is not valid UTF-8: it uses a legacy encoding such as Windows-1252, Shift-JIS or GBK, or it is binary",
            NotText::Nul => "has NUL bytes in its first 8 KB: binary data, UTF-16/UTF-32 without a byte-order mark, or text with embedded NULs",
            NotText::Utf16Be => "is UTF-16 big-endian (it starts FE FF), which these tools cannot write",
            NotText::Utf16LeOdd => "starts with the UTF-16LE byte-order mark (FF FE) but has an odd number of bytes",
        }
    }
}

/// The class of a file's bytes: `None` for text (UTF-8, or UTF-16LE behind its mark).
pub fn not_text(bytes: &[u8]) -> Option<NotText> {
    let utf16le = bytes.len() >= 2 && bytes[0] == 0xFF && bytes[1] == 0xFE;
    if utf16le {
        return (!bytes.len().is_multiple_of(2)).then_some(NotText::Utf16LeOdd);
    }
    if bytes.len() >= 2 && bytes[0] == 0xFE && bytes[1] == 0xFF {
        return Some(NotText::Utf16Be);
    }
    if bytes[..bytes.len().min(8000)].contains(&0) {
        return Some(NotText::Nul);
    }
    std::str::from_utf8(bytes).is_err().then_some(NotText::NotUtf8)
}

/// What Read appends to a file's content (after a blank line) at 2.1.299 on.
pub fn read_note(kind: NotText) -> String {
    match kind {
        NotText::Utf16LeOdd => format!(
            "[This file {}. Its last byte is not shown above. Edit will refuse it until its length is fixed; Write can replace it.]",
            kind.what()
        ),
        _ => {
            let undecodable =
                if kind == NotText::NotUtf8 { " Its undecodable bytes show above as U+FFFD." } else { "" };
            format!(
                "[This file {}.{undecodable} Edit and Write will refuse it: change it with a shell command that keeps its encoding, or ask the user whether to convert it to UTF-8.]",
                kind.what()
            )
        }
    }
}

/// The refusal of Edit, Write and NotebookEdit at 2.1.299 on.
pub fn refusal(kind: NotText) -> String {
    match kind {
        NotText::Utf16LeOdd => format!(
            "File {}. Saving it would drop its last byte, so nothing was written. Fix its length with a shell command, or ask the user, then Read it again.",
            kind.what()
        ),
        _ => format!(
            "File {}. These tools write UTF-8 (or UTF-16LE behind its byte-order mark) and never convert a file's encoding on their own, so nothing was written. If the file is text, make the change with a shell command that reads and writes it in its own encoding (iconv, or PowerShell Get-Content/Set-Content -Encoding), or ask the user whether to convert it to UTF-8 first. To replace the whole file with new UTF-8 text anyway, delete it first, then Write it.",
            kind.what()
        ),
    }
}

/// 2.1.296's refusal by Edit and NotebookEdit of a file that is not valid UTF-8.
pub const LOSSY_EDIT_REFUSAL: &str = "File is not valid UTF-8. It may use a legacy encoding such as Windows-1252, Shift-JIS or GBK, or be binary. This tool saves the whole file as UTF-8, which would replace every byte it cannot decode with U+FFFD. Nothing was written. Make the change with a shell command that reads and writes the file in its own encoding, or ask the user whether to convert the file to UTF-8 first.";

/// 2.1.296's refusal by Write of content holding U+FFFD over a file that is not valid UTF-8.
pub const LOSSY_WRITE_REFUSAL: &str = "The file on disk is not valid UTF-8, and the new content holds U+FFFD, which is what Read shows for the bytes of that file it cannot decode. If the content came from Read, writing it destroys those characters. Nothing was written. Make the change with a shell command that reads and writes the file in its own encoding, or ask the user whether to convert the file to UTF-8 first.";

/// The file's bytes decode lossily as the reference's 2.1.296 decodes them (UTF-8 without a UTF-16LE
/// mark, and not valid).
fn lossy(bytes: &[u8]) -> bool {
    !(bytes.len() >= 2 && bytes[0] == 0xFF && bytes[1] == 0xFE) && std::str::from_utf8(bytes).is_err()
}

/// Edit's and NotebookEdit's refusal of the file `bytes` at the session's release (after their gates),
/// `None` when it may be edited.
pub fn edit_refusal(ctx: &ToolContext, bytes: &[u8]) -> Option<String> {
    if ctx.profile().has(&NOT_TEXT_REFUSED) {
        return not_text(bytes).map(refusal);
    }
    (ctx.profile().has(&LOSSY_FILE_REFUSED) && lossy(bytes)).then(|| LOSSY_EDIT_REFUSAL.to_string())
}

/// Write's refusal of `content` over the file `bytes` at the session's release, `None` when it goes ahead
/// (a UTF-16LE file of an odd length may be replaced).
pub fn write_refusal(ctx: &ToolContext, bytes: &[u8], content: &str) -> Option<String> {
    if ctx.profile().has(&NOT_TEXT_REFUSED) {
        return not_text(bytes).filter(|k| *k != NotText::Utf16LeOdd).map(refusal);
    }
    (ctx.profile().has(&LOSSY_FILE_REFUSED) && lossy(bytes) && content.contains('\u{FFFD}'))
        .then(|| LOSSY_WRITE_REFUSAL.to_string())
}

/// Read's note after the content of the file `bytes` at the session's release.
pub fn read_note_at(ctx: &ToolContext, bytes: &[u8]) -> Option<String> {
    ctx.profile().has(&NOT_TEXT_REFUSED).then(|| not_text(bytes).map(read_note)).flatten()
}

/// The content a Write puts over `old` (the file's decoded text): from 2.1.299 with the old text's
/// byte-order mark when it had one and the new non-empty content has none.
pub fn keep_bom(ctx: &ToolContext, old: &str, new: &str) -> String {
    if ctx.profile().has(&BOM_KEPT) && !new.is_empty() && old.starts_with('\u{feff}') && !new.starts_with('\u{feff}') {
        format!("\u{feff}{new}")
    } else {
        new.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(version: &str) -> (tempfile::TempDir, ToolContext) {
        let (d, c) = ToolContext::for_test();
        (d, c.with_profile(crate::profile::Profile::at(version).unwrap_or_else(|e| panic!("{e}"))))
    }

    #[test]
    fn files_are_classified_as_the_reference_classifies_them() {
        assert_eq!(not_text(b"plain\n"), None);
        assert_eq!(not_text(b""), None);
        assert_eq!(not_text(b"\xef\xbb\xbfbom\n"), None);
        assert_eq!(not_text(b"\xff\xfeh\x00"), None);
        assert_eq!(not_text(b"\xff\xfeh\x00!"), Some(NotText::Utf16LeOdd));
        assert_eq!(not_text(b"\xfe\xff\x00h"), Some(NotText::Utf16Be));
        assert_eq!(not_text(b"a\x00b\xe9"), Some(NotText::Nul));
        assert_eq!(not_text(b"caf\xe9\n"), Some(NotText::NotUtf8));
        let mut late = vec![b'a'; 8000];
        late.push(0);
        assert_eq!(not_text(&late), None, "a NUL past the first 8,000 bytes");
    }

    #[test]
    fn edit_and_write_refuse_from_2_1_296_and_classify_from_2_1_299() {
        let invalid = b"caf\xe9\n";
        let nul = b"a\x00b\n";
        for (version, edit, write, write_fffd) in [
            ("2.1.235", None, None, None),
            ("2.1.295", None, None, None),
            ("2.1.296", Some(LOSSY_EDIT_REFUSAL.to_string()), None, Some(LOSSY_WRITE_REFUSAL.to_string())),
            (
                "2.1.299",
                Some(refusal(NotText::NotUtf8)),
                Some(refusal(NotText::NotUtf8)),
                Some(refusal(NotText::NotUtf8)),
            ),
            (
                "2.1.333",
                Some(refusal(NotText::NotUtf8)),
                Some(refusal(NotText::NotUtf8)),
                Some(refusal(NotText::NotUtf8)),
            ),
        ] {
            let (_d, c) = at(version);
            assert_eq!(edit_refusal(&c, invalid), edit, "{version}");
            assert_eq!(write_refusal(&c, invalid, "new"), write, "{version}");
            assert_eq!(write_refusal(&c, invalid, "caf\u{FFFD}"), write_fffd, "{version}");
            // NUL bytes that are valid UTF-8: only the classification refuses them
            let classified = version >= "2.1.299";
            assert_eq!(edit_refusal(&c, nul).is_some(), classified, "{version}");
            assert_eq!(read_note_at(&c, nul).is_some(), classified, "{version}");
        }
        let (_d, c) = at("2.1.333");
        assert_eq!(write_refusal(&c, b"\xff\xfeh\x00!", "x"), None, "Write may replace an odd UTF-16LE file");
        assert!(edit_refusal(&c, b"\xff\xfeh\x00!").is_some_and(|t| t.contains("Saving it would drop its last byte")));
        assert_eq!(
            read_note_at(&c, b"caf\xe9").as_deref(),
            Some("[This file is not valid UTF-8: it uses a legacy encoding such as Windows-1252, Shift-JIS or GBK, or it is binary. Its undecodable bytes show above as U+FFFD. Edit and Write will refuse it: change it with a shell command that keeps its encoding, or ask the user whether to convert it to UTF-8.]")
        );
    }

    #[test]
    fn a_write_keeps_the_byte_order_mark_from_2_1_299() {
        for (version, kept) in [("2.1.235", false), ("2.1.296", false), ("2.1.299", true), ("2.1.333", true)] {
            let (_d, c) = at(version);
            let want = if kept { "\u{feff}new\n" } else { "new\n" };
            assert_eq!(keep_bom(&c, "\u{feff}old\n", "new\n"), want, "{version}");
            assert_eq!(keep_bom(&c, "\u{feff}old\n", ""), "", "{version}: empty content stays empty");
            assert_eq!(keep_bom(&c, "old\n", "new\n"), "new\n", "{version}");
        }
    }
}
