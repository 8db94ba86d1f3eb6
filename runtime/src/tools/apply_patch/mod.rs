//! apply_patch (PATCH-1): the `*** Begin Patch … *** End Patch` format of the Codex CLI — file
//! operations without line numbers, hunks located by their context. Optional: off by default
//! ([`ENV_ENABLE_APPLY_PATCH`] turns it on in [`crate::builtin::pool`]); Claude Code
//! 2.1.235 has no such tool (request 1 of its goldens lists none). Written from the format's published
//! grammar, not from Codex's code. This module is the tool (plan in memory, check the deny rules,
//! write all or nothing); `patch` is the format's pure core (parse, locate, apply on strings).
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path            then every line `+text` (the new file's lines)
//! *** Delete File: path
//! *** Update File: path
//! *** Move to: new/path         optional, right after Update File
//! @@ optional context line      a chunk: ` ` context, `-` removed, `+` added lines (an empty line is
//!  context                      an empty context line); `*** End of File` pins the chunk to the end
//! -old
//! +new
//! *** End Patch
//! ```
//!
//! Locating a chunk ([`patch::seek`]): its `@@ text` line, if any, is found first (from where the previous
//! chunk ended) and the search goes on after it; then the chunk's old lines (context and `-` lines)
//! are found from there, trying four levels in order over the whole remaining file before relaxing:
//! 1. [`patch::Level::Exact`] — the lines as they are;
//! 2. [`patch::Level::TrimEnd`] — ignoring trailing whitespace;
//! 3. [`patch::Level::Trim`] — ignoring leading and trailing whitespace;
//! 4. [`patch::Level::Punctuation`] — trimmed, with Unicode punctuation normalised to ASCII (‐‑‒–—―− → `-`,
//!    ‘’‚‛ → `'`, “”„‟ → `"`, no-break and other Unicode spaces → ` `).
//!
//! A chunk marked `*** End of File` tries the position at the end of the file first. A chunk whose old
//! lines end with an empty line that does not match is tried once more without it (the file's final
//! newline). A pure insertion (no old lines) goes after its `@@` line if it has one, else at the end
//! of the file. Fuzzy matches (levels 2-4) are named in the result.
//!
//! Decisions where the format is silent or Codex differs:
//! - **All or nothing**: the whole patch is parsed and every operation computed in memory (against the
//!   files as earlier operations of the same patch leave them) before anything is written; any
//!   refusal leaves every file as it was. If the writes themselves fail midway, the files already
//!   written are restored from the contents read before.
//! - Refusals (each an `is_error` result naming the line or the file, ending with "Nothing was
//!   changed"): a malformed patch (parse errors are input errors, wrapped in `<tool_use_error>`); an
//!   empty patch; a path outside the sandbox, or empty; `Add File` over an existing path (Codex
//!   overwrites it: here use `Update File`); `Delete` / `Update` of a file that does not exist or of a
//!   directory; `Move to` onto an existing file (Codex overwrites it); a file that is not UTF-8; a
//!   chunk whose context or old lines are not found; a path a permission deny rule covers (every path
//!   of the patch is checked against the session's deny rules, not only the first one the pipeline
//!   sees).
//! - Paths are relative to the cwd (absolute ones are accepted when inside the sandbox).
//! - Written files enter the read state (READ-4) like an Edit's, so a later Edit needs no Read; no
//!   read gate applies to apply_patch itself (the format carries its own context).
//! - Context lines keep the file's own text: a chunk found at a fuzzy level rewrites only the lines it
//!   removes and adds (Codex writes the patch's version of the context lines too).
//! - Updated files end with a newline, as Codex writes them.

mod patch;

use crate::context::ToolContext;
use crate::fs::{confine_write, remember_read};
use crate::tool::{PermissionSubject, ToolError, ToolOutput, TypedTool};
use patch::{apply_chunks, parse, FileOp, ADD, DELETE, UPDATE};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Env switch that adds apply_patch to the pool (PATCH-1: optional, off by default).
pub const ENV_ENABLE_APPLY_PATCH: &str = "PROBELAB_ENABLE_APPLY_PATCH";
/// The tool's name.
pub const APPLY_PATCH: &str = "apply_patch";

/// What every refusal ends with.
pub const NOTHING_CHANGED: &str = "Nothing was changed: a patch applies whole or not at all.";

/// The apply_patch tool.
#[derive(Debug, Default)]
pub struct ApplyPatch;

#[derive(Debug, Deserialize)]
pub struct Args {
    input: String,
}

/// One file's planned end state.
#[derive(Debug, Clone)]
struct Planned {
    /// Contents before the patch (`None`: did not exist).
    before: Option<String>,
    /// Contents after (`None`: removed).
    after: Option<String>,
}

fn refuse(msg: String) -> ToolError {
    ToolError::Runtime(format!("{msg}\n{NOTHING_CHANGED}"))
}

/// Plans every operation in memory; nothing is written.
fn plan(ctx: &ToolContext, ops: &[FileOp]) -> Result<(BTreeMap<PathBuf, Planned>, Vec<String>), ToolError> {
    let mut files: BTreeMap<PathBuf, Planned> = BTreeMap::new();
    let mut report = Vec::new();
    let load =
        |files: &mut BTreeMap<PathBuf, Planned>, p: &PathBuf, shown: &str| -> Result<Option<String>, ToolError> {
            if let Some(f) = files.get(p) {
                return Ok(f.after.clone());
            }
            let before = if p.is_dir() {
                return Err(refuse(format!("{shown} is a directory.")));
            } else if p.exists() {
                let bytes = std::fs::read(p).map_err(|e| refuse(format!("cannot read {shown}: {e}")))?;
                Some(String::from_utf8(bytes).map_err(|_| refuse(format!("{shown} is not UTF-8 text.")))?)
            } else {
                None
            };
            files.insert(p.clone(), Planned { before: before.clone(), after: before.clone() });
            Ok(before)
        };
    let path_of = |p: &str| -> Result<PathBuf, ToolError> {
        confine_write(ctx, p).map_err(|e| match e {
            ToolError::Validation(m) | ToolError::Runtime(m) => ToolError::Validation(format!("{m} {NOTHING_CHANGED}")),
        })
    };
    for op in ops {
        match op {
            FileOp::Add { path, contents } => {
                let p = path_of(path)?;
                if load(&mut files, &p, path)?.is_some() {
                    return Err(refuse(format!(
                        "Add File: {path} already exists. Use '*** Update File: {path}' to change it (or delete it first)."
                    )));
                }
                if let Some(f) = files.get_mut(&p) {
                    f.after = Some(contents.clone());
                }
                report.push(format!("A {path}"));
            }
            FileOp::Delete { path } => {
                let p = path_of(path)?;
                if load(&mut files, &p, path)?.is_none() {
                    return Err(refuse(format!("Delete File: {path} does not exist.")));
                }
                if let Some(f) = files.get_mut(&p) {
                    f.after = None;
                }
                report.push(format!("D {path}"));
            }
            FileOp::Update { path, move_to, chunks } => {
                let p = path_of(path)?;
                let Some(current) = load(&mut files, &p, path)? else {
                    return Err(refuse(format!("Update File: {path} does not exist.")));
                };
                let (new, fuzz) =
                    apply_chunks(&current, chunks, path).map_err(|e| refuse(format!("Update File: {e}")))?;
                let shown = match move_to {
                    Some(to) => {
                        let q = path_of(to)?;
                        if q != p {
                            if load(&mut files, &q, to)?.is_some() {
                                return Err(refuse(format!("Move to: {to} already exists.")));
                            }
                            if let Some(f) = files.get_mut(&p) {
                                f.after = None;
                            }
                        }
                        if let Some(f) = files.get_mut(&q) {
                            f.after = Some(new);
                        }
                        to.clone()
                    }
                    None => {
                        if let Some(f) = files.get_mut(&p) {
                            f.after = Some(new);
                        }
                        path.clone()
                    }
                };
                report.push(format!("M {shown}"));
                for f in fuzz {
                    report.push(format!(
                        "  chunk {} matched at level {} ({})",
                        f.chunk,
                        f.level as u8,
                        f.level.describe()
                    ));
                }
            }
        }
    }
    Ok((files, report))
}

/// Every path of the patch against the session's deny rules (the pipeline checked only the first).
fn check_denies(ctx: &ToolContext, files: &BTreeMap<PathBuf, Planned>) -> Result<(), ToolError> {
    let rules = ctx.session.rules();
    for p in files.keys() {
        if let crate::permissions::Decision::Deny(rule) =
            rules.decide("apply_patch", &PermissionSubject::WritePath(p.clone()), false, &ctx.anchors())
        {
            return Err(refuse(format!("Permission to write {} has been denied by the rule {rule}.", p.display())));
        }
    }
    Ok(())
}

/// Writes the plan; on a failure restores what was already written.
fn commit(ctx: &ToolContext, files: &BTreeMap<PathBuf, Planned>) -> Result<(), ToolError> {
    let mut done: Vec<(&PathBuf, &Planned)> = Vec::new();
    for (p, f) in files {
        if f.before == f.after {
            continue;
        }
        let r = match &f.after {
            Some(text) => p
                .parent()
                .map(std::fs::create_dir_all)
                .unwrap_or(Ok(()))
                .and_then(|_| crate::fs::write_no_follow(p, text.as_bytes())),
            None => std::fs::remove_file(p),
        };
        if let Err(e) = r {
            for (q, g) in done.iter().rev() {
                let _ = match &g.before {
                    Some(t) => crate::fs::write_no_follow(q, t.as_bytes()),
                    None => std::fs::remove_file(q),
                };
            }
            return Err(ToolError::Runtime(format!(
                "writing {} failed ({e}); the files already written were restored.\n{NOTHING_CHANGED}",
                p.display()
            )));
        }
        done.push((p, f));
    }
    for (p, f) in &done {
        match &f.after {
            Some(text) => remember_read(ctx, p, text.as_bytes().to_vec(), false),
            None => {
                if let Ok(mut s) = ctx.read_state.lock() {
                    s.remove(*p);
                }
            }
        }
    }
    Ok(())
}

/// The first path a patch names (what the pipeline's permission rules see).
fn first_path(input: &Value) -> Option<String> {
    let text = input.get("input")?.as_str()?;
    text.lines().find_map(|l| {
        let t = l.trim();
        [ADD, DELETE, UPDATE].iter().find_map(|m| t.strip_prefix(m)).map(|p| p.trim().to_string())
    })
}

impl TypedTool for ApplyPatch {
    const NAME: &'static str = APPLY_PATCH;
    const DESCRIPTION: &'static str = "Edits files with a patch in this format (no line numbers; chunks are found by their context):\n\n*** Begin Patch\n*** Add File: path/new.txt\n+first line\n*** Delete File: path/old.txt\n*** Update File: path/app.py\n*** Move to: path/main.py\n@@ def greet():\n-print(\"Hi\")\n+print(\"Hello\")\n*** End Patch\n\nUsage:\n- Paths are relative to the working directory.\n- Every line of an added file starts with +. In an update chunk, lines start with ' ' (context, 3 lines around each change by default), - (removed) or + (added); '@@ text' names a line (a class, a function) to search after; '*** End of File' pins a chunk to the end of the file.\n- The patch applies whole or not at all: if any part cannot be applied, nothing is changed.";
    type Args = Args;

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "input": {"type": "string", "description": "The entire patch, from '*** Begin Patch' to '*** End Patch'"}
            },
            "required": ["input"],
            "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"
        })
    }

    fn is_destructive(&self, input: &Value) -> bool {
        input.get("input").and_then(Value::as_str).is_some_and(|t| t.contains(DELETE.trim_end()))
    }

    fn permission_subject(&self, input: &Value, ctx: &ToolContext) -> PermissionSubject {
        match first_path(input) {
            Some(p) => PermissionSubject::WritePath(crate::fs::absolute(ctx, &p)),
            None => PermissionSubject::None,
        }
    }

    async fn call(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let ops = parse(&args.input).map_err(|e| ToolError::Validation(format!("{e}. {NOTHING_CHANGED}")))?;
        if ops.is_empty() {
            return Err(ToolError::Validation(format!("The patch has no file operation. {NOTHING_CHANGED}")));
        }
        let (files, report) = plan(ctx, &ops)?;
        check_denies(ctx, &files)?;
        commit(ctx, &files)?;
        Ok(ToolOutput::Text(format!("Success. Updated the following files:\n{}", report.join("\n"))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> (tempfile::TempDir, ToolContext) {
        ToolContext::for_test()
    }

    fn run(c: &ToolContext, patch: &str) -> Result<ToolOutput, ToolError> {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap_or_else(|e| panic!("{e}"));
        rt.block_on(crate::tool::Tool::call(&ApplyPatch, json!({ "input": patch }), c))
    }

    #[test]
    fn add_delete_update_move_apply_together() {
        let (_d, c) = ctx();
        std::fs::write(c.cwd.join("d.txt"), "bye\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(c.cwd.join("u.txt"), "a\nb\n").unwrap_or_else(|e| panic!("{e}"));
        let out = run(
            &c,
            "*** Begin Patch\n*** Add File: sub/n.txt\n+new\n*** Delete File: d.txt\n*** Update File: u.txt\n*** Move to: m.txt\n@@\n a\n-b\n+B\n*** End Patch",
        );
        assert_eq!(
            out,
            Ok(ToolOutput::Text("Success. Updated the following files:\nA sub/n.txt\nD d.txt\nM m.txt".into()))
        );
        assert_eq!(std::fs::read_to_string(c.cwd.join("sub/n.txt")).ok().as_deref(), Some("new\n"));
        assert!(!c.cwd.join("d.txt").exists() && !c.cwd.join("u.txt").exists());
        assert_eq!(std::fs::read_to_string(c.cwd.join("m.txt")).ok().as_deref(), Some("a\nB\n"));
    }

    #[test]
    fn every_refusal_changes_nothing() {
        let (_d, c) = ctx();
        std::fs::write(c.cwd.join("keep.txt"), "k\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(c.cwd.join("bin"), [0xff, 0xfe]).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(c.cwd.join("dir")).unwrap_or_else(|e| panic!("{e}"));
        // each starts with a valid Add, so a partial apply would leave made.txt behind
        let refusals = [
            ("*** Add File: keep.txt\n+x", "Add File: keep.txt already exists."),
            ("*** Delete File: nope.txt", "Delete File: nope.txt does not exist."),
            ("*** Update File: nope.txt\n@@\n-a\n+b", "Update File: nope.txt does not exist."),
            ("*** Update File: keep.txt\n@@\n-zzz\n+b", "chunk 1: these lines are not in keep.txt"),
            (
                "*** Update File: keep.txt\n@@ nowhere\n-k\n+b",
                "chunk 1: the context line '@@ nowhere' is not in keep.txt",
            ),
            ("*** Update File: keep.txt\n*** Move to: made.txt\n@@\n-k\n+b", "Move to: made.txt already exists."),
            ("*** Update File: bin\n@@\n-a\n+b", "bin is not UTF-8 text."),
            ("*** Delete File: dir", "dir is a directory."),
            ("*** Add File: ../../outside.txt\n+x", "is outside the sandbox"),
        ];
        for (ops, want) in refusals {
            let patch = format!("*** Begin Patch\n*** Add File: made.txt\n+m\n{ops}\n*** End Patch");
            let err = run(&c, &patch).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(want) && err.contains(NOTHING_CHANGED), "{ops:?}: {err}");
            assert!(!c.cwd.join("made.txt").exists(), "{ops:?} left a change");
            assert_eq!(std::fs::read_to_string(c.cwd.join("keep.txt")).ok().as_deref(), Some("k\n"));
        }
        assert!(matches!(run(&c, "*** Begin Patch\n*** End Patch"), Err(ToolError::Validation(_))));
        assert!(matches!(run(&c, "no patch"), Err(ToolError::Validation(_))));
    }

    #[test]
    fn later_operations_see_earlier_ones() {
        let (_d, c) = ctx();
        let out = run(
            &c,
            "*** Begin Patch\n*** Add File: a.txt\n+one\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch",
        );
        assert!(out.is_ok(), "{out:?}");
        assert_eq!(std::fs::read_to_string(c.cwd.join("a.txt")).ok().as_deref(), Some("two\n"));
    }
}
