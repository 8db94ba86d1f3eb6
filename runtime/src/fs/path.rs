//! Paths a file tool is given, resolved inside the sandbox roots: lexically, through symlinks (refusing
//! `..` and symlink escapes), and as the permission subjects of reads and searches.

use super::*;
use crate::context::ToolContext;
use crate::tool::ToolError;
use std::path::{Component, Path, PathBuf};

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
