//! One error type for a mistake in a file the lab reads as configuration — a probe file,
//! `probelab.toml`, a dialect file: [`Located`], printed `file:line:col: message` and, when there is
//! one, `  hint: …` on the next line. Code that checks a text before it knows the file (the value
//! passes of a probe, a command subject's table) finds a [`Problem`] at a byte offset (toml's spans);
//! [`Problem::locate`] or [`Located::at`] turn the offset into line and column, the same way for every
//! file ([`line_col`]). The hint is given where the mistake is found, never chosen later from the
//! message's words.

use std::path::{Path, PathBuf};

/// A mistake in a file, at its place: where, what, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}:{col}: {message}{}", file.display(), hint.as_ref().map(|h| format!("\n  hint: {h}")).unwrap_or_default())]
pub struct Located {
    /// The file.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub col: usize,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl Located {
    /// A mistake at byte `offset` of `text`, the text of `file` (an offset past the end is its end).
    pub fn at(file: &Path, text: &str, offset: usize, message: impl Into<String>) -> Located {
        let (line, col) = line_col(text, offset);
        Located { file: file.to_path_buf(), line, col, message: message.into(), hint: None }
    }

    /// The same, with how to fix it.
    pub fn hint(self, hint: impl Into<String>) -> Located {
        Located { hint: Some(hint.into()), ..self }
    }

    /// `file:line:col`, the place alone.
    pub fn place(&self) -> String {
        format!("{}:{}:{}", self.file.display(), self.line, self.col)
    }
}

/// A mistake found in a text whose file the finder does not know: the byte offset to place it at, what
/// is wrong, how to fix it. The caller, who has the file, makes it a [`Located`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Byte offset in the text.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl Problem {
    /// A mistake at byte `offset`.
    pub fn at(offset: usize, message: impl Into<String>) -> Problem {
        Problem { offset, message: message.into(), hint: None }
    }

    /// The same, with how to fix it.
    pub fn hint(self, hint: impl Into<String>) -> Problem {
        Problem { hint: Some(hint.into()), ..self }
    }

    /// Placed in `file`, whose text is `text`.
    pub fn locate(self, file: &Path, text: &str) -> Located {
        Located { hint: self.hint, ..Located::at(file, text, self.offset, self.message) }
    }
}

/// The 1-based line and column (in characters) of byte `offset` of `text` (the end, past it).
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    stub_messages::script::line_col(text, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistake_prints_file_line_col_message_and_its_hint() {
        let text = "a = 1\nbé = 2\n";
        let e = Located::at(Path::new("dir/f.toml"), text, text.find("= 2").unwrap_or(0), "wrong");
        assert_eq!((e.line, e.col), (2, 4), "columns count characters, not bytes");
        assert_eq!(e.to_string(), "dir/f.toml:2:4: wrong");
        assert_eq!(e.place(), "dir/f.toml:2:4");
        let e = Problem::at(0, "wrong").hint("do this").locate(Path::new("f.toml"), text);
        assert_eq!(e.to_string(), "f.toml:1:1: wrong\n  hint: do this");
        let e = Located::at(Path::new("f.toml"), text, 1000, "at the end");
        assert_eq!((e.line, e.col), (3, 1));
    }
}
