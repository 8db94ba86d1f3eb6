//! Read (READ-1..4): a text file `cat -n` numbered with offset / limit; images as a base64 `image` block;
//! PDFs as a `document` block; notebooks rendered cell by cell. A whole-file read over 256 KB is refused,
//! and so is output over 25,000 tokens (counted by the subject's API, overridable by env) — errors, never
//! silent truncation. A successful read is remembered for the Edit / Write gates (READ-4).

use crate::context::ToolContext;
use crate::fs::{confine, format_size, number_lines, remember_read};
use crate::profile::Switch;
use crate::tool::{PermissionSubject, ToolError, ToolOutput, TypedTool};
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};
use std::io::BufRead;
use std::path::Path;

/// Largest file a Read without offset/limit returns (READ-2: MAX_OUTPUT_SIZE, 256 KB; 262,144 bytes
/// read, 262,145 refused on 2.1.235).
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Largest output in tokens (READ-2).
pub const MAX_OUTPUT_TOKENS: u64 = 25_000;

/// Env variable that overrides [`MAX_OUTPUT_TOKENS`] (READ-2).
pub const MAX_OUTPUT_TOKENS_ENV: &str = "CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS";

/// From 2.1.296 Read's size and token errors end with a hint at its `allow_large` input (measured by
/// `probes/read/size-limit.toml`, `read/token-limit.toml` and `claude-code/read-size.toml`: timeline
/// READ-2, 2.1.295 → 2.1.296).
pub const ALLOW_LARGE_HINT: Switch =
    Switch { name: "Read's size and token errors offer allow_large", since: "2.1.296", probe: "read.size-limit" };

/// The hint [`ALLOW_LARGE_HINT`] appends (the reference's text, read from the 2.1.333 binary).
const ALLOW_LARGE_HINT_TEXT: &str = " To read it anyway, up to what still fits in your context, call Read again with allow_large: true \u{2014} only if you genuinely need all of it or the user asked for the whole file.";

/// What follows a size or token error at the session's release: nothing before [`ALLOW_LARGE_HINT`].
fn too_large_hint(ctx: &ToolContext) -> &'static str {
    if ctx.profile().has(&ALLOW_LARGE_HINT) {
        ALLOW_LARGE_HINT_TEXT
    } else {
        ""
    }
}

// No line limit and no line cut: Claude Code 2.1.235 returns every line of a file within the size and
// token limits, whole (measured by harness/tests/fidelity.rs: a 2,500-char line comes back whole).

const IMAGE_TYPES: &[(&str, &str)] = &[
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
];

/// The extensions the reference's Read refuses as binary (2.1.235's list, read from the binary and
/// measured by `harness/tests/fidelity.rs`); the image types and `pdf` among them are read instead.
const BINARY_EXTENSIONS: &[&str] = &[
    "bmp", "ico", "tiff", "tif", "mp4", "mov", "avi", "mkv", "webm", "wmv", "flv", "m4v", "mpeg", "mpg", "mp3", "wav",
    "ogg", "flac", "aac", "m4a", "wma", "aiff", "opus", "zip", "tar", "gz", "bz2", "7z", "rar", "xz", "z", "tgz",
    "iso", "exe", "dll", "so", "dylib", "bin", "o", "a", "obj", "lib", "app", "msi", "deb", "rpm", "doc", "docx",
    "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", "ttf", "otf", "woff", "woff2", "eot", "pyc", "pyo", "class",
    "jar", "war", "ear", "node", "wasm", "rlib", "sqlite", "sqlite3", "db", "mdb", "idx", "psd", "ai", "eps", "sketch",
    "fig", "xd", "blend", "3ds", "max", "swf", "fla", "lockb", "dat", "data",
];

/// The Read tool.
#[derive(Debug, Default)]
pub struct Read;

#[derive(Debug, Deserialize)]
pub struct Args {
    file_path: String,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default)]
    pages: Option<String>,
}

impl TypedTool for Read {
    const NAME: &'static str = "Read";
    const DESCRIPTION: &'static str = "Reads a file from the local filesystem.\n\nUsage:\n- The file_path parameter must be an absolute path\n- By default, it reads up to 2000 lines starting from the beginning of the file\n- You can optionally specify a line offset and limit (especially handy for long files)\n- Any lines longer than 2000 characters will be truncated\n- Results are returned using cat -n format, with line numbers starting at 1\n- This tool can read images (PNG, JPG, GIF, WEBP), PDF files and Jupyter notebooks (.ipynb)\n- Files over 256KB need offset and limit";
    const READ_ONLY: bool = true;
    const CONCURRENCY_SAFE: bool = true;
    const MAX_RESULT_SIZE_CHARS: Option<usize> = None; // PIPE-5: Read limits itself
    type Args = Args;

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The absolute path to the file to read"},
                "offset": {"type": "integer", "minimum": 0, "description": "The line number to start reading from. Only provide if the file is too large to read at once"},
                "limit": {"type": "integer", "minimum": 1, "description": "The number of lines to read. Only provide if the file is too large to read at once."},
                "pages": {"type": "string", "description": "Page range for PDF files (e.g. \"1-5\"). Only for PDFs."}
            },
            "required": ["file_path"],
            "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"
        })
    }

    fn permission_subject(&self, input: &Value, ctx: &ToolContext) -> PermissionSubject {
        crate::fs::path_subject(input, "file_path", false, ctx)
    }

    fn denied(&self, subject: &PermissionSubject, _rule: &str, ctx: &ToolContext) -> Option<ToolError> {
        crate::fs::read_denied(ctx, Self::NAME, subject)
    }

    /// Claude Code 2.1.235 refuses the devices of its list by name before it looks at anything else
    /// (`probes/claude-code/read-special.toml`): so does the built-in runtime, before its sandbox check.
    fn check_before_permissions(&self, input: &Value, ctx: &ToolContext) -> Option<String> {
        let given = input.get("file_path").and_then(Value::as_str)?;
        blocking_device(&crate::fs::absolute(ctx, given)).then(|| device_refusal(ctx, given))
    }

    async fn call(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        {
            let path = confine(ctx, &args.file_path)?;
            // the reference refuses by extension before it looks at the file (its validation step)
            if let Some(ext) = binary_extension(&path) {
                return Err(ToolError::Validation(format!(
                    "This tool cannot read binary files. The file appears to be a binary {ext} file. {}",
                    binary_hint(ctx)
                )));
            }
            // a second Read of the same window of an unchanged file, in a later batch: the reference's note
            // (until 2.1.317: [`NO_UNCHANGED_NOTE`])
            let window = (args.offset.unwrap_or(1), args.limit);
            let seen = ctx.read_state.lock().ok().and_then(|s| s.get(&path).cloned());
            if let Some(seen) = seen.filter(|_| !ctx.profile().has(&NO_UNCHANGED_NOTE)) {
                if seen.window == Some(window)
                    && seen.batch != crate::fs::ReadBatch::current(ctx)
                    && seen.mtime.is_some()
                    && seen.mtime == crate::fs::mtime(&path)
                {
                    return Ok(ToolOutput::Text(crate::fs::FILE_UNCHANGED.into()));
                }
            }
            // measured on 2.1.235: an error result, not wrapped as an input error, naming the working dir
            let meta =
                std::fs::metadata(&path).map_err(|_| ToolError::Runtime(crate::fs::missing_file_near(ctx, &path)))?;
            if meta.is_dir() {
                return Err(ToolError::Runtime(format!(
                    "EISDIR: illegal operation on a directory, read '{}'",
                    path.display()
                )));
            }
            if !meta.is_file() {
                return Err(not_regular(ctx, &path, meta.file_type()));
            }
            let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
            if ext == "pdf" {
                return pdf(ctx, &path, args.pages.as_deref());
            }
            // the reference checks a `pages` value's form for any file and uses it only for a PDF: an image
            // or a text file with `pages` is read as without (`probes/read/media.toml`)
            if let Some(p) = args.pages.as_deref() {
                parse_pages(p)?;
            }
            if let Some((_, media)) = IMAGE_TYPES.iter().find(|(e, _)| *e == ext) {
                return image(ctx, &path, media);
            }
            if ext == "ipynb" {
                return notebook(ctx, &path, window).await;
            }
            // like the reference, the size limit holds whenever no limit is given (an offset alone too)
            if args.limit.is_none() && meta.len() > MAX_FILE_BYTES {
                return Err(ToolError::Runtime(format!(
                    "File content ({}) exceeds maximum allowed size ({}). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file.{}",
                    format_size(meta.len()),
                    format_size(MAX_FILE_BYTES),
                    too_large_hint(ctx)
                )));
            }
            let windowed = args.offset.is_some_and(|o| o > 1) || args.limit.is_some();
            // offset 0 reads from the first line but numbers from 0, as the reference does
            let first_number = args.offset.unwrap_or(1) as usize;
            let start = args.offset.map(|o| o.saturating_sub(1) as usize).unwrap_or(0);
            let limit = args.limit.map(|l| l as usize).unwrap_or(usize::MAX);
            let window_lines =
                read_window(&path, start, limit).map_err(|e| ToolError::Runtime(format!("{e}: {}", path.display())))?;
            let text = render_window(&path, &window_lines, first_number)?;
            if !windowed {
                // a whole-file Read over the ceiling gets a page, as the reference pages it
                if let Some((tokens, max)) = tokens_over(ctx, &text).await? {
                    let (page, note) = token_page(&path, &window_lines.lines, tokens, max);
                    crate::fs::remember_window(ctx, &path, Vec::new(), true, Some(window));
                    if let Some(id) = &ctx.call_id {
                        ctx.session.followups.push(id, note);
                    }
                    return Ok(ToolOutput::Text(number_lines(page.iter().map(String::as_str), first_number)));
                }
            } else {
                check_tokens(ctx, &text).await?;
            }
            // the file is read again whole for the read state (and the note below): should it have gone
            // or changed into something unreadable since its window was read, the call fails as a Read of
            // it would have, rather than remembering an empty file the model never saw
            let whole = if windowed { Vec::new() } else { read_whole(&path)? };
            // from 2.1.299 a file that is not text says so after its content, past a blank line
            let note = match ctx.profile().has(&crate::encoding::NOT_TEXT_REFUSED) {
                false => None,
                true if windowed => crate::encoding::read_note_at(ctx, &read_whole(&path)?),
                true => crate::encoding::read_note_at(ctx, &whole),
            };
            crate::fs::remember_window(ctx, &path, whole, windowed, Some(window));
            match note {
                Some(note) => Ok(ToolOutput::Text(format!("{text}\n\n{note}"))),
                None => Ok(ToolOutput::Text(text)),
            }
        }
    }
}

/// From 2.1.290 Read's refusal of a binary extension points at a skill or a shell command (bisected with
/// the npm tarballs' texts: 2.1.289 has the old sentence, 2.1.290 the new; measured by
/// `harness/tests/fidelity.rs` and `probes/read/encodings.toml`).
pub const BINARY_REFUSAL_SUGGESTS_SKILL: Switch = Switch {
    name: "Read's binary refusal suggests a skill or a shell command",
    since: "2.1.290",
    probe: "read.encodings",
};

/// The sentence that ends Read's refusal of a binary extension at the session's release.
fn binary_hint(ctx: &ToolContext) -> &'static str {
    if ctx.profile().has(&BINARY_REFUSAL_SUGGESTS_SKILL) {
        "Use a skill for this file type if one is available, or a shell command or script that can read the format."
    } else {
        "Please use appropriate tools for binary file analysis."
    }
}

/// From 2.1.317 a Read of a file unchanged since the same Read returns the content again: the reference
/// dropped its "Wasted call — file unchanged" answer ([`crate::fs::FILE_UNCHANGED`]; its
/// `tengu_file_read_dedup` is in the 2.1.316 binary, not in 2.1.317's; measured by
/// `harness/tests/fidelity.rs` and `probes/read/unchanged-batch.toml`).
pub const NO_UNCHANGED_NOTE: Switch = Switch {
    name: "Read no longer answers an unchanged file with 'Wasted call'",
    since: "2.1.317",
    probe: "read.unchanged-batch",
};

/// The refusal of a file that is not a regular one, before anything opens it (an `open` of a FIFO
/// blocks until a writer comes: the run would hang). The texts measured on Claude Code 2.1.235
/// (`probes/claude-code/read-special.toml`): a device, `<tool_use_error>Cannot read '/dev/zero': this
/// device file would block or produce infinite output.</tool_use_error>`; a socket, the error of its
/// `open`, `ENXIO: no such device or address, open '…'`. The reference opens a FIFO and blocks (with a
/// writer it reads what was written); here it is refused, saying what it is and what to do instead.
fn not_regular(ctx: &ToolContext, path: &Path, kind: std::fs::FileType) -> ToolError {
    use std::os::unix::fs::FileTypeExt;
    let p = path.display();
    if kind.is_fifo() {
        ToolError::Validation(format!(
            "Cannot read '{p}': it is a FIFO (named pipe), not a regular file, and opening it would block until another process writes to it. Read a regular file instead, or read the pipe with Bash and a timeout (`timeout 5 cat {p}`) if a writer is expected."
        ))
    } else if kind.is_socket() {
        ToolError::Runtime(format!("ENXIO: no such device or address, open '{p}'"))
    } else {
        ToolError::Validation(device_refusal(ctx, &p.to_string()))
    }
}

/// From 2.1.309 the refusal of a device says it names "a device or process file" (measured by
/// `probes/claude-code/read-special.toml`: timeline READ-1, 2.1.308 → 2.1.309).
pub const DEVICE_OR_PROCESS_FILE: Switch = Switch {
    name: "Read refuses a device as 'a device or process file'",
    since: "2.1.309",
    probe: "claude-code.read-special",
};

/// The refusal of a device (or `/proc` file) at the session's release ([`DEVICE_OR_PROCESS_FILE`]).
fn device_refusal(ctx: &ToolContext, shown: &str) -> String {
    if ctx.profile().has(&DEVICE_OR_PROCESS_FILE) {
        format!("Cannot read '{shown}': this path names a device or process file that this tool does not read.")
    } else {
        format!("Cannot read '{shown}': this device file would block or produce infinite output.")
    }
}

/// The devices Claude Code 2.1.235 refuses to Read by their path (its list, read from the binary):
/// reading them would block or never end.
const BLOCKING_DEVICES: &[&str] = &[
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/full",
    "/dev/stdin",
    "/dev/tty",
    "/dev/console",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/fd/0",
    "/dev/fd/1",
    "/dev/fd/2",
];

/// A path the reference refuses as a device by name: its list, a process's standard streams under
/// `/proc/…/fd/`, and the `/proc/<pid>/` files that never end or are not files (`environ`, `cmdline`,
/// `auxv`, `maps`, `mem`, `stat`).
fn blocking_device(path: &Path) -> bool {
    let s = path.to_string_lossy();
    if BLOCKING_DEVICES.contains(&s.as_ref()) {
        return true;
    }
    if s.starts_with("/proc/") && (s.ends_with("/fd/0") || s.ends_with("/fd/1") || s.ends_with("/fd/2")) {
        return true;
    }
    let parts: Vec<&str> = s.split('/').collect();
    parts.len() == 4
        && parts[1] == "proc"
        && !parts[2].is_empty()
        && ["environ", "cmdline", "auxv", "maps", "mem", "stat"].contains(&parts[3])
}

/// The extension the reference refuses to Read as binary (its list; images and PDFs are read): taken
/// like the reference takes it, from the last `.` of the whole path, lower-cased.
pub fn binary_extension(path: &Path) -> Option<String> {
    let s = path.to_string_lossy();
    let ext = s[s.rfind('.')?..].to_ascii_lowercase();
    BINARY_EXTENSIONS.contains(&&ext[1..]).then_some(ext)
}

/// A window as the reference renders it: numbered lines; a window of one empty line in a longer file is
/// its number and a tab; an empty file (or window) is a warning, and so is an offset past the end.
fn render_window(path: &Path, w: &Window, first_number: usize) -> Result<String, ToolError> {
    let content = w.lines.join("\n");
    if !content.is_empty() {
        return Ok(number_lines(w.lines.iter().map(String::as_str), first_number));
    }
    let total_over_one = w.total_lines > 1 || has_newline(path).map_err(|e| ToolError::Runtime(e.to_string()))?;
    if !w.lines.is_empty() && total_over_one {
        return Ok(format!("{first_number}\t"));
    }
    if !w.lines.is_empty() || w.total_lines == 0 {
        return Ok("<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>".into());
    }
    Ok(format!(
        "<system-reminder>Warning: the file exists but is shorter than the provided offset ({first_number}). The file has {} lines.</system-reminder>",
        w.total_lines
    ))
}

fn has_newline(path: &Path) -> std::io::Result<bool> {
    let mut r = std::io::BufReader::new(std::fs::File::open(path)?);
    let mut sink = Vec::new();
    let n = r.read_until(b'\n', &mut sink)?;
    Ok(n > 0 && sink.last() == Some(&b'\n'))
}

/// The token ceiling in force: the env override when it parses as a positive number.
pub fn max_tokens(ctx: &ToolContext) -> u64 {
    ctx.env(MAX_OUTPUT_TOKENS_ENV)
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(MAX_OUTPUT_TOKENS)
}

/// READ-2's token check, like the reference: a rough estimate (bytes / 4) first; only when it exceeds a
/// quarter of the ceiling is the exact count asked of the API (`count_tokens`), and over the ceiling the
/// read is an error.
async fn check_tokens(ctx: &ToolContext, text: &str) -> Result<(), ToolError> {
    if let Some((exact, max)) = tokens_over(ctx, text).await? {
        return Err(ToolError::Runtime(format!(
            "File content ({exact} tokens) exceeds maximum allowed tokens ({max}). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file.{}",
            too_large_hint(ctx)
        )));
    }
    Ok(())
}

/// The count and the ceiling when `text` is over it (the rough estimate first, then the API's count).
async fn tokens_over(ctx: &ToolContext, text: &str) -> Result<Option<(u64, u64)>, ToolError> {
    let max = max_tokens(ctx);
    let rough = (text.len() as u64).div_ceil(4);
    if rough <= max / 4 {
        return Ok(None);
    }
    let exact = ctx.tokens.count(text).await.map_err(|e| ToolError::Runtime(format!("counting tokens failed: {e}")))?;
    Ok((exact > max).then_some((exact, max)))
}

/// The page of a whole-file Read over the token ceiling, and the note that follows the results, as
/// Claude Code 2.1.235 makes them (read from the binary; measured by `probes/read/token-limit.toml`: 4,445
/// lines counted 25,001 tokens give lines 1-3,778). Chars per token = the text's length / the count
/// (at least 0.5); the first `lines * max / tokens * 0.85` lines, cut by 0.7 at most six times until
/// their estimate fits; when even that does not fit (or is blank) the first `max * chars-per-token *
/// 0.85` chars instead (cut by 0.7 the same way), for files of very long lines.
fn token_page(path: &Path, lines: &[String], tokens: u64, max: u64) -> (Vec<String>, String) {
    let content = lines.join("\n");
    let units = |s: &str| s.encode_utf16().count() as f64;
    let per_token = (units(&content) / tokens.max(1) as f64).max(0.5);
    let estimate = |s: &str| units(s) / per_token;
    let cap = max as f64;
    let mut n =
        ((lines.len() as f64 * cap / tokens.max(1) as f64 * 0.85).floor() as usize).clamp(1, lines.len().max(1));
    let mut page = lines[..n.min(lines.len())].join("\n");
    for _ in 0..6 {
        if estimate(&page) <= cap || n <= 1 {
            break;
        }
        n = ((n as f64 * 0.7).floor() as usize).max(1);
        page = lines[..n].join("\n");
    }
    let p = path.display();
    let by_lines = estimate(&page) <= cap && !page.trim().is_empty();
    if by_lines && n < lines.len() {
        let note = format!(
            "[Truncated: PARTIAL view \u{2014} {p}: showing lines 1-{n} of {} total ({tokens} tokens, cap {max}). Call Read with offset={} limit={n} for the next page, or Grep to find a specific section. Do NOT answer from this page alone if the answer may be further in the file.]",
            lines.len(),
            n + 1
        );
        return (lines[..n].to_vec(), note);
    }
    let utf16: Vec<u16> = content.encode_utf16().collect();
    if by_lines {
        // every line fits (the reference's note then counts chars)
        let note = format!(
            "[Truncated: PARTIAL view \u{2014} {p}: showing the first {} of {} characters ({tokens} tokens, cap {max}); this file has very long lines and cannot be paginated by line. Use Grep to find a specific section, or Read with offset/limit to page through it. Do NOT answer from this excerpt alone if the answer may be elsewhere in the file.]",
            page.encode_utf16().count(),
            utf16.len()
        );
        return (lines[..n].to_vec(), note);
    }
    // by chars (UTF-16 units, a lone high surrogate at the end dropped)
    let mut f = ((cap * per_token * 0.85).floor() as usize).max(1);
    let mut cut: Vec<u16> = utf16[..f.min(utf16.len())].to_vec();
    for _ in 0..6 {
        cut = utf16[..f.min(utf16.len())].to_vec();
        if cut.len() as f64 / per_token <= cap {
            break;
        }
        f = ((f as f64 * 0.7).floor() as usize).max(1);
    }
    if cut.last().is_some_and(|u| (0xD800..=0xDBFF).contains(u)) {
        cut.pop();
    }
    let text = String::from_utf16_lossy(&cut);
    let note = format!(
        "[Truncated: PARTIAL view \u{2014} {p}: showing the first {} of {} characters ({tokens} tokens, cap {max}); this file has very long lines and cannot be paginated by line. Use Grep to find a specific section, or Read with offset/limit to page through it. Do NOT answer from this excerpt alone if the answer may be elsewhere in the file.]",
        cut.len(),
        utf16.len()
    );
    (text.split('\n').map(str::to_string).collect(), note)
}

/// A window of lines.
#[derive(Debug, Default, PartialEq)]
pub struct Window {
    /// The lines returned (line ends removed, long lines cut).
    pub lines: Vec<String>,
    /// Lines in the whole file.
    pub total_lines: usize,
    /// Bytes in the whole file.
    pub total_bytes: u64,
}

/// The whole file, its error told as [`read_window`]'s is.
fn read_whole(path: &Path) -> Result<Vec<u8>, ToolError> {
    std::fs::read(path).map_err(|e| ToolError::Runtime(format!("{e}: {}", path.display())))
}

/// Streams the file: skips `start` lines without keeping them, keeps up to `limit`, and stops there.
/// Lines are what splitting the text on `\n` gives, like the reference: a file ending in a newline has an
/// empty last line ("one\ntwo\n" is 3 lines, the third empty). `total_lines` / `total_bytes` count what
/// was scanned: the whole file when the window came out short (which is when they are reported), a prefix
/// otherwise. A window at the start of a 100 MB file costs the window only; memory stays bounded by it.
pub fn read_window(path: &Path, start: usize, limit: usize) -> std::io::Result<Window> {
    use std::io::{Read, Seek, SeekFrom};
    // O_NONBLOCK: should a FIFO have replaced the file since it was looked at, the open does not
    // block (a regular file ignores the flag)
    let mut f = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK).open(path)?
    };
    let size = f.metadata()?.len();
    // a final '\n' opens one more, empty, line at the end
    let mut pending_empty = size == 0;
    if size > 0 {
        let mut last = [0u8; 1];
        f.seek(SeekFrom::Start(size - 1))?;
        f.read_exact(&mut last)?;
        pending_empty = last[0] == b'\n';
        f.seek(SeekFrom::Start(0))?;
    }
    let mut r = std::io::BufReader::with_capacity(256 * 1024, f);
    let mut w = Window::default();
    let mut index = 0usize;
    while index < start {
        let n = r.skip_until(b'\n')?;
        if n == 0 {
            if pending_empty {
                pending_empty = false;
                index += 1;
                continue;
            }
            w.total_lines = index;
            return Ok(w);
        }
        w.total_bytes += n as u64;
        index += 1;
    }
    let mut buf = Vec::new();
    while w.lines.len() < limit {
        buf.clear();
        let n = r.read_until(b'\n', &mut buf)?;
        if n == 0 {
            if pending_empty {
                pending_empty = false;
                index += 1;
                w.lines.push(String::new());
                continue;
            }
            break;
        }
        w.total_bytes += n as u64;
        index += 1;
        let mut line = String::from_utf8_lossy(&buf).into_owned();
        if index == 1 && line.starts_with('\u{feff}') {
            line.remove(0); // the reference drops a byte-order mark
        }
        if line.ends_with('\n') {
            line.pop();
        }
        // the reference takes a '\r' off twice: when it splits the lines and when it numbers them
        for _ in 0..2 {
            if line.ends_with('\r') {
                line.pop();
            }
        }
        w.lines.push(line);
    }
    w.total_lines = index;
    Ok(w)
}

fn image(ctx: &ToolContext, path: &Path, media: &str) -> Result<ToolOutput, ToolError> {
    let bytes = std::fs::read(path).map_err(|e| ToolError::Runtime(e.to_string()))?;
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    remember_read(ctx, path, bytes, false);
    Ok(ToolOutput::Blocks(vec![
        json!({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}),
    ]))
}

/// A page range `N` or `N-M` (1-based, inclusive).
pub fn parse_pages(s: &str) -> Result<(u32, u32), ToolError> {
    let bad = || {
        ToolError::Validation(format!(
            "Invalid pages parameter: \"{s}\". Use formats like \"1-5\", \"3\", or \"10-20\". Pages are 1-indexed."
        ))
    };
    let (a, b) = match s.trim().split_once('-') {
        Some((a, b)) => (a.trim().parse::<u32>().map_err(|_| bad())?, b.trim().parse::<u32>().map_err(|_| bad())?),
        None => {
            let n = s.trim().parse::<u32>().map_err(|_| bad())?;
            (n, n)
        }
    };
    if a == 0 || b < a {
        return Err(bad());
    }
    Ok((a, b))
}

/// From 2.1.242 a whole PDF's `document` block is in the Read's result, after its text, instead of
/// following the turn's results (measured by `probes/read/media.toml`: timeline READ-3, 2.1.241 → 2.1.242).
pub const PDF_DOCUMENT_IN_RESULT: Switch =
    Switch { name: "a whole PDF's document block is in Read's result", since: "2.1.242", probe: "read.media" };

fn pdf(ctx: &ToolContext, path: &Path, pages: Option<&str>) -> Result<ToolOutput, ToolError> {
    let bytes = std::fs::read(path).map_err(|e| ToolError::Runtime(e.to_string()))?;
    if !bytes.starts_with(b"%PDF-") {
        return Err(ToolError::Runtime("The file has a .pdf extension but is not a PDF (no %PDF- header).".into()));
    }
    let mut blocks = Vec::new();
    if let Some(p) = pages {
        let (first, last) = parse_pages(p)?;
        blocks.push(json!({"type": "text", "text": format!("PDF pages {first}-{last} of {}", path.display())}));
        for (n, png) in render_pdf_pages(path, first, last)? {
            let data = base64::engine::general_purpose::STANDARD.encode(&png);
            blocks.push(json!({"type": "text", "text": format!("Page {n}:")}));
            blocks
                .push(json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}));
        }
    } else {
        // as Claude Code 2.1.235 answers a whole PDF (`probes/read/media.toml`): the result says it was
        // read, and the document follows the turn's results as its own block
        let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let document =
            json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}});
        let text = format!("PDF file read: {} ({})", path.display(), format_size(bytes.len() as u64));
        remember_read(ctx, path, bytes, false);
        match &ctx.call_id {
            Some(id) if !ctx.profile().has(&PDF_DOCUMENT_IN_RESULT) => ctx.session.followups.push_block(id, document),
            _ => return Ok(ToolOutput::Blocks(vec![json!({"type": "text", "text": text}), document])),
        }
        return Ok(ToolOutput::Text(text));
    }
    remember_read(ctx, path, bytes, pages.is_some());
    Ok(ToolOutput::Blocks(blocks))
}

/// Renders pages with poppler's `pdftoppm` (installed by `scripts/setup`), like the reference does for
/// page ranges: one PNG per page.
fn render_pdf_pages(path: &Path, first: u32, last: u32) -> Result<Vec<(u32, Vec<u8>)>, ToolError> {
    let dir = tempfile::tempdir().map_err(|e| ToolError::Runtime(e.to_string()))?;
    let prefix = dir.path().join("page");
    let out = std::process::Command::new("pdftoppm")
        .args(["-png", "-r", "50", "-f", &first.to_string(), "-l", &last.to_string()])
        .arg(path)
        .arg(&prefix)
        .output()
        .map_err(|e| ToolError::Runtime(format!("cannot run pdftoppm (poppler-utils) to render PDF pages: {e}")))?;
    if !out.status.success() {
        return Err(ToolError::Runtime(format!("pdftoppm failed: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    let mut files: Vec<_> = std::fs::read_dir(dir.path())
        .map_err(|e| ToolError::Runtime(e.to_string()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut pages = Vec::new();
    for (i, f) in files.iter().enumerate() {
        pages.push((first + i as u32, std::fs::read(f).map_err(|e| ToolError::Runtime(e.to_string()))?));
    }
    if pages.is_empty() {
        return Err(ToolError::Runtime(format!("The PDF has no pages in the range {first}-{last}.")));
    }
    Ok(pages)
}

async fn notebook(ctx: &ToolContext, path: &Path, window: (u64, Option<u64>)) -> Result<ToolOutput, ToolError> {
    let bytes = std::fs::read(path).map_err(|e| ToolError::Runtime(e.to_string()))?;
    let nb: Value = serde_json::from_slice(&bytes).map_err(|e| {
        ToolError::Runtime(format!(
            "Notebook file is not valid JSON (it may be truncated, corrupted, or still being written): {e}"
        ))
    })?;
    let blocks = render_notebook(&nb)?;
    let text: String =
        blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n");
    check_tokens(ctx, &text).await?;
    crate::fs::remember_window(ctx, path, bytes, false, Some(window));
    Ok(ToolOutput::Blocks(blocks))
}

/// Joins a notebook field that is a string or a list of strings.
pub fn joined(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// An output's image as the reference keeps it: the first of `image/png`, `image/jpeg` when its bytes
/// are an image (none when the first one found is not).
fn output_image(data: &Value) -> Option<Value> {
    for media in ["image/png", "image/jpeg"] {
        let Some(b64) = data.get(media).and_then(Value::as_str) else { continue };
        let clean: String = b64.chars().filter(|c| !c.is_whitespace()).collect();
        // data that is not base64 has no image's magic bytes either: no image, like the reference
        let bytes = base64::engine::general_purpose::STANDARD.decode(&clean).unwrap_or_default();
        let magic: &[&[u8]] = &[b"\x89PNG", b"\xFF\xD8\xFF", b"GIF8", b"RIFF"];
        if !magic.iter().any(|m| bytes.starts_with(m)) {
            return None;
        }
        return Some(json!({"type": "image", "source": {"data": clean, "media_type": media, "type": "base64"}}));
    }
    None
}

/// A notebook as the reference renders it (2.1.235, measured by `harness/tests/fidelity.rs`): per cell a
/// text `<cell id="…">` (with `<cell_type>` for non-code cells, `<language>` for code in another
/// language than python), the source, `</cell id="…">`; after it each output of a code cell — its text
/// on a line after an empty one (an error as `ename: evalue` and its traceback), its image as an image
/// block; neighbouring texts joined by newlines.
pub fn render_notebook(nb: &Value) -> Result<Vec<Value>, ToolError> {
    let cells = nb.get("cells").and_then(Value::as_array).ok_or_else(|| {
        ToolError::Runtime(
            "Notebook file is not a valid Jupyter notebook (top-level \"cells\" must be an array of cell objects, each with a string or string-array \"source\").".into(),
        )
    })?;
    let language = nb.pointer("/metadata/language_info/name").and_then(Value::as_str).unwrap_or("python");
    let mut blocks: Vec<Value> = Vec::new();
    let push_text = |blocks: &mut Vec<Value>, text: String| match blocks.last_mut() {
        Some(last) if last.get("type").and_then(Value::as_str) == Some("text") => {
            let joined = format!("{}\n{text}", last["text"].as_str().unwrap_or_default());
            last["text"] = json!(joined);
        }
        _ => blocks.push(json!({"type": "text", "text": text})),
    };
    for (i, c) in cells.iter().enumerate() {
        let id = c.get("id").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| format!("cell-{i}"));
        let kind = c.get("cell_type").and_then(Value::as_str).unwrap_or("code");
        let mut meta = String::new();
        if kind != "code" {
            meta.push_str(&format!("<cell_type>{kind}</cell_type>"));
        } else if language != "python" {
            meta.push_str(&format!("<language>{language}</language>"));
        }
        push_text(&mut blocks, format!("<cell id=\"{id}\">{meta}{}</cell id=\"{id}\">", joined(c.get("source"))));
        if kind != "code" {
            continue;
        }
        for o in c.get("outputs").and_then(Value::as_array).into_iter().flatten() {
            let (text, image) = match o.get("output_type").and_then(Value::as_str) {
                Some("stream") => (joined(o.get("text")), None),
                Some("execute_result" | "display_data") => {
                    let data = o.get("data").cloned().unwrap_or(Value::Null);
                    (joined(data.get("text/plain")), output_image(&data))
                }
                Some("error") => {
                    let tb: Vec<&str> = o
                        .get("traceback")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    (format!("{}: {}\n{}", joined(o.get("ename")), joined(o.get("evalue")), tb.join("\n")), None)
                }
                _ => (String::new(), None),
            };
            if !text.is_empty() {
                push_text(&mut blocks, format!("\n{text}"));
            }
            if let Some(img) = image {
                blocks.push(img);
            }
        }
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_formatted_like_the_reference() {
        assert_eq!(format_size(304_000), "296.9KB");
        assert_eq!(format_size(MAX_FILE_BYTES), "256KB");
        assert_eq!(format_size(10), "10 bytes");
    }

    #[test]
    fn binary_extensions_are_taken_from_the_last_dot_of_the_path() {
        assert_eq!(binary_extension(Path::new("/w/f.DAT")).as_deref(), Some(".dat"));
        assert_eq!(binary_extension(Path::new("/w/f.png")), None, "images are read");
        assert_eq!(binary_extension(Path::new("/w/f.txt")), None);
        assert_eq!(binary_extension(Path::new("/w/noext")), None);
    }

    #[test]
    fn empty_windows_are_told_like_the_reference() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let p = d.path().join("f");
        std::fs::write(&p, "").unwrap_or_else(|e| panic!("{e}"));
        let text = |start, limit, first| {
            render_window(&p, &read_window(&p, start, limit).unwrap_or_default(), first).unwrap_or_default()
        };
        assert!(text(0, usize::MAX, 1).contains("the contents are empty"));
        assert!(text(1, 3, 2).contains("shorter than the provided offset (2). The file has 1 lines."));
        std::fs::write(&p, "\nx").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text(0, 1, 1), "1\t", "one empty line of a longer file");
        std::fs::write(&p, "a\nb").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text(0, 2, 0), "0\ta\n1\tb", "offset 0 numbers from 0");
    }

    #[test]
    fn pages_parse() {
        assert_eq!(parse_pages("3").ok(), Some((3, 3)));
        assert_eq!(parse_pages("1-5").ok(), Some((1, 5)));
        assert!(parse_pages("0").is_err() && parse_pages("5-1").is_err() && parse_pages("x").is_err());
    }

    #[test]
    fn window_skips_keeps_and_counts_a_short_window_to_the_end() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let p = d.path().join("f");
        std::fs::write(&p, "a\r\nb\nc").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_window(&p, 1, 1).unwrap_or_default().lines, ["b"]);
        let w = read_window(&p, 1, 5).unwrap_or_default();
        assert_eq!(w, Window { lines: vec!["b".into(), "c".into()], total_lines: 3, total_bytes: 6 });
        let w = read_window(&p, 7, 1).unwrap_or_default();
        assert_eq!((w.lines.len(), w.total_lines), (0, 3));
        // a final newline opens one more, empty, line
        std::fs::write(&p, "one\ntwo\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_window(&p, 0, 10).unwrap_or_default().lines, ["one", "two", ""]);
        assert_eq!(read_window(&p, 2, 10).unwrap_or_default().lines, [""]);
        let w = read_window(&p, 3, 10).unwrap_or_default();
        assert_eq!((w.lines.len(), w.total_lines), (0, 3));
        // an empty file is one empty line, as the reference splits it
        std::fs::write(&p, "").unwrap_or_else(|e| panic!("{e}"));
        let w = read_window(&p, 0, 10).unwrap_or_default();
        assert_eq!((w.lines, w.total_lines), (vec![String::new()], 1));
        // a byte-order mark goes; CRs before a line end go twice (split, then numbering)
        std::fs::write(&p, "\u{feff}a\r\r\nb\r").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_window(&p, 0, 10).unwrap_or_default().lines, ["a", "b"]);
    }

    #[test]
    fn notebook_cells_render_with_ids_and_outputs() {
        let nb = json!({"cells": [
            {"cell_type": "markdown", "id": "m1", "source": ["# T"]},
            {"cell_type": "code", "source": "print(1)", "outputs": [{"output_type": "stream", "text": ["1\n"]}]}
        ]});
        assert_eq!(
            render_notebook(&nb).unwrap_or_default(),
            [
                json!({"type": "text", "text": "<cell id=\"m1\"><cell_type>markdown</cell_type># T</cell id=\"m1\">\n<cell id=\"cell-1\">print(1)</cell id=\"cell-1\">\n\n1\n"})
            ]
        );
    }

    #[test]
    fn files_that_are_not_regular_are_refused_with_what_they_are() {
        let dev = std::fs::metadata("/dev/null").map(|m| m.file_type()).unwrap_or_else(|e| panic!("{e}"));
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ctx = ToolContext::for_sandbox(d.path(), std::sync::Arc::new(crate::model::EstimateTokens))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            not_regular(&ctx, Path::new("/dev/null"), dev),
            ToolError::Validation(
                "Cannot read '/dev/null': this device file would block or produce infinite output.".into()
            )
        );
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let fifo = d.path().join("p");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap_or_else(|e| panic!("{e}"));
        assert!(made.success());
        let kind = std::fs::metadata(&fifo).map(|m| m.file_type()).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(not_regular(&ctx, &fifo, kind), ToolError::Validation(m) if m.contains("is a FIFO (named pipe)"))
        );
        // and the window reader opens without blocking even if it is handed one
        assert!(read_window(&fifo, 0, 10).is_ok());
    }

    /// A context of a fresh sandbox behaving as Claude Code `version`, its cwd and the dir to drop.
    fn at(version: &str) -> (tempfile::TempDir, ToolContext) {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ctx = ToolContext::for_sandbox(d.path(), std::sync::Arc::new(crate::model::EstimateTokens))
            .unwrap_or_else(|e| panic!("{e}"))
            .with_profile(crate::profile::Profile::at(version).unwrap_or_else(|e| panic!("{e}")));
        (d, ctx)
    }

    fn call(ctx: &ToolContext, input: Value) -> Result<ToolOutput, ToolError> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
        rt.block_on(crate::tool::Tool::call(&Read, input, ctx))
    }

    /// Counts one token, replacing the file by a directory first: a file changed into something
    /// unreadable between the window's read and the whole file's.
    struct ReplacedWhileCounted(std::path::PathBuf);

    impl crate::model::TokenCounter for ReplacedWhileCounted {
        fn count<'a>(
            &'a self,
            _: &'a str,
        ) -> futures_util::future::BoxFuture<'a, Result<u64, crate::model::ModelError>> {
            std::fs::remove_file(&self.0).unwrap_or_else(|e| panic!("{e}"));
            std::fs::create_dir(&self.0).unwrap_or_else(|e| panic!("{e}"));
            Box::pin(async { Ok(1) })
        }
    }

    #[test]
    fn a_file_replaced_while_its_tokens_are_counted_is_an_error_not_an_empty_read_state() {
        for version in ["2.1.235", "2.1.333"] {
            let (_d, ctx) = at(version);
            let f = ctx.cwd.join("big.txt");
            // over a quarter of the token ceiling by estimate: the exact count is asked for
            std::fs::write(&f, "a line of some twenty chars\n".repeat(2_000)).unwrap_or_else(|e| panic!("{e}"));
            let ctx = ToolContext { tokens: std::sync::Arc::new(ReplacedWhileCounted(f.clone())), ..ctx };
            let Err(ToolError::Runtime(m)) = call(&ctx, json!({"file_path": f})) else {
                panic!("{version}: the whole file could not be read again")
            };
            assert_eq!(m, format!("Is a directory (os error 21): {}", f.display()), "{version}");
            assert!(ctx.read_state.lock().map(|s| s.is_empty()).unwrap_or(false), "{version}: nothing remembered");
        }
    }

    #[test]
    fn the_allow_large_hint_comes_with_2_1_296() {
        for (version, hinted) in [("2.1.235", false), ("2.1.295", false), ("2.1.296", true), ("2.1.333", true)] {
            let (_d, ctx) = at(version);
            let big = ctx.cwd.join("big.txt");
            std::fs::write(&big, "x".repeat(MAX_FILE_BYTES as usize + 1)).unwrap_or_else(|e| panic!("{e}"));
            let Err(ToolError::Runtime(m)) = call(&ctx, json!({"file_path": big})) else {
                panic!("{version}: over the size limit is an error")
            };
            assert!(m.starts_with("File content (256KB) exceeds maximum allowed size (256KB)."), "{version}: {m}");
            assert_eq!(m.ends_with(ALLOW_LARGE_HINT_TEXT), hinted, "{version}: {m}");
        }
    }

    #[test]
    fn the_binary_refusal_suggests_a_skill_from_2_1_290() {
        for (version, end) in [
            ("2.1.235", "Please use appropriate tools for binary file analysis."),
            ("2.1.289", "Please use appropriate tools for binary file analysis."),
            ("2.1.290", "Use a skill for this file type if one is available, or a shell command or script that can read the format."),
        ] {
            let (_d, ctx) = at(version);
            let f = ctx.cwd.join("x.bin");
            std::fs::write(&f, "text\n").unwrap_or_else(|e| panic!("{e}"));
            let Err(ToolError::Validation(m)) = call(&ctx, json!({"file_path": f})) else { panic!("{version}") };
            assert_eq!(
                m,
                format!("This tool cannot read binary files. The file appears to be a binary .bin file. {end}"),
                "{version}"
            );
        }
    }

    #[test]
    fn an_unchanged_file_is_read_again_from_2_1_317() {
        for (version, stub) in [("2.1.235", true), ("2.1.316", true), ("2.1.317", false)] {
            let (_d, ctx) = at(version);
            let f = ctx.cwd.join("f.txt");
            std::fs::write(&f, "one\n").unwrap_or_else(|e| panic!("{e}"));
            let first = call(&ctx, json!({"file_path": f}));
            crate::fs::ReadBatch::next(&ctx);
            let again = call(&ctx, json!({"file_path": f}));
            let want = if stub { Ok(ToolOutput::Text(crate::fs::FILE_UNCHANGED.into())) } else { first };
            assert_eq!(again, want, "{version}");
        }
    }

    #[test]
    fn a_file_that_is_not_text_is_noted_from_2_1_299() {
        for (version, noted) in [("2.1.235", false), ("2.1.296", false), ("2.1.299", true), ("2.1.333", true)] {
            let (_d, ctx) = at(version);
            let f = ctx.cwd.join("nul.txt");
            std::fs::write(&f, b"a\x00b\nline two\n").unwrap_or_else(|e| panic!("{e}"));
            let Ok(ToolOutput::Text(t)) = call(&ctx, json!({"file_path": f})) else { panic!("{version}") };
            let content = "1\ta\u{0}b\n2\tline two\n3\t";
            let want = if noted {
                format!("{content}\n\n{}", crate::encoding::read_note(crate::encoding::NotText::Nul))
            } else {
                content.to_string()
            };
            assert_eq!(t, want, "{version}");
        }
    }

    #[test]
    fn devices_are_device_or_process_files_from_2_1_309() {
        for (version, text) in [
            ("2.1.308", "Cannot read '/dev/zero': this device file would block or produce infinite output."),
            (
                "2.1.309",
                "Cannot read '/dev/zero': this path names a device or process file that this tool does not read.",
            ),
        ] {
            let (_d, ctx) = at(version);
            assert_eq!(Read.check_before_permissions(&json!({"file_path": "/dev/zero"}), &ctx).as_deref(), Some(text));
            let dev = std::fs::metadata("/dev/null").map(|m| m.file_type()).unwrap_or_else(|e| panic!("{e}"));
            let ToolError::Validation(m) = not_regular(&ctx, Path::new("/dev/zero"), dev) else { panic!("{version}") };
            assert_eq!(m, text);
        }
    }

    #[test]
    fn a_pdf_document_is_in_the_result_from_2_1_242() {
        for (version, inline) in [("2.1.241", false), ("2.1.242", true)] {
            let (_d, mut ctx) = at(version);
            ctx.call_id = Some("toolu_pdf".into());
            let pdf = ctx.cwd.join("doc.pdf");
            std::fs::write(&pdf, "%PDF-1.4\n%%EOF\n").unwrap_or_else(|e| panic!("{e}"));
            let out = call(&ctx, json!({"file_path": pdf})).unwrap_or_else(|e| panic!("{version}: {e}"));
            let followed = ctx.session.followups.take_blocks_for(&["toolu_pdf"]);
            match out {
                ToolOutput::Blocks(b) => {
                    assert!(inline, "{version}: the document is in the result");
                    assert_eq!(b.len(), 2);
                    assert_eq!(b[1]["type"], "document");
                    assert!(followed.is_empty());
                }
                ToolOutput::Text(t) => {
                    assert!(!inline, "{version}: the document follows the results");
                    assert!(t.starts_with("PDF file read: "));
                    assert_eq!(followed.len(), 1);
                }
                other => panic!("{version}: {other:?}"),
            }
        }
    }
}
