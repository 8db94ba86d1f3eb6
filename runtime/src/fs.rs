//! File helpers shared by the file tools: resolving a path inside the sandbox roots (refusing `..` and
//! symlink escapes), `cat -n` numbering, the read / stale gates of Edit and Write (EDIT-1, EDIT-2), the
//! read state (READ-4), and the file-history checkpoint (EDIT-6).

use crate::context::{ReadState, ToolContext};
use crate::tool::ToolError;
use sha2::{Digest, Sha256};
use std::path::{Component, Path, PathBuf};

/// Text of the "not read yet" gate, as the reference sends it (EDIT-1).
pub const NOT_READ_YET: &str = "File has not been read yet. Read it first before writing to it.";

/// Text of the stale-file gate, as the reference sends it (EDIT-2).
pub const MODIFIED_SINCE_READ: &str =
    "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it.";

pub use crate::context::cwd_slug;
pub use crate::paths::{real_path, MAX_SYMLINK_HOPS};

/// Resolves `file_path` (absolute, or relative to the cwd) lexically, without touching the disk.
pub fn absolute(ctx: &ToolContext, file_path: &str) -> PathBuf {
    let p = Path::new(file_path);
    lexical(&if p.is_absolute() { p.to_path_buf() } else { ctx.working_dir().join(p) })
}

/// `path` with `.` dropped and each `..` taking off the component before it, on the text alone.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Text of the refusal to write through a symlink, as Claude Code 2.1.235 words it for Write and Edit
/// (measured by `probes/claude-code/symlink-writes.toml`: a link to a file inside the project, to one
/// outside it and a dangling one, all refused alike; a symlinked directory in the path is followed).
/// From 2.1.251 the text says the path is a symbolic link (measured by `probes/edit/symlink-writes.toml`:
/// timeline PIPE-1 / PIPE-2, 2.1.250 → 2.1.251); from 2.1.280 it names where the link leads
/// ([`SYMLINK_REFUSAL_NAMES_TARGET`]).
pub fn through_symlink(ctx: &ToolContext, path: &Path) -> String {
    let profile = ctx.profile();
    if !profile.has(&SYMLINK_REFUSAL_REWORDED) {
        return format!(
            "Refusing to write through symlink: {}. Resolve the symlink and pass the real target path explicitly.",
            path.display()
        );
    }
    let p = path.display();
    if !profile.has(&SYMLINK_REFUSAL_NAMES_TARGET) {
        return format!("Refusing to write {p}: it is a symbolic link. Write to the link's target path instead.");
    }
    // one hop, relative to the link's directory, `..` removed lexically (a dangling link's too)
    let target = std::fs::read_link(path)
        .ok()
        .map(|t| lexical(&path.parent().map(|d| d.join(&t)).unwrap_or(t)).display().to_string());
    let target = target.unwrap_or_else(|| "a target that could not be determined".into());
    format!("Refusing to write {p}: it is a symbolic link. Write to the link's target path instead: {target}.")
}

/// From 2.1.251 a write through a symlink is refused as `Refusing to write <path>: it is a symbolic
/// link. Write to the link's target path instead.` ([`through_symlink`]).
pub const SYMLINK_REFUSAL_REWORDED: crate::profile::Switch = crate::profile::Switch {
    name: "a write through a symlink: 'it is a symbolic link'",
    since: "2.1.251",
    probe: "edit.symlink-writes",
};

/// From 2.1.280 the refusal of a write through a symlink ends with the link's target (measured by
/// `probes/edit/symlink-writes.toml`: timeline PIPE-1 / PIPE-2, 2.1.278 → 2.1.280).
pub const SYMLINK_REFUSAL_NAMES_TARGET: crate::profile::Switch = crate::profile::Switch {
    name: "a write through a symlink names the link's target",
    since: "2.1.280",
    probe: "edit.symlink-writes",
};

/// A path a tool was given, resolved ([`resolve`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute, `..` removed lexically: what the tool names in its results and keys its read state by.
    pub path: PathBuf,
    /// What the OS touches through it ([`real_path`]): what confinement and deny rules look at.
    pub real: PathBuf,
    /// Its last component is a symlink (dangling or not): refused for writes.
    pub link: bool,
}

/// Resolves `file_path` (absolute, or relative to the working dir) and confines it: the real path must
/// lie under one of the sandbox roots.
pub fn resolve(ctx: &ToolContext, file_path: &str) -> Result<Resolved, ToolError> {
    let path = absolute(ctx, file_path);
    let roots = || ctx.roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ");
    let Some(real) = real_path(&path) else {
        return Err(ToolError::Validation(format!(
            "Path {} holds a symlink loop, more than {MAX_SYMLINK_HOPS} symlinks or a link that cannot be read; access refused. Pass the real target path.",
            path.display()
        )));
    };
    if !ctx.roots.iter().any(|r| real.starts_with(r)) {
        return Err(ToolError::Validation(format!(
            "Path {} is outside the sandbox this runtime may touch ({}); access refused.",
            path.display(),
            roots()
        )));
    }
    let link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
    Ok(Resolved { path, real, link })
}

/// Resolves and confines ([`resolve`]); the path as given (absolute).
pub fn confine(ctx: &ToolContext, file_path: &str) -> Result<PathBuf, ToolError> {
    resolve(ctx, file_path).map(|r| r.path)
}

/// Resolves and confines a path a tool writes: also refused when its last component is a symlink,
/// wherever it leads (the reference's rule and text: [`through_symlink`]).
pub fn confine_write(ctx: &ToolContext, file_path: &str) -> Result<PathBuf, ToolError> {
    // the link is refused before where it leads is looked at, as the reference does: the same text
    // for a link inside the project, one out of the sandbox and a dangling one
    let path = absolute(ctx, file_path);
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(ToolError::Runtime(through_symlink(ctx, &path)));
    }
    resolve(ctx, file_path).map(|r| r.path)
}

/// The pipeline's confinement of a call's path (before the tool runs): reads resolved and confined,
/// writes refused through a symlink first (the reference refuses those whatever they lead to).
pub fn confine_subject(ctx: &ToolContext, subject: &crate::tool::PermissionSubject) -> Result<(), ToolError> {
    use crate::tool::PermissionSubject::{ReadPath, WritePath};
    match subject {
        WritePath(p) => confine_write(ctx, &p.to_string_lossy()).map(|_| ()),
        ReadPath(p) => confine(ctx, &p.to_string_lossy()).map(|_| ()),
        _ => Ok(()),
    }
}

/// The directory or file a search tool (Grep, Glob) works in: its `path` parameter confined to the
/// sandbox, else the working dir — as its real path, so that the walk under it sees the paths the
/// deny rules are matched on (a symlinked root is walked where it leads).
pub fn search_root(ctx: &ToolContext, path: Option<&str>) -> Result<PathBuf, ToolError> {
    match path {
        Some(p) => resolve(ctx, p).map(|r| r.real),
        None => Ok(ctx.working_dir()),
    }
}

/// What a search walk must leave out: the files the session's `Read(...)`-family deny rules cover for
/// `tool` (matched like a call's own path: as given and as resolved). None when no deny rule names a
/// path, so an unrestricted search pays nothing.
pub fn search_skip(ctx: &ToolContext, tool: &'static str) -> Option<probelab_search::Skip> {
    if !ctx.session.rules().denies_paths(tool) {
        return None;
    }
    // the session's rules, shared with the walk (parsed once, when the session was made)
    let (session, at) = (ctx.session.clone(), ctx.anchors());
    Some(std::sync::Arc::new(move |p: &Path| {
        let subject = crate::tool::PermissionSubject::ReadPath(p.to_path_buf());
        matches!(session.rules().decide(tool, &subject, true, &at), crate::permissions::Decision::Deny(_))
    }))
}

/// What the permission rules of a file tool match: the path in `key`, as a write or a read.
pub fn path_subject(
    input: &serde_json::Value,
    key: &str,
    write: bool,
    ctx: &ToolContext,
) -> crate::tool::PermissionSubject {
    match input.get(key).and_then(serde_json::Value::as_str) {
        Some(p) if write => crate::tool::PermissionSubject::WritePath(absolute(ctx, p)),
        Some(p) => crate::tool::PermissionSubject::ReadPath(absolute(ctx, p)),
        None => crate::tool::PermissionSubject::None,
    }
}

/// What the permission rules of a search tool match: its `path` (or the cwd) as a read.
pub fn search_root_subject(input: &serde_json::Value, ctx: &ToolContext) -> crate::tool::PermissionSubject {
    let p = input
        .get("path")
        .and_then(serde_json::Value::as_str)
        .map(|p| absolute(ctx, p))
        .unwrap_or_else(|| ctx.working_dir());
    crate::tool::PermissionSubject::ReadPath(p)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> (tempfile::TempDir, ToolContext) {
        ToolContext::for_test()
    }

    #[test]
    fn tools_reach_the_rules_the_session_parsed_once() {
        use crate::settings::{AskAnswer, PermissionSettings, Settings};
        let settings = |deny: &str| Settings {
            permissions: PermissionSettings { deny: vec![deny.to_string()], ..PermissionSettings::default() },
            ..Settings::default()
        };
        let (_d, mut c) = ctx();
        let session = crate::session::Session::new(settings("Read(secret/**)"), AskAnswer::default(), None);
        c.session = std::sync::Arc::new(session.unwrap_or_else(|e| panic!("{e}")));
        let skip = search_skip(&c, "Grep").unwrap_or_else(|| panic!("a deny rule on paths: the walk skips"));
        assert!(skip(&c.cwd.join("secret/k")) && !skip(&c.cwd.join("open/k")));
        assert!(!read_auto_allowed(&c, &c.cwd.join("secret/k")) && read_auto_allowed(&c, &c.cwd.join("open/k")));
        // rules that do not parse stop the session at its start, not each tool call later
        let bad = crate::session::Session::new(settings("Read(x"), AskAnswer::default(), None);
        assert_eq!(
            bad.err().map(|e| e.to_string()),
            Some("permission rule \"Read(x\" is not `Tool` or `Tool(pattern)`".into())
        );
    }

    #[test]
    fn a_missing_search_path_is_unwrapped_from_2_1_260() {
        for (version, wrapped) in [("2.1.235", true), ("2.1.259", true), ("2.1.260", false), ("2.1.333", false)] {
            let (_d, c) = ctx();
            let c = c.with_profile(crate::profile::Profile::at(version).unwrap_or_else(|e| panic!("{e}")));
            let e = missing_search_path_error(&c, "Path", "nowhere", &c.cwd.join("nowhere"));
            assert_eq!(matches!(e, ToolError::Validation(_)), wrapped, "{version}: {e:?}");
            assert!(e.to_string().starts_with("Path does not exist: nowhere. Note: your current working directory is"));
        }
    }

    #[test]
    fn many_mtimes_come_back_in_the_order_asked() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // every 7th path is missing: a chunk put back out of order would move its `None`s
        let names: Vec<String> = (0..1600)
            .map(|i| {
                let p = d.path().join(format!("f{i}"));
                if i % 7 != 0 {
                    std::fs::write(&p, "x").unwrap_or_else(|e| panic!("{e}"));
                }
                p.to_string_lossy().into_owned()
            })
            .collect();
        let paths: Vec<&str> = names.iter().map(String::as_str).collect();
        let got = mtimes(&paths);
        let want: Vec<_> = paths.iter().map(|p| mtime(Path::new(p))).collect();
        assert_eq!(got, want);
        assert_eq!(got.iter().filter(|t| t.is_none()).count(), 229);
    }

    #[test]
    fn dotdot_and_symlink_escapes_are_refused() {
        let (_d, c) = ctx();
        assert!(confine(&c, "a/../b.txt").is_ok());
        assert!(confine(&c, "../../../etc/passwd").is_err());
        assert!(confine(&c, "/etc/passwd").is_err());
        let link = c.cwd.join("out");
        let _ = std::os::unix::fs::symlink("/etc", &link);
        assert!(confine(&c, "out/passwd").is_err());
        assert!(confine(&c, "out/new-file").is_err());
    }

    #[test]
    fn the_resolver_follows_every_link_the_last_and_dangling_ones_included() {
        let (_d, c) = ctx();
        let link = |target: &str, at: &str| {
            std::os::unix::fs::symlink(target, c.cwd.join(at)).unwrap_or_else(|e| panic!("{e}"));
        };
        std::fs::create_dir_all(c.cwd.join("secrets")).unwrap_or_else(|e| panic!("{e}"));
        link("/var/tmp/probelab-unit-dangling", "dangling");
        link("secrets", "sdir");
        link("sdir", "sdir2");
        link("loop2", "loop1");
        link("loop1", "loop2");
        link("../..", "up");
        let real = |p: &str| real_path(&c.cwd.join(p));
        assert_eq!(real("dangling"), Some(PathBuf::from("/var/tmp/probelab-unit-dangling")));
        assert_eq!(real("sdir2/k"), Some(c.cwd.join("secrets/k")));
        assert_eq!(real("loop1"), None);
        assert_eq!(real("loop1/x"), None);
        // `..` after a link goes up from where the link leads
        assert_eq!(real("sdir/../x"), Some(c.cwd.join("x")));
        assert_eq!(
            real_path(&Path::new("/proc/self/root").join(c.cwd.strip_prefix("/").unwrap_or(&c.cwd)).join("sdir/k")),
            Some(c.cwd.join("secrets/k"))
        );
        // confinement on the real path; a write through any link refused with the reference's text
        assert!(confine(&c, "dangling").is_err());
        assert!(confine(&c, "up/x").is_err());
        assert!(confine(&c, "sdir/k").is_ok());
        assert_eq!(
            confine_write(&c, "sdir2").map_err(|e| e.to_string()),
            Err(through_symlink(&c, &c.cwd.join("sdir2")))
        );
        assert_eq!(
            confine_write(&c, "dangling").map_err(|e| e.to_string()),
            Err(through_symlink(&c, &c.cwd.join("dangling")))
        );
        // the text by release: 2.1.235's, 2.1.251's, 2.1.280's naming the target
        let at = |v: &str| {
            let c = c.clone().with_profile(crate::profile::Profile::at(v).unwrap_or_else(|e| panic!("{e}")));
            confine_write(&c, "dangling").map_err(|e| e.to_string()).err().unwrap_or_default()
        };
        let d = c.cwd.join("dangling");
        let d = d.display();
        assert_eq!(
            at("2.1.250"),
            format!(
                "Refusing to write through symlink: {d}. Resolve the symlink and pass the real target path explicitly."
            )
        );
        assert_eq!(
            at("2.1.279"),
            format!("Refusing to write {d}: it is a symbolic link. Write to the link's target path instead.")
        );
        assert_eq!(
            at("2.1.280"),
            format!(
                "Refusing to write {d}: it is a symbolic link. Write to the link's target path instead: /var/tmp/probelab-unit-dangling."
            )
        );
        // a relative link's target is named from the link's directory, one hop (sdir2 → sdir, not secrets)
        let c280 = c.clone().with_profile(crate::profile::Profile::at("2.1.280").unwrap_or_else(|e| panic!("{e}")));
        assert!(through_symlink(&c280, &c.cwd.join("sdir2"))
            .ends_with(&format!("instead: {}.", c.cwd.join("sdir").display())));
        assert!(confine_write(&c, "sdir/new").is_ok());
        // the kernel refuses a link that appears after the check
        link("/var/tmp/probelab-unit-late", "late");
        assert!(write_no_follow(&c.cwd.join("late"), b"x").is_err());
        assert!(!Path::new("/var/tmp/probelab-unit-late").exists());
    }

    #[test]
    fn text_files_keep_their_line_ends_and_lose_invalid_bytes() {
        let f = TextFile::decode(b"a\r\nb\r\nc\n");
        assert_eq!((f.text.as_str(), f.crlf), ("a\nb\nc\n", true));
        assert_eq!(f.encode("x\ny\n"), b"x\r\ny\r\n");
        let f = TextFile::decode(b"caf\xe9\n");
        assert_eq!((f.text.as_str(), f.crlf), ("caf\u{fffd}\n", false));
        assert_eq!(TextFile::decode(b"\xef\xbb\xbfhi").content(), "hi");
    }

    #[test]
    fn line_ends_are_trimmed_except_in_markdown() {
        assert_eq!(trim_line_ends(Path::new("a.rs"), "x \r\ny\t\nz \rw  "), "x\r\ny\nz\rw");
        assert_eq!(trim_line_ends(Path::new("a.md"), "x  \n"), "x  \n");
    }

    #[test]
    fn cat_n_numbering() {
        assert_eq!(number_lines(["a", "b"].into_iter(), 9), "9\ta\n10\tb");
    }
}
