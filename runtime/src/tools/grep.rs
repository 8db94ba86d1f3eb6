//! Grep (GREP-1..3, 7, 8): the reference's schema (no `-m` field) over the search engine, run the way the
//! reference runs its embedded ripgrep — `--hidden`, VCS directories excluded, `--max-columns 500`, the
//! flags of the call, the pattern, the absolute path — with a 20 s deadline that cancels the search, a
//! 20,000,000-byte output buffer, `head_limit` (default 250) + `offset` pagination, and a usage error
//! (ripgrep's exit 2 with nothing found) mapped to a diagnosable error result.

use crate::context::ToolContext;
use crate::permissions::Decision;
use crate::profile::Switch;
use crate::tool::{PermissionSubject, ToolError, ToolOutput, TypedTool};
use probelab_search::args::{Case, Mode, RgArgs, TypeChange};
use probelab_search::{run, Io, EXIT_ERROR};
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Result budget of Grep (PIPE-5, GREP-2: 20,000 chars).
pub const MAX_RESULT_CHARS: usize = 20_000;
/// Default deadline of a search (GREP-3: 20 s).
pub const DEADLINE: Duration = Duration::from_secs(20);
/// Env variable of the probe that shortens the deadline (probelab's own knob, for probes of the timeout).
pub const DEADLINE_ENV: &str = "PROBELAB_GREP_DEADLINE_MS";
/// Size of the stdout / stderr buffers (GREP-3: 20,000,000 bytes).
pub const MAX_BUFFER_BYTES: usize = 20_000_000;
/// Default `head_limit` (GREP-1, from 002).
pub const DEFAULT_HEAD_LIMIT: usize = 250;
/// `--max-columns` the reference always passes (GREP-8).
pub const MAX_COLUMNS: u64 = 500;
/// Version-control directories the reference excludes with `--glob !DIR`.
pub const VCS_DIRS: &[&str] = &[".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

/// The Grep tool.
#[derive(Debug, Default)]
pub struct Grep;

#[derive(Debug, Deserialize)]
pub struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default, rename = "type")]
    file_type: Option<String>,
    #[serde(default)]
    output_mode: Option<String>,
    #[serde(default, rename = "-A")]
    after: Option<usize>,
    #[serde(default, rename = "-B")]
    before: Option<usize>,
    #[serde(default, rename = "-C")]
    context_c: Option<usize>,
    #[serde(default)]
    context: Option<usize>,
    #[serde(default, rename = "-n")]
    line_numbers: Option<bool>,
    #[serde(default, rename = "-i")]
    ignore_case: Option<bool>,
    #[serde(default)]
    head_limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    multiline: Option<bool>,
}

/// A `Write` that keeps the first [`MAX_BUFFER_BYTES`] bytes and then stops the search. Claude Code
/// 2.1.235 keeps the first 20,000,000 chars of its embedded rg's output and drops the rest without an
/// error (the search goes on to its end, unheard; `probes/grep/output-buffer.toml`): what was kept is
/// the result, its cut last line included.
struct Capped {
    buf: Vec<u8>,
    overflow: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + b.len() > MAX_BUFFER_BYTES {
            let room = MAX_BUFFER_BYTES - self.buf.len();
            self.buf.extend_from_slice(&b[..room]);
            self.overflow = true;
            return Err(std::io::Error::other("maxBuffer length exceeded"));
        }
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The engine's arguments for a call (what the reference hands to `rg`).
fn rg_args(a: &Args, mode: Mode, path: &Path) -> RgArgs {
    let mut r = RgArgs { hidden: true, max_columns: Some(MAX_COLUMNS), mode, ..RgArgs::default() };
    r.globs = VCS_DIRS.iter().map(|d| format!("!{d}")).collect();
    if a.multiline == Some(true) {
        r.multiline = true;
        r.multiline_dotall = true;
    }
    if a.ignore_case == Some(true) {
        r.case = Case::Insensitive;
    }
    if mode == Mode::Standard {
        r.line_number = Some(a.line_numbers.unwrap_or(true));
        r.context = a.context.or(a.context_c);
        // the reference passes -B / -A only when no context is given
        if r.context.is_none() {
            r.before = a.before;
            r.after = a.after;
        }
    }
    if mode == Mode::Count {
        r.with_filename = Some(true); // `-c -H`, as the reference runs it: a single file is named too
    }
    if let Some(g) = &a.glob {
        // like the reference: split on whitespace, keep brace groups whole
        for part in split_globs(g) {
            r.globs.push(part);
        }
    }
    if let Some(t) = &a.file_type {
        r.types.push(TypeChange::Select(t.clone()));
    }
    r.patterns = vec![a.pattern.clone()];
    r.paths = vec![path.to_path_buf()];
    r
}

/// Splits a `glob` parameter into globs: on whitespace and commas, except inside `{…}`.
pub fn split_globs(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '{' => {
                depth += 1;
                cur.push(c);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            ',' | ' ' | '\t' if depth == 0 => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// What one search produced.
struct Searched {
    code: u8,
    stdout: String,
    stderr: String,
    /// The output passed the buffer and was cut there.
    overflow: bool,
}

async fn search(ctx: &ToolContext, args: RgArgs) -> Result<Searched, ToolError> {
    // JSON output (from 2.1.251) is cut at the buffer as the engine writes it, as the reference's
    // runner kills its rg there; the text output keeps its measured way (the whole output, then its
    // first 20,000,000 bytes)
    let max_output = (args.mode == Mode::Json).then_some(MAX_BUFFER_BYTES);
    let deadline =
        ctx.env(DEADLINE_ENV).and_then(|v| v.parse::<u64>().ok()).map(Duration::from_millis).unwrap_or(DEADLINE);
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let cwd = ctx.working_dir();
    // files a deny rule covers are left out of the walk: neither searched nor named
    let skip = crate::fs::search_skip(ctx, "Grep");
    let task = tokio::task::spawn_blocking(move || {
        let mut out = Capped { buf: Vec::new(), overflow: false };
        let mut err = Capped { buf: Vec::new(), overflow: false };
        let code = {
            let mut io = Io {
                stdout: &mut out,
                stderr: &mut err,
                stdout_is_terminal: false,
                cwd,
                cancel: Some(&flag),
                skip,
                max_output,
            };
            run(&args, &mut io)
        };
        (code, out, err)
    });
    match tokio::time::timeout(deadline, task).await {
        Ok(Ok((code, out, err))) => {
            // the output past the buffer is dropped, not an error: the search counts as done
            Ok(Searched {
                code: if out.overflow { 0 } else { code },
                stdout: String::from_utf8_lossy(&out.buf).into_owned(),
                stderr: String::from_utf8_lossy(&err.buf).into_owned(),
                overflow: out.overflow || max_output.is_some_and(|m| out.buf.len() >= m),
            })
        }
        Ok(Err(e)) => Err(ToolError::Runtime(format!("the search failed: {e}"))),
        Err(_) => {
            cancel.store(true, Ordering::Relaxed);
            Err(ToolError::Runtime(format!(
                "Search timed out after {}s and was cancelled; narrow the path or the pattern.",
                deadline.as_secs_f64()
            )))
        }
    }
}

/// Paths under the cwd are shown relative to it, like the reference (fewer tokens).
fn relative(cwd: &Path, p: &str) -> String {
    Path::new(p).strip_prefix(cwd).map(|r| r.display().to_string()).unwrap_or_else(|_| p.to_string())
}

/// The page of `items` (head_limit 0: no limit) and the limit applied, when it cut something (the
/// reference's `appliedLimit`).
fn paginate<T: Clone>(items: &[T], limit: usize, offset: usize) -> (Vec<T>, Option<usize>) {
    let rest: Vec<T> = items.iter().skip(offset).cloned().collect();
    let applied = (rest.len() > limit).then_some(limit);
    (rest.into_iter().take(limit).collect(), applied)
}

/// The pagination the reference names: `limit: N` when the limit cut something, `offset: N` when one
/// was given (empty when neither).
/// A page's text: its lines, else why there are none (an offset past the end of some, or no match).
fn page_body(lines: String, past_the_end: bool) -> String {
    if !lines.is_empty() {
        lines
    } else if past_the_end {
        "No entries at this offset".to_string()
    } else {
        "No matches found".to_string()
    }
}

/// `body` and, when the page was cut or skipped into, the note that says how.
fn with_pagination(body: String, applied: Option<usize>, offset: usize) -> String {
    let p = pagination(applied, offset);
    if p.is_empty() {
        body
    } else {
        format!("{body}\n\n[Showing results with pagination = {p}]")
    }
}

fn pagination(applied: Option<usize>, offset: usize) -> String {
    let mut parts = Vec::new();
    if let Some(l) = applied {
        parts.push(format!("limit: {l}"));
    }
    if offset > 0 {
        parts.push(format!("offset: {offset}"));
    }
    parts.join(", ")
}

impl TypedTool for Grep {
    const NAME: &'static str = "Grep";
    const DESCRIPTION: &'static str = "A powerful search tool built on ripgrep.\n\nUsage:\n- Supports full regex syntax (e.g., \"log.*Error\", \"function\\\\s+\\\\w+\")\n- Filter files with glob parameter (e.g., \"*.js\", \"**/*.tsx\") or type parameter (e.g., \"js\", \"py\", \"rust\")\n- Output modes: \"content\" shows matching lines, \"files_with_matches\" shows only file paths (default), \"count\" shows match counts\n- Results are paginated with head_limit (default 250) and offset\n- Multiline matching: use multiline: true";
    const READ_ONLY: bool = true;
    const CONCURRENCY_SAFE: bool = true;
    const MAX_RESULT_SIZE_CHARS: Option<usize> = Some(MAX_RESULT_CHARS);
    type Args = Args;

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The regular expression pattern to search for in file contents"},
                "path": {"type": "string", "description": "File or directory to search in (rg PATH). Defaults to current working directory."},
                "glob": {"type": "string", "description": "Glob pattern to filter files (e.g. \"*.js\", \"*.{ts,tsx}\") - maps to rg --glob"},
                "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "Output mode. Defaults to \"files_with_matches\"."},
                "-B": {"type": "number", "description": "Number of lines to show before each match (rg -B). Requires output_mode: \"content\"."},
                "-A": {"type": "number", "description": "Number of lines to show after each match (rg -A). Requires output_mode: \"content\"."},
                "-C": {"type": "number", "description": "Alias for context."},
                "context": {"type": "number", "description": "Number of lines to show before and after each match (rg -C). Requires output_mode: \"content\"."},
                "-n": {"type": "boolean", "description": "Show line numbers in output (rg -n). Requires output_mode: \"content\". Defaults to true."},
                "-i": {"type": "boolean", "description": "Case insensitive search (rg -i)"},
                "type": {"type": "string", "description": "File type to search (rg --type). Common types: js, py, rust, go, java, etc."},
                "head_limit": {"type": "number", "description": "Limit output to first N lines/entries. Defaults to 250. Pass 0 for unlimited."},
                "offset": {"type": "number", "description": "Skip first N lines/entries before applying head_limit. Defaults to 0."},
                "multiline": {"type": "boolean", "description": "Enable multiline mode where . matches newlines and patterns can span lines (rg -U --multiline-dotall). Default: false."}
            },
            "required": ["pattern"],
            "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"
        })
    }

    fn permission_subject(&self, input: &Value, ctx: &ToolContext) -> PermissionSubject {
        crate::fs::search_root_subject(input, ctx)
    }

    /// The reference refuses a Grep of a directory that a `dir/**` deny rule covers (measured by
    /// harness/tests/fidelity.rs: `Read(secret/**)` refuses a Grep with path `secret`).
    fn refine_decision(&self, subject: &PermissionSubject, decision: Decision, ctx: &ToolContext) -> Decision {
        if let (Decision::Allow(_) | Decision::Ask(_), PermissionSubject::ReadPath(p)) = (&decision, subject) {
            if p.is_dir() {
                let inside = PermissionSubject::ReadPath(p.join("x"));
                if let Decision::Deny(r) = ctx.session.rules().decide(Self::NAME, &inside, true, &ctx.anchors()) {
                    if r.ends_with("/**)") {
                        return Decision::Deny(r);
                    }
                }
            }
        }
        decision
    }

    fn denied(&self, subject: &PermissionSubject, _rule: &str, _ctx: &ToolContext) -> Option<ToolError> {
        crate::fs::search_denied(subject)
    }

    async fn call(&self, a: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        {
            let path: PathBuf = crate::fs::search_root(ctx, a.path.as_deref())?;
            let shown = a.path.as_deref().unwrap_or_default();
            let meta = std::fs::metadata(&path)
                .map_err(|_| crate::fs::missing_search_path_error(ctx, "Path", shown, &path))?;
            if !meta.is_file() && !meta.is_dir() {
                // a FIFO, socket or device would block the search: nothing would ever end it
                return Err(ToolError::Validation(format!("Path is not a regular file or directory: {shown}")));
            }
            let mode = match a.output_mode.as_deref().unwrap_or("files_with_matches") {
                "content" => Mode::Standard,
                "count" => Mode::Count,
                _ => Mode::FilesWithMatches,
            };
            // walked from the path as given (the OS follows a link in it), as the reference hands its rg
            // the path: results under a link or /proc/self/root are shown under it (`read.deny-bypass`);
            // the resolved path only had to lie in the sandbox
            let walk = a.path.as_deref().map(|p| crate::fs::absolute(ctx, p)).unwrap_or_else(|| path.clone());
            // from 2.1.251 the content mode reads rg's JSON ([`CONTENT_FROM_JSON`])
            let json_content = mode == Mode::Standard && ctx.profile().has(&CONTENT_FROM_JSON);
            let mut rg = rg_args(&a, mode, &walk);
            if json_content {
                rg.mode = Mode::Json;
            }
            let found = search(ctx, rg).await?;
            // results are shown relative to the session's working directory (WT-1: a worktree's, after EnterWorktree)
            let wd = ctx.working_dir();
            // (rg's JSON ends with a summary even when nothing was searched)
            let nothing = found.stdout.lines().all(|l| l.starts_with("{\"type\":\"summary\""));
            if found.code == EXIT_ERROR && nothing {
                // GREP-3 / GREP-7: ripgrep refused to search (bad pattern, glob or type).
                return Err(ToolError::Runtime(format!(
                    "Search failed — ripgrep rejected the pattern, glob, or file type without searching:\n{}",
                    found.stderr.trim_end()
                )));
            }
            let limit = match a.head_limit {
                Some(0) => usize::MAX,
                Some(n) => n,
                None => DEFAULT_HEAD_LIMIT,
            };
            let offset = a.offset.unwrap_or(0);
            // the reference's rg runner trims the output (JavaScript's trim: white space and U+FEFF),
            // splits it on '\n', drops a '\r' before it and every empty line (`probes/grep/budget.toml`:
            // an empty line `^$` matched is not shown)
            let lines: Vec<String> = found
                .stdout
                .trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
                .split('\n')
                .map(|l| l.strip_suffix('\r').unwrap_or(l))
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect();
            // GREP-2: the record kept beside the text says how much there was in all and what was cut, so
            // "not shown" can be told apart: filtered (not matched) or truncated (limit / offset).
            let applied =
                |cut: Option<usize>| json!({"appliedLimit": cut, "appliedOffset": (offset > 0).then_some(offset)});
            // the texts as Claude Code 2.1.235 words them (its Grep tool's result mapping, measured by
            // harness/tests/fidelity.rs)
            let (text, mut data) = match mode {
                Mode::Standard if json_content => {
                    let breaks = [a.context, a.context_c, a.before, a.after].iter().any(|n| n.is_some_and(|n| n > 0));
                    let entries = json_entries(&raw_lines(&found.stdout, found.overflow), breaks);
                    let (page, cut) = paginate(&entries, limit, offset);
                    let numbers = a.line_numbers.unwrap_or(true);
                    let shown: Vec<String> =
                        page.iter().map(|e| shown_entry(e, numbers, meta.is_dir().then_some(wd.as_path()))).collect();
                    let content = shown.join("\n");
                    let data = json!({"mode": "content", "numLines": shown.len(), "totalLines": entries.len(), "content": content});
                    let body = page_body(content, offset > 0 && !entries.is_empty());
                    (with_pagination(body, cut, offset), merge(data, applied(cut)))
                }
                Mode::Standard => {
                    // like the reference, only what comes before a line's first ':' is made relative: the
                    // path of a match line (context lines, `path-N-text`, keep their absolute path)
                    let rel: Vec<String> = lines.iter().map(|l| relative_line(&wd, l)).collect();
                    let (shown, cut) = paginate(&rel, limit, offset);
                    let data = json!({"mode": "content", "numLines": rel.len(), "content": shown.join("\n")});
                    let body = page_body(shown.join("\n"), offset > 0 && !rel.is_empty());
                    (with_pagination(body, cut, offset), merge(data, applied(cut)))
                }
                Mode::Count => {
                    let rel: Vec<String> = lines.iter().map(|l| relative_count_line(&wd, l)).collect();
                    let (shown, cut) = paginate(&rel, limit, offset);
                    // the totals are of every file, shown or not (as the reference counts them)
                    let counts: Vec<u64> = rel
                        .iter()
                        .filter_map(|l| l.rsplit_once(':').and_then(|(_, n)| n.parse::<u64>().ok()))
                        .collect();
                    let (all, files) = (counts.iter().sum::<u64>(), counts.len());
                    let data = json!({"mode": "count", "numFiles": files, "numMatches": all});
                    let body = page_body(shown.join("\n"), all > 0);
                    let p = pagination(cut, offset);
                    let text = format!(
                        "{body}\n\nFound {all} total {} across {files} {}.{}",
                        if all == 1 { "occurrence" } else { "occurrences" },
                        if files == 1 { "file" } else { "files" },
                        if p.is_empty() { String::new() } else { format!(" with pagination = {p}") }
                    );
                    (text, merge(data, applied(cut)))
                }
                _ => {
                    // most recently modified first, then path (the reference's order)
                    let paths: Vec<&str> = lines.iter().map(|l| l.as_ref()).collect();
                    let mut files: Vec<(Option<std::time::SystemTime>, String)> = crate::fs::mtimes(&paths)
                        .into_iter()
                        .zip(lines.iter())
                        .map(|(t, l)| (t, relative(&wd, l)))
                        .collect();
                    files.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| x.1.cmp(&y.1)));
                    let names: Vec<String> = files.into_iter().map(|(_, n)| n).collect();
                    let (shown, cut) = paginate(&names, limit, offset);
                    let data = json!({"mode": "files_with_matches", "numFiles": names.len(), "filenames": shown});
                    let p = pagination(cut, offset);
                    let text = if shown.is_empty() {
                        if offset > 0 && !names.is_empty() {
                            format!("No entries at this offset. [Showing results with pagination = {p}]")
                        } else {
                            "No files found".to_string()
                        }
                    } else {
                        format!(
                            "Found {} file{}{}\n{}",
                            shown.len(),
                            if shown.len() == 1 { "" } else { "s" },
                            if p.is_empty() { String::new() } else { format!(" {p}") },
                            shown.join("\n")
                        )
                    };
                    (text, merge(data, applied(cut)))
                }
            };
            if let Some(o) = data.as_object_mut() {
                o.retain(|_, v| !v.is_null());
            }
            Ok(ToolOutput::Data { text, data })
        }
    }
}

/// From 2.1.251 Grep's content mode runs the reference's rg with `--json` and builds its lines from
/// the match and context events, as [`json_entries`] does (measured by `probes/grep/output-buffer.toml`
/// and `grep/budget.toml`: timeline GREP-2 / GREP-3, 2.1.250 → 2.1.251): the 20,000,000-byte buffer
/// holds JSON now, so far fewer lines fit (the probe's offset past them finds `No entries at this
/// offset`), and a matched empty line is kept (no trimming, no dropping of empty lines).
pub const CONTENT_FROM_JSON: Switch =
    Switch { name: "Grep's content mode reads rg's JSON", since: "2.1.251", probe: "grep.output-buffer" };

/// rg's output as the reference's runner splits it (its raw lines): one final line end dropped, split
/// on `\n`; when the buffer cut the output inside a line, that partial last line is dropped.
fn raw_lines(out: &str, overflow: bool) -> Vec<&str> {
    if out.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<&str> = out.strip_suffix('\n').unwrap_or(out).split('\n').collect();
    if overflow && !out.ends_with('\n') {
        lines.pop();
    }
    lines
}

/// The lines of rg's `--json` output as the reference reads them (its 2.1.251+ content mode): per file,
/// `PATH\0N:text` for a match line and `PATH\0N-text` for a context line (a multi-line match one entry
/// per line), a line over 500 chars as `[Omitted long matching line]` / `[Omitted long context line]`,
/// `--` between groups when context was asked for; a binary file's lines holding a NUL dropped and
/// `PATH\0binary file matches (found "\0" byte around offset N)` added; lines that are not JSON
/// (the buffer's cut) skipped.
fn json_entries(lines: &[&str], context_breaks: bool) -> Vec<String> {
    fn text(v: &Value) -> String {
        if let Some(t) = v.get("text").and_then(Value::as_str) {
            return t.to_string();
        }
        use base64::Engine;
        // rg writes a line that is not UTF-8 as standard base64 `bytes`; anything else shows as an empty line
        let bytes = v.get("bytes").and_then(Value::as_str).unwrap_or_default();
        let raw = base64::engine::general_purpose::STANDARD.decode(bytes).unwrap_or_default();
        String::from_utf8_lossy(&raw).into_owned()
    }
    let omitted = |line: &str, kind: &str| {
        if line.encode_utf16().count() > 500 {
            if kind == "match" {
                "[Omitted long matching line]".to_string()
            } else {
                "[Omitted long context line]".to_string()
            }
        } else {
            line.to_string()
        }
    };
    let (mut out, mut file) = (Vec::new(), Vec::<String>::new());
    let (mut last_path, mut last_line): (Option<String>, i64) = (None, -1);
    for l in lines {
        if !l.starts_with('{') {
            continue;
        }
        let Ok(ev) = serde_json::from_str::<Value>(l) else { continue };
        let data = ev.get("data").cloned().unwrap_or(Value::Null);
        match ev.get("type").and_then(Value::as_str) {
            Some("begin") => file.clear(),
            Some("end") => {
                let binary = data.get("binary_offset").and_then(Value::as_u64);
                for e in file.drain(..) {
                    let holds_nul = e.split_once('\0').is_some_and(|(_, rest)| rest.contains('\0'));
                    if binary.is_none() || !holds_nul {
                        out.push(e);
                    }
                }
                if let Some(at) = binary {
                    let path = text(&data["path"]);
                    out.push(format!("{path}\0binary file matches (found \"\\0\" byte around offset {at})"));
                }
            }
            Some(kind @ ("match" | "context")) => {
                let path = text(&data["path"]);
                let number = data.get("line_number").and_then(Value::as_i64).unwrap_or(0);
                let all = text(&data["lines"]);
                let all = all.strip_suffix('\n').map(|t| t.strip_suffix('\r').unwrap_or(t)).unwrap_or(&all);
                if context_breaks && last_path.as_ref().is_some_and(|p| *p != path || number > last_line + 1) {
                    file.push("--".to_string());
                }
                let sep = if kind == "match" { ':' } else { '-' };
                let parts: Vec<&str> = all.split('\n').collect();
                for (i, part) in parts.iter().enumerate() {
                    let part = part.strip_suffix('\r').unwrap_or(part);
                    file.push(format!("{path}\0{}{sep}{}", number + i as i64, omitted(part, kind)));
                }
                last_line = number + parts.len() as i64 - 1;
                last_path = Some(path);
            }
            _ => {}
        }
    }
    out.append(&mut file);
    out
}

/// An entry of [`json_entries`] as the result shows it: without its line number when `-n` is false, with
/// its path (relative to `dir`) when a directory was searched.
fn shown_entry(entry: &str, numbers: bool, dir: Option<&Path>) -> String {
    let strip_number = |t: &str| -> String {
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        match t.as_bytes().get(digits) {
            Some(b':' | b'-') if digits > 0 => t[digits + 1..].to_string(),
            _ => t.to_string(),
        }
    };
    let Some((path, rest)) = entry.split_once('\0') else {
        return if numbers { entry.to_string() } else { strip_number(entry) };
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let sep = match rest.as_bytes().get(digits) {
        Some(b'-') if digits > 0 => '-',
        _ => ':',
    };
    let shown = if numbers || digits == 0 { rest.to_string() } else { strip_number(rest) };
    match dir {
        Some(wd) => format!("{}{sep}{shown}", relative(wd, path)),
        None => shown,
    }
}

fn merge(mut a: Value, b: Value) -> Value {
    if let (Some(x), Value::Object(y)) = (a.as_object_mut(), b) {
        x.extend(y);
    }
    a
}

/// A content line as the reference shows it: the part before the first `:` made relative to the cwd
/// when it lies under it (a match line's path; a context line, `PATH-N-text`, only when its text holds
/// a `:`).
fn relative_line(cwd: &Path, line: &str) -> String {
    match line.find(':') {
        Some(i) if i > 0 => format!("{}{}", relative(cwd, &line[..i]), &line[i..]),
        _ => line.to_string(),
    }
}

/// A count line (`PATH:N`): the path before the last `:` made relative.
fn relative_count_line(cwd: &Path, line: &str) -> String {
    match line.rfind(':') {
        Some(i) if i > 0 => format!("{}{}", relative(cwd, &line[..i]), &line[i..]),
        _ => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rg flags the tool stands for — its `-X` parameters and the flags its descriptions name (`rg -A`,
    /// `rg -U --multiline-dotall`) — and the flags it always passes are flags the search engine declares
    /// (`probelab_search::args::FLAGS`, each flag declared once there).
    #[test]
    fn the_flags_the_tool_names_are_declared_flags() {
        let schema = Grep.input_schema();
        let props = schema["properties"].as_object().map(|m| m.iter().collect::<Vec<_>>()).unwrap_or_default();
        assert!(!props.is_empty());
        let mut named = vec!["--hidden".to_string(), "--max-columns".into(), "--glob".into()];
        for (key, prop) in props {
            if key.starts_with('-') {
                named.push(key.clone());
            }
            let description = prop["description"].as_str().unwrap_or_default();
            for (_, after) in description.match_indices("rg ").map(|(i, _)| description.split_at(i + 3)) {
                let flags = after.split_whitespace().take_while(|w| w.starts_with('-'));
                named.extend(flags.map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()).to_string()));
            }
        }
        for name in ["-A", "-B", "-C", "-n", "-i", "--glob", "--type", "-U", "--multiline-dotall"] {
            assert!(named.iter().any(|n| n == name), "{name} is no longer named: {named:?}");
        }
        for name in &named {
            assert!(probelab_search::args::flag(name).is_some(), "{name}: not a flag the engine declares");
        }
    }

    #[test]
    fn globs_split_outside_braces() {
        assert_eq!(split_globs("*.rs, *.{ts,tsx} src/**"), ["*.rs", "*.{ts,tsx}", "src/**"]);
    }

    #[test]
    fn pagination_and_its_note() {
        let v: Vec<u32> = (0..10).collect();
        assert_eq!(paginate(&v, 3, 2), (vec![2, 3, 4], Some(3)));
        assert_eq!(paginate(&v, 30, 0), (v.clone(), None));
        assert_eq!(pagination(Some(3), 2), "limit: 3, offset: 2");
        assert_eq!(pagination(None, 0), "");
        assert_eq!(pagination(None, 1), "offset: 1");
        let cwd = Path::new("/w");
        assert_eq!(relative_line(cwd, "/w/a.rs:3:x"), "a.rs:3:x");
        assert_eq!(relative_line(cwd, "/w/a.rs-2-y"), "/w/a.rs-2-y", "the reference leaves context lines absolute");
        assert_eq!(relative_count_line(cwd, "/w/a:b.rs:4"), "a:b.rs:4");
    }

    fn grep_at(version: &str, files: &[(&str, &str)], input: Value) -> String {
        let (_d, c) = ToolContext::for_test();
        let c = c.with_profile(crate::profile::Profile::at(version).unwrap_or_else(|e| panic!("{e}")));
        for (name, body) in files {
            std::fs::write(c.cwd.join(name), body).unwrap_or_else(|e| panic!("{e}"));
        }
        let mut input = input;
        if let Some(p) = input.get("path").and_then(Value::as_str) {
            input["path"] = json!(c.cwd.join(p));
        }
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
        match rt.block_on(crate::tool::Tool::call(&Grep, input, &c)) {
            Ok(ToolOutput::Data { text, .. }) => text,
            other => panic!("{version}: {other:?}"),
        }
    }

    #[test]
    fn content_comes_from_rg_json_from_2_1_251() {
        let file = [("f.txt", "a\n\nb\na\n")];
        let input = json!({"pattern": "^$|a", "path": "f.txt", "output_mode": "content", "-n": false});
        // 2.1.235's runner trims and drops empty lines; the JSON reading keeps a matched empty line
        assert_eq!(grep_at("2.1.250", &file, input.clone()), "a\na");
        assert_eq!(grep_at("2.1.251", &file, input), "a\n\na");
        // a directory: paths relative to the cwd, numbers, context lines with `-`, `--` between groups
        let files = [("d.txt", "x\n1\n2\n3\nx\n"), ("e.txt", "none\n")];
        let input = json!({"pattern": "x", "output_mode": "content", "-A": 1});
        assert_eq!(grep_at("2.1.251", &files, input), "d.txt:1:x\nd.txt-2-1\n--\nd.txt:5:x");
    }

    #[test]
    fn json_events_become_the_references_entries() {
        let ev = |t: &str, path: &str, n: u64, text: &str| {
            json!({"type": t, "data": {"path": {"text": path}, "lines": {"text": text}, "line_number": n}}).to_string()
        };
        let lines = [
            json!({"type": "begin", "data": {"path": {"text": "/w/a"}}}).to_string(),
            ev("match", "/w/a", 1, "one\n"),
            ev("context", "/w/a", 2, "two\r\n"),
            ev("match", "/w/a", 7, "x\ny\n"),
            json!({"type": "end", "data": {"path": {"text": "/w/a"}, "binary_offset": null}}).to_string(),
            ev("match", "/w/b", 3, &"z".repeat(501)),
            "{\"type\":\"match\",\"data\":{\"pa".to_string(),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        assert_eq!(
            json_entries(&lines, true),
            [
                "/w/a\u{0}1:one",
                "/w/a\u{0}2-two",
                "--",
                "/w/a\u{0}7:x",
                "/w/a\u{0}8:y",
                "--",
                "/w/b\u{0}3:[Omitted long matching line]"
            ]
        );
        assert_eq!(json_entries(&lines, false).len(), 5, "no breaks without context");
        assert_eq!(shown_entry("/w/a\u{0}2-two", false, Some(Path::new("/w"))), "a-two");
        assert_eq!(shown_entry("/w/a\u{0}7:x", true, None), "7:x");
        assert_eq!(shown_entry("--", false, None), "--");
        // the buffer's cut: the partial last line goes
        assert_eq!(raw_lines("{a}\n{b", true), ["{a}"]);
        assert_eq!(raw_lines("{a}\n{b}\n", true), ["{a}", "{b}"]);
        assert_eq!(raw_lines("", false), Vec::<&str>::new());
    }
}
