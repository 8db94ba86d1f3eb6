//! The read state (READ-4) and the gates of Edit and Write (EDIT-1, EDIT-2): what was read and when,
//! the permission denials of reads, searches and writes, the file-history checkpoint (EDIT-6), and
//! writing a file without following a link.

use crate::context::{ReadState, ToolContext};
use crate::tool::ToolError;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Text of the "not read yet" gate, as the reference sends it (EDIT-1).
pub const NOT_READ_YET: &str = "File has not been read yet. Read it first before writing to it.";

/// Text of the stale-file gate, as the reference sends it (EDIT-2).
pub const MODIFIED_SINCE_READ: &str =
    "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it.";

/// Modification time, if the file has one.
pub fn mtime(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).ok().and_then(|m| m.modified().ok())
}

/// The modification times of many files, in order: looked up on every core when there are enough of them
/// (Grep's files_with_matches and Glob sort thousands of files by mtime; one `stat` after another
/// was most of its gap to ripgrep in the grep bench).
pub fn mtimes(paths: &[&str]) -> Vec<Option<std::time::SystemTime>> {
    const PER_THREAD_AT_LEAST: usize = 512;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(paths.len() / PER_THREAD_AT_LEAST);
    if threads <= 1 {
        return paths.iter().map(|p| mtime(Path::new(p))).collect();
    }
    let chunk = paths.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let parts: Vec<_> = paths
            .chunks(chunk)
            .map(|c| scope.spawn(move || c.iter().map(|p| mtime(Path::new(p))).collect::<Vec<_>>()))
            .collect();
        // a lookup thread cannot panic (metadata errors are `None`); were one to, its files sort last
        parts
            .into_iter()
            .zip(paths.chunks(chunk))
            .flat_map(|(h, c)| h.join().unwrap_or_else(|_| vec![None; c.len()]))
            .collect()
    })
}

/// Records what a Read returned (READ-4), or what an Edit / Write left (no window).
pub fn remember_read(ctx: &ToolContext, path: &Path, content: Vec<u8>, partial: bool) {
    remember_window(ctx, path, content, partial, None);
}

/// Records what a Read of a window (`offset` as given, default 1; `limit`) returned.
pub fn remember_window(
    ctx: &ToolContext,
    path: &Path,
    content: Vec<u8>,
    partial: bool,
    window: Option<(u64, Option<u64>)>,
) {
    let batch = ReadBatch::current(ctx);
    if let Ok(mut s) = ctx.read_state.lock() {
        s.insert(path.to_path_buf(), ReadState { content, mtime: mtime(path), partial, window, batch, unseen: false });
    }
}

/// Marks the recorded state of `path` as content the model has not all seen ([`ReadState::unseen`]).
pub fn mark_unseen(ctx: &ToolContext, path: &Path) {
    if let Ok(mut s) = ctx.read_state.lock() {
        if let Some(state) = s.get_mut(path) {
            state.unseen = true;
        }
    }
}

/// The batch of calls the pipeline runs now (PIPE-4: a run of concurrency-safe calls in parallel, or one
/// call alone), counted per session. Claude Code 2.1.235 starts a batch's Reads before any of them is
/// recorded: five parallel Reads of one unchanged file all return its content, and only a Read of a
/// later batch gets [`FILE_UNCHANGED`] (a 500-call session, issue 29). A Read's note looks at the state
/// of earlier batches only.
#[derive(Debug, Default)]
pub struct ReadBatch(std::sync::atomic::AtomicU64);

impl ReadBatch {
    /// The batch running now.
    pub fn current(ctx: &ToolContext) -> u64 {
        ctx.session.state::<ReadBatch>().0.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A new batch begins.
    pub fn next(ctx: &ToolContext) {
        ctx.session.state::<ReadBatch>().0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Claude Code 2.1.235's answer to a Read of the same window of a file unchanged since the last Read
/// (measured by `harness/tests/fidelity.rs`).
pub const FILE_UNCHANGED: &str =
    "Wasted call \u{2014} file unchanged since your last Read. Refer to that earlier tool_result instead.";

/// The gates before writing an existing file: it was Read (EDIT-1) and has not changed on disk since
/// (EDIT-2: a changed mtime with identical content passes, like the reference's full-read check).
/// NotebookEdit's: its gate holds for every model (the reference's NotebookEdit has no model switch).
pub fn check_write_gates(ctx: &ToolContext, path: &Path, current: &[u8]) -> Result<(), ToolError> {
    let state = ctx.read_state.lock().ok().and_then(|s| s.get(path).cloned());
    let Some(state) = state else {
        return Err(ToolError::Validation(NOT_READ_YET.into()));
    };
    if state.mtime != mtime(path) && state.content != current {
        return Err(ToolError::Validation(MODIFIED_SINCE_READ.into()));
    }
    Ok(())
}

/// The models with which Claude Code 2.1.235 keeps its Read-before-Edit / Write gate for every file (its
/// list, read from the binary: the gate is skipped for any other model when the file could be read
/// without asking). `probes/claude-code/edit-gate-default-model.toml`: with the default
/// `claude-opus-5` an Edit of a never-read file succeeds; `probes/claude-code/edit-gates.toml`: with
/// `claude-sonnet-4-5` it is refused.
pub const GATED_MODELS: &[&str] = &[
    "claude-opus-4-6",
    "claude-haiku-4-5",
    "claude-opus-4-5",
    "claude-opus-4-1",
    "claude-opus-4-0",
    "claude-sonnet-4-5",
    "claude-sonnet-4-0",
    "claude-3-7-sonnet",
    "claude-3-5-sonnet",
    "claude-3-5-haiku",
];

/// The session's model keeps the read gate for every file ([`GATED_MODELS`]; a `[1m]` suffix aside).
/// A session without a model (unit tests) keeps it.
pub fn model_keeps_read_gate(ctx: &ToolContext) -> bool {
    let Some(m) = ctx.session.model.as_ref() else {
        return true;
    };
    let name = m.model();
    let name = if name.to_ascii_lowercase().ends_with("[1m]") { &name[..name.len() - 4] } else { name };
    GATED_MODELS.contains(&name)
}

/// The file could be Read without asking: no deny or ask rule covers it for Read (the reference's
/// test before it skips a gate or lets a stale edit through).
pub fn read_auto_allowed(ctx: &ToolContext, path: &Path) -> bool {
    let subject = crate::tool::PermissionSubject::ReadPath(path.to_path_buf());
    matches!(ctx.session.rules().decide("Read", &subject, true, &ctx.anchors()), crate::permissions::Decision::Allow(_))
}

/// Claude Code 2.1.235's input error for a file tool's path a deny rule of its own family covers.
pub const IN_DENIED_DIR: &str = "File is in a directory that is denied by your permission settings.";

/// The refusals of a deny rule the file tools word their own way ([`crate::tool::Tool::denied`]), as
/// Claude Code 2.1.235 words them (measured by `harness/tests/fidelity.rs` and
/// `probes/claude-code/deny-through-symlinks.toml`). Read: an input error when a rule of its own family
/// covers the path as given ([`crate::permissions::Rules::denies_as_given`]); a Read denied only where
/// its path leads (a symlink, `/proc/self/root/…`) is the permission check's plain error naming the path
/// as given, as Grep's and Glob's are ([`search_denied`]).
pub fn read_denied(ctx: &ToolContext, tool: &str, subject: &crate::tool::PermissionSubject) -> Option<ToolError> {
    let crate::tool::PermissionSubject::ReadPath(p) = subject else {
        return None;
    };
    Some(match ctx.session.rules().denies_as_given(tool, p, &ctx.anchors()) {
        true => ToolError::Validation(IN_DENIED_DIR.into()),
        false => search_denied(subject)?,
    })
}

/// A search tool's (Grep, Glob) refusal of a deny rule: `Permission to read <path> has been denied.`
/// ([`read_denied`]).
pub fn search_denied(subject: &crate::tool::PermissionSubject) -> Option<ToolError> {
    match subject {
        crate::tool::PermissionSubject::ReadPath(p) => {
            Some(ToolError::Runtime(format!("Permission to read {} has been denied.", p.display())))
        }
        _ => None,
    }
}

/// A writing tool's (Edit, Write) refusal of the deny rule `rule` ([`read_denied`]): an input error, the
/// Edit family's text when a rule of the tool's family covers the path as given, or the rule is not a
/// Read rule and no Read rule covers the path (as given or where it leads) — a Write under an
/// `Edit(blocked/**)` rule: `probes/pipeline/refusals-have-no-side-effect.toml` — else that the file is
/// covered by a Read deny rule and cannot be `done` (edited, written).
pub fn write_denied(
    ctx: &ToolContext,
    tool: &str,
    subject: &crate::tool::PermissionSubject,
    rule: &str,
    done: &str,
) -> Option<ToolError> {
    let crate::tool::PermissionSubject::WritePath(p) = subject else {
        return None;
    };
    let (rules, at) = (ctx.session.rules(), ctx.anchors());
    let as_given = rules.denies_as_given(tool, p, &at);
    let as_read = crate::tool::PermissionSubject::ReadPath(p.clone());
    let read_covered = matches!(rules.decide("Read", &as_read, true, &at), crate::permissions::Decision::Deny(_));
    Some(ToolError::Validation(match as_given || (!rule.starts_with("Read(") && !read_covered) {
        true => IN_DENIED_DIR.into(),
        false => format!("File is covered by a Read deny rule in your permission settings and cannot be {done}."),
    }))
}

/// The reference's note after an Edit of a file that changed on disk since its Read but still holds the
/// old string once (the edit is applied to what is there; `probes/edit/stale-gate.toml`).
pub const STALE_RECOVERED_NOTE: &str = " (note: the file had been modified on disk since you last read it \u{2014} the edit applied cleanly, but the file contains other changes not in your context. Read it before edits that depend on surrounding content.)";

/// Claude Code 2.1.235's text when an Edit that creates into a white-space-only file finds it changed
/// since its Read (its call-time check; the input check above it is [`MODIFIED_SINCE_READ`]).
pub const CHANGED_SINCE_READ: &str = "File content has changed since it was last read. This commonly happens when a linter or formatter run via Bash rewrites the file. Call Read on this file to refresh, then retry the edit.";

/// How an Edit or Write got past the gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Read and unchanged.
    Pass,
    /// Never read, with a model that skips the gate (or a file the model could read without asking).
    Unread,
    /// Changed on disk since its Read, but the edit still applies: it goes ahead, and says so.
    StaleRecovered,
    /// Unchanged since an Edit left it, but the model has not seen all of it ([`ReadState::unseen`]).
    Unseen,
}

/// The gates of Edit (old_string not empty) as Claude Code 2.1.235 checks them: a file not read is refused unless the model skips the gate and the file could be read without asking
/// ([`model_keeps_read_gate`], [`read_auto_allowed`]); a file changed on disk since its Read (and not
/// the same text a whole Read saw) is refused unless `applies` (the old string is found, once or
/// with replace_all) and it could be read without asking — then the edit goes ahead on what is there.
pub fn check_edit_gates(ctx: &ToolContext, path: &Path, current: &[u8], applies: bool) -> Result<Gate, ToolError> {
    let state = ctx.read_state.lock().ok().and_then(|s| s.get(path).cloned());
    let read_ok = || read_auto_allowed(ctx, path);
    // (the reference also gates a Read it marked as a partial view — a page it cut to fit; the built-in
    // runtime makes no such Read: its windows are whole Reads of what they show)
    if state.is_none() && (model_keeps_read_gate(ctx) || !read_ok()) {
        return Err(ToolError::Validation(NOT_READ_YET.into()));
    }
    let Some(state) = state else {
        return Ok(Gate::Unread);
    };
    if state.mtime == mtime(path) || (!state.partial && state.content == current) {
        return Ok(if state.unseen { Gate::Unseen } else { Gate::Pass });
    }
    if applies && read_ok() {
        return Ok(Gate::StaleRecovered);
    }
    Err(ToolError::Validation(MODIFIED_SINCE_READ.into()))
}

/// The gates of an Edit with an empty old_string into a white-space-only file, checked while it runs
/// (the reference's call-time check: its refusals are not input errors): not read → refused unless the
/// model skips the gate and the file could be read without asking; changed since its Read →
/// [`CHANGED_SINCE_READ`] (an empty old string never "applies").
pub fn check_fill_gates(ctx: &ToolContext, path: &Path, current: &[u8]) -> Result<(), ToolError> {
    let state = ctx.read_state.lock().ok().and_then(|s| s.get(path).cloned());
    let Some(state) = state else {
        if model_keeps_read_gate(ctx) || !read_auto_allowed(ctx, path) {
            return Err(ToolError::Runtime(NOT_READ_YET.into()));
        }
        return Ok(());
    };
    if state.mtime == mtime(path) || (!state.partial && state.content == current) {
        return Ok(());
    }
    Err(ToolError::Runtime(CHANGED_SINCE_READ.into()))
}

/// The gates of Write over an existing file as Claude Code 2.1.235 checks them: a file never read is
/// refused unless it is no notebook, the model skips the gate and the file could be read without
/// asking; one changed since its Read (and not the same text a whole Read saw) is refused — a Write
/// is never let through stale.
pub fn check_overwrite_gates(ctx: &ToolContext, path: &Path, current: &[u8]) -> Result<(), ToolError> {
    let state = ctx.read_state.lock().ok().and_then(|s| s.get(path).cloned());
    let Some(state) = state else {
        let notebook = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("ipynb"));
        if notebook || model_keeps_read_gate(ctx) || !read_auto_allowed(ctx, path) {
            return Err(ToolError::Validation(NOT_READ_YET.into()));
        }
        return Ok(());
    };
    if state.mtime != mtime(path) && state.content != current {
        return Err(ToolError::Validation(MODIFIED_SINCE_READ.into()));
    }
    Ok(())
}

/// Saves the file's current content as a file-history checkpoint before a change (EDIT-6):
/// `<home>/.claude/file-history/<session>/<sha256(path)[..16]>@v<n>`. A checkpoint, not a transaction:
/// nothing else (Bash, git, remote effects) is captured. Returns the backup's path.
///
/// As Claude Code 2.1.235 keeps them (`probes/edit/checkpoint.toml`, with its
/// `CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING=1`: a `-p` run keeps none without it): the backup is the
/// content before the first change of the file since the user's prompt — a second change in the same
/// prompt's turns adds no version (a session of the lab's has one prompt, so one backup per file).
pub fn checkpoint(ctx: &ToolContext, path: &Path, current: &[u8]) -> Result<PathBuf, ToolError> {
    let dir = ctx.home.join(".claude").join("file-history").join(&ctx.session_id);
    crate::nofollow::create_dir_all(&ctx.roots, &dir)
        .map_err(|e| ToolError::Runtime(format!("cannot create file history: {e}")))?;
    let key = hex(&Sha256::digest(path.to_string_lossy().as_bytes()))[..16].to_string();
    let first = dir.join(format!("{key}@v1"));
    if first.exists() {
        return Ok(first);
    }
    let backup = first;
    crate::nofollow::write(&ctx.roots, &backup, current)
        .map_err(|e| ToolError::Runtime(format!("cannot write file history: {e}")))?;
    Ok(backup)
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes a file after an edit and refreshes the read state, so the next edit passes the gates.
pub fn write_and_remember(ctx: &ToolContext, path: &Path, content: &str) -> Result<(), ToolError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| ToolError::Runtime(format!("cannot create {}: {e}", parent.display())))?;
    }
    write_no_follow(path, content.as_bytes()).map_err(|e| ToolError::Runtime(format!("{e}: {}", path.display())))?;
    remember_read(ctx, path, content.as_bytes().to_vec(), false);
    Ok(())
}

/// Writes (creating or truncating) without following a symlink in the last component: `O_NOFOLLOW`
/// makes the kernel refuse one that appeared after the path was resolved (`ELOOP`).
pub fn write_no_follow(path: &Path, content: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)?;
    f.write_all(content)
}
