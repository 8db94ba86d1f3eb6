//! The file tools' words as the reference writes them: line numbering (READ-3), the notes of a write,
//! the texts of a missing file or search path, sizes.

use crate::context::ToolContext;
use crate::tool::ToolError;
use std::path::{Path, PathBuf};

/// Line numbering as the reference binary writes it (READ-3, measured on Claude Code 2.1.235): the
/// number, a tab, the line — no padding, unlike `cat -n`'s six columns (the textbook runtime's).
pub fn number_lines<'a>(lines: impl Iterator<Item = &'a str>, first: usize) -> String {
    let mut out = String::new();
    for (i, l) in lines.enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{}\t{l}", first + i));
    }
    out
}

/// What Claude Code 2.1.235 appends to every Write and Edit success (measured by
/// `probes/claude-code/edit-texts.toml`): the model need not Read the file back.
pub const FILE_STATE_NOTE: &str = " (file state is current in your context — no need to Read it back)";

/// The reference's text for a file that is not there (Read, Edit): it names the working directory,
/// which is where a relative path would have been looked for.
pub fn missing_file(ctx: &ToolContext) -> String {
    format!("File does not exist. Note: your current working directory is {}.", ctx.working_dir().display())
}

/// The sentence the reference ends its "does not exist" refusals with (Read, Edit, Grep, Glob).
pub fn cwd_note(ctx: &ToolContext) -> String {
    format!("Note: your current working directory is {}.", ctx.working_dir().display())
}

/// Claude Code 2.1.235's second guess for a path that is not there (its `Did you mean …?` for Grep's
/// and Glob's paths, and Edit's after the same-stem one): a path under the working directory's parent
/// but not under the working directory is looked up again under the working directory
/// (`<parent>/x/y` → `<cwd>/x/y`); what exists there is suggested.
pub fn relocated_in_cwd(ctx: &ToolContext, path: &Path) -> Option<PathBuf> {
    let cwd = ctx.working_dir();
    let parent = cwd.parent()?;
    let real = path
        .parent()
        .and_then(|d| std::fs::canonicalize(d).ok())
        .and_then(|d| path.file_name().map(|n| d.join(n)))
        .unwrap_or_else(|| path.to_path_buf());
    if real == cwd || real.starts_with(&cwd) || !real.starts_with(parent) {
        return None;
    }
    let candidate = cwd.join(real.strip_prefix(parent).ok()?);
    std::fs::metadata(&candidate).is_ok().then_some(candidate)
}

/// From 2.1.260 a Grep or Glob path that does not exist is a plain error result, no longer wrapped as an
/// input error (measured by `probes/grep/usage-error.toml` and `glob/basic.toml`: timeline GREP-3 /
/// GLOB-1, 2.1.259 → 2.1.260; the reference checks the path when the call runs from then on).
pub const MISSING_SEARCH_PATH_UNWRAPPED: crate::profile::Switch = crate::profile::Switch {
    name: "a missing Grep / Glob path is a plain error",
    since: "2.1.260",
    probe: "grep.usage-error",
};

/// The error of a Grep / Glob path that does not exist ([`missing_search_path`]), wrapped as an input
/// error before [`MISSING_SEARCH_PATH_UNWRAPPED`] and plain from it.
pub fn missing_search_path_error(ctx: &ToolContext, what: &str, given: &str, path: &Path) -> ToolError {
    let text = missing_search_path(ctx, what, given, path);
    if ctx.profile().has(&MISSING_SEARCH_PATH_UNWRAPPED) {
        ToolError::Runtime(text)
    } else {
        ToolError::Validation(text)
    }
}

/// The refusal of a search path that is not there, as Claude Code 2.1.235 words it: `<what> does not
/// exist: <path as given>. Note: your current working directory is <cwd>.`, with `Did you mean …?`
/// when [`relocated_in_cwd`] finds it (`probes/grep/usage-error.toml`, `probes/glob/basic.toml`).
pub fn missing_search_path(ctx: &ToolContext, what: &str, given: &str, path: &Path) -> String {
    let text = format!("{what} does not exist: {given}. {}", cwd_note(ctx));
    match relocated_in_cwd(ctx, path) {
        Some(p) => format!("{text} Did you mean {}?", p.display()),
        None => text,
    }
}

/// [`missing_file`] for `path`, with the reference's hint when the directory holds a file of the same
/// name with another extension (`… Did you mean notes.md?`).
pub fn missing_file_near(ctx: &ToolContext, path: &Path) -> String {
    let text = missing_file(ctx);
    match similar_file(path) {
        Some(name) => format!("{text} Did you mean {name}?"),
        None => text,
    }
}

/// A file beside `path` with the same stem and another extension (the first by name).
fn similar_file(path: &Path) -> Option<String> {
    let (dir, stem) = (path.parent()?, path.file_stem()?);
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path() != path && Path::new(&e.file_name()).file_stem() == Some(stem))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.into_iter().next()
}

/// The success text of a Write or Edit that changed an existing file (or an Edit that made one).
pub fn updated(path: &Path) -> String {
    format!("The file {} has been updated successfully.{FILE_STATE_NOTE}", path.display())
}

/// A text file as the reference's Edit and Write see it (2.1.235, measured by
/// `harness/tests/fidelity.rs`): decoded as UTF-16LE after an `FF FE` mark, else as UTF-8 with invalid
/// bytes replaced (written back so: the reference does not keep them), CRLF turned into LF, and the line
/// ends to write back with (CRLF when most of the first 4,096 chars' line ends are CRLF).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFile {
    /// The content, LF line ends (a byte-order mark kept).
    pub text: String,
    /// Written back as UTF-16LE.
    pub utf16: bool,
    /// Written back with CRLF line ends.
    pub crlf: bool,
}

impl TextFile {
    /// Decodes bytes.
    pub fn decode(bytes: &[u8]) -> TextFile {
        let utf16 = bytes.len() >= 2 && bytes[0] == 0xFF && bytes[1] == 0xFE;
        let raw = if utf16 {
            let units: Vec<u16> =
                bytes[2..].chunks(2).map(|c| u16::from_le_bytes([c[0], *c.get(1).unwrap_or(&0)])).collect();
            String::from_utf16_lossy(&units)
        } else {
            String::from_utf8_lossy(bytes).into_owned()
        };
        let head: String = raw.chars().take(4096).collect();
        let crlf_ends = head.matches("\r\n").count();
        let crlf = crlf_ends > head.matches('\n').count() - crlf_ends;
        TextFile { text: raw.replace("\r\n", "\n"), utf16, crlf }
    }

    /// The text without a leading byte-order mark (what the reference's checks look at).
    pub fn content(&self) -> &str {
        self.text.strip_prefix('\u{feff}').unwrap_or(&self.text)
    }

    /// The bytes to write for `text` (LF line ends) in this file's encoding and line ends.
    pub fn encode(&self, text: &str) -> Vec<u8> {
        let text = if self.crlf { text.replace("\r\n", "\n").replace('\n', "\r\n") } else { text.to_string() };
        if self.utf16 {
            let mut out = vec![0xFF, 0xFE];
            out.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
            out
        } else {
            text.into_bytes()
        }
    }
}

/// JavaScript's `\s` (the reference trims with it): Unicode white space and the byte-order mark, not NEL.
fn js_space(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// What the reference does to the text a Write or an Edit puts into a file other than Markdown
/// (`.md`, `.mdx`): trailing white space taken off every line (lines end at CRLF, LF or CR).
pub fn trim_line_ends(path: &Path, text: &str) -> String {
    let markdown = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("md") || e.eq_ignore_ascii_case("mdx"));
    if markdown {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['\r', '\n']) {
        out.push_str(rest[..i].trim_end_matches(js_space));
        let end = if rest[i..].starts_with("\r\n") { i + 2 } else { i + 1 };
        out.push_str(&rest[i..end]);
        rest = &rest[end..];
    }
    out.push_str(rest.trim_end_matches(js_space));
    out
}

/// `296.9KB`-style sizes, as the reference formats them.
pub fn format_size(bytes: u64) -> String {
    let (value, unit) = if bytes < 1024 {
        return format!("{bytes} bytes");
    } else if bytes < 1024 * 1024 {
        (bytes as f64 / 1024.0, "KB")
    } else if bytes < 1024 * 1024 * 1024 {
        (bytes as f64 / (1024.0 * 1024.0), "MB")
    } else {
        (bytes as f64 / (1024.0 * 1024.0 * 1024.0), "GB")
    };
    let s = format!("{value:.1}");
    format!("{}{unit}", s.strip_suffix(".0").unwrap_or(&s))
}
