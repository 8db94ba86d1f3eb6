//! Glob (GLOB-1): files matching a glob pattern under a path (default the cwd), found with the search
//! engine's `--files` walk as Claude Code 2.1.235 runs its rg — `--no-ignore --hidden`, no VCS dirs left
//! out, so ignored files and `.git/…` are listed (`probes/glob/basic.toml`) — sorted by modification
//! time (oldest first, then path), at most [`MAX_FILES`] of them.

use crate::context::ToolContext;
use crate::profile::Switch;
use crate::tool::{PermissionSubject, ToolError, ToolOutput, TypedTool};
use probelab_search::args::{Mode, RgArgs};
use probelab_search::{run, Io};
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::Path;

/// A Claude Code switch that is on unless set to something else than `1` / `true` / `yes` / `on`
/// (the reference's default for both Glob switches is "true").
fn env_on(ctx: &ToolContext, name: &str) -> bool {
    ctx.env.get(name).is_none_or(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
}

/// Files listed at most; more are cut with a note saying how many were left out (the reference's Glob
/// budget, GLOB-1: `probes/glob/budget.toml`, 100 listed whole and 101 cut to 100 on every release).
pub const MAX_FILES: usize = 100;

/// The note after a cut list: the reference's words (`probes/glob/budget.toml`, measured on 2.1.235 and
/// 2.1.333).
fn cut_note(shown: usize, all: usize) -> String {
    format!(
        "(Showing {shown} of {all} matching files; {} more are not listed. Narrow the pattern or path to see the rest.)",
        all - shown
    )
}

/// From 2.1.251 Glob's pattern is matched relative to its `path`: `sub/**` with path `tree` lists
/// `tree/sub/…` (it found nothing before; measured by `harness/tests/fidelity.rs` and
/// `probes/glob/pattern-from-path.toml` on 2.1.250 and 2.1.251, whose rg runs in the searched directory).
pub const PATTERN_FROM_PATH: Switch =
    Switch { name: "Glob matches its pattern relative to its path", since: "2.1.251", probe: "glob.pattern-from-path" };

/// The Glob tool.
#[derive(Debug, Default)]
pub struct Glob;

#[derive(Debug, Deserialize)]
pub struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

impl TypedTool for Glob {
    const NAME: &'static str = "Glob";
    const DESCRIPTION: &'static str = "- Fast file pattern matching tool that works with any codebase size\n- Supports glob patterns like \"**/*.js\" or \"src/**/*.ts\"\n- Returns matching file paths sorted by modification time\n- Use this tool when you need to find files by name patterns";
    const READ_ONLY: bool = true;
    const CONCURRENCY_SAFE: bool = true;
    type Args = Args;

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The glob pattern to match files against"},
                "path": {"type": "string", "description": "The directory to search in. If not specified, the current working directory will be used."}
            },
            "required": ["pattern"],
            "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"
        })
    }

    fn permission_subject(&self, input: &Value, ctx: &ToolContext) -> PermissionSubject {
        crate::fs::search_root_subject(input, ctx)
    }

    fn denied(&self, subject: &PermissionSubject, _rule: &str, _ctx: &ToolContext) -> Option<ToolError> {
        crate::fs::search_denied(subject)
    }

    async fn call(&self, a: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        {
            let dir = crate::fs::search_root(ctx, a.path.as_deref())?;
            if let Some(given) = a.path.as_deref() {
                match std::fs::metadata(&dir) {
                    Err(_) => return Err(crate::fs::missing_search_path_error(ctx, "Directory", given, &dir)),
                    Ok(m) if !m.is_dir() => {
                        return Err(ToolError::Validation(format!("Path is not a directory: {given}")))
                    }
                    Ok(_) => {}
                }
            }
            // as Claude Code 2.1.235 runs its rg for Glob: `--files --glob <pattern> --no-ignore --hidden`
            // (`CLAUDE_CODE_GLOB_NO_IGNORE` / `CLAUDE_CODE_GLOB_HIDDEN`, default true, turn either off),
            // and no `!.git`: ignored files and the VCS dirs are listed (`probes/glob/basic.toml`)
            let no_ignore = env_on(ctx, "CLAUDE_CODE_GLOB_NO_IGNORE");
            let hidden = env_on(ctx, "CLAUDE_CODE_GLOB_HIDDEN");
            let globs = vec![a.pattern.clone()];
            // from the session's working directory, as Claude Code 2.1.235 runs its rg: a pattern with a `/`
            // is matched against paths relative to it (`sub/**` with path `tree` finds nothing; measured by
            // harness/tests/fidelity.rs)
            // walked from the path as given, like Grep's (the resolved one only had to lie in the sandbox)
            let walk = a.path.as_deref().map(|p| crate::fs::absolute(ctx, p)).unwrap_or_else(|| dir.clone());
            let args = RgArgs { mode: Mode::Files, hidden, no_ignore, globs, paths: vec![walk], ..RgArgs::default() };
            // from 2.1.251 the reference runs its rg in the searched directory: a pattern with a `/` is
            // matched against paths relative to it ([`PATTERN_FROM_PATH`])
            let cwd = if ctx.profile().has(&PATTERN_FROM_PATH) { dir.clone() } else { ctx.working_dir() };
            // files a deny rule covers are not listed
            let skip = crate::fs::search_skip(ctx, "Glob");
            let (code, out, err) = tokio::task::spawn_blocking(move || {
                let (mut out, mut err) = (Vec::new(), Vec::new());
                let code = run(
                    &args,
                    &mut Io {
                        stdout: &mut out,
                        stderr: &mut err,
                        stdout_is_terminal: false,
                        cwd,
                        cancel: None,
                        skip,
                        max_output: None,
                    },
                );
                (code, out, err)
            })
            .await
            .map_err(|e| ToolError::Runtime(e.to_string()))?;
            if code == probelab_search::EXIT_ERROR && out.is_empty() {
                return Err(ToolError::Runtime(format!("Glob failed: {}", String::from_utf8_lossy(&err).trim_end())));
            }
            let text = String::from_utf8_lossy(&out).into_owned();
            // shown relative to the session's working directory (WT-1: a worktree's, after EnterWorktree)
            let wd = ctx.working_dir();
            let lines: Vec<&str> = text.lines().collect();
            let mut files: Vec<(Option<std::time::SystemTime>, String)> = crate::fs::mtimes(&lines)
                .into_iter()
                .zip(&lines)
                .map(|(t, l)| {
                    let rel = Path::new(l)
                        .strip_prefix(&wd)
                        .map(|r| r.display().to_string())
                        .unwrap_or_else(|_| l.to_string());
                    (t, rel)
                })
                .collect();
            files.sort();
            if files.is_empty() {
                return Ok(ToolOutput::Text("No files found".into()));
            }
            let all = files.len();
            let mut shown: Vec<String> = files.into_iter().take(MAX_FILES).map(|(_, p)| p).collect();
            if all > MAX_FILES {
                shown.push(cut_note(MAX_FILES, all));
            }
            Ok(ToolOutput::Text(shown.join("\n")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_is_relative_to_the_path_from_2_1_251() {
        for (version, found) in [("2.1.235", false), ("2.1.250", false), ("2.1.251", true), ("2.1.333", true)] {
            let (_d, c) = ToolContext::for_test();
            let c = c.with_profile(crate::profile::Profile::at(version).unwrap_or_else(|e| panic!("{e}")));
            std::fs::create_dir_all(c.cwd.join("tree/sub")).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(c.cwd.join("tree/sub/c.txt"), "c\n").unwrap_or_else(|e| panic!("{e}"));
            let rt =
                tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
            let input = json!({"pattern": "sub/**", "path": c.cwd.join("tree")});
            let out =
                rt.block_on(crate::tool::Tool::call(&Glob, input, &c)).unwrap_or_else(|e| panic!("{version}: {e}"));
            let want = if found { "tree/sub/c.txt" } else { "No files found" };
            assert_eq!(out, ToolOutput::Text(want.into()), "{version}");
        }
    }
}
