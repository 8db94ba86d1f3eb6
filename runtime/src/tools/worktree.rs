//! EnterWorktree / ExitWorktree (WT-1) on real `git worktree`.
//!
//! Measured on Claude Code 2.1.235 (`probes/claude-code/worktree-*.toml`) and copied here: the schemas
//! and descriptions; a `name` makes `<repo>/.claude/worktrees/<slug>` on a new branch `worktree-<slug>`
//! from HEAD (a `/` in the name becomes `+` in both; an existing one is resumed as-is); `path` enters a
//! worktree `git worktree list` knows (not the main working tree); the Bash cwd moves into the worktree
//! and back on exit, and with it the session's working directory ([`ToolContext::working_dir`]: Grep and
//! Glob without `path`, relative paths of every file tool, paths shown relative) and the project root
//! the permission rules' `/…` paths are anchored at ([`ToolContext::project_root`]; a Bash `cd` moves
//! the working directory only), as measured by `probes/claude-code/worktree-cwd.toml` and checked on
//! both subjects by `probes/worktree/search-cwd.toml`; `keep` leaves directory and branch, `remove` deletes both, refusing while the
//! worktree has uncommitted files (`git status --porcelain` lines) or commits since it was entered,
//! unless `discard_changes: true`; only a worktree this session created (or resumed by name) is
//! removed. The texts are the reference's, byte for byte: slug and exclusivity issues as its
//! `InputValidationError: [ … ]`, the no-op and refusals wrapped in `<tool_use_error>`, git-side
//! failures plain.
//!
//! Decisions and deliberate differences:
//! - The reference decides whether the project is a git repository when it starts: a repository made
//!   by a first Bash turn is not seen (measured). Probes therefore bring the repository in the fixture
//!   (`.git` files written as base64). The built-in runtime asks git at each call.
//! - Without `name` and `path` the reference picks three random words; here the name is `auto-<n>`
//!   (deterministic runs).
//! - The base is always the local HEAD (the reference's default `worktree.baseRef: fresh` branches from
//!   `origin/<default>`, which a sandbox has none of; it fell back to HEAD in the measured runs).
//! - A worktree outside the project directory is refused (the reference enters it): the built-in Bash
//!   resets a cwd that leaves the project, so the session could not stay there. Paths outside the
//!   sandbox are refused like every path ([`crate::fs::confine`]).
//! - WorktreeCreate / WorktreeRemove hooks (non-git VCS) are not supported.

use crate::context::ToolContext;
use crate::profile::Switch;
use crate::tool::{ToolError, ToolOutput, TypedTool};
use crate::validation::{custom, custom_added, issues_error};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Longest worktree name, in characters (WT-1's slug validation, the reference's limit).
pub const WORKTREE_NAME_MAX_CHARS: usize = 64;
/// Where named worktrees go, under the repository's top level.
pub const WORKTREES_DIR: &str = ".claude/worktrees";
/// Prefix of a named worktree's branch.
pub const BRANCH_PREFIX: &str = "worktree-";

/// The worktree the session is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Active {
    /// The worktree's directory (canonical).
    pub path: PathBuf,
    /// Its branch as reported.
    pub branch: String,
    /// Created (or resumed by name) by this session: ExitWorktree may remove it.
    pub owned: bool,
    /// HEAD when entered: commits after it are "commits on the branch".
    pub base: String,
    /// The shell's cwd before the first EnterWorktree (restored on exit).
    pub original: PathBuf,
    /// The repository's top level.
    pub repo: PathBuf,
}

/// Whether the session's cwd was inside a git repository when the session started (a `.git` in it or
/// an ancestor). Like the reference, EnterWorktree creates worktrees only then: measured on 2.1.235, a
/// repository a first Bash turn makes (`git init`, a commit) is not seen — the call is refused with
/// `Cannot create a worktree: not in a git repository …` (`probes/claude-code/worktree-repo-at-start.toml`).
/// Sub-agents inherit their session's; `None` (a session not made by `builtin::start`): git decides at
/// the call.
#[derive(Debug, Default, Clone, Copy)]
pub struct RepoAtStart(pub Option<bool>);

impl RepoAtStart {
    /// Looks for `.git` in `cwd` and its ancestors.
    pub fn probe(cwd: &Path) -> RepoAtStart {
        RepoAtStart(Some(cwd.ancestors().any(|d| d.join(".git").exists())))
    }
}

/// Worktrees this session created.
#[derive(Debug, Default)]
pub struct Worktrees {
    active: Mutex<Option<Active>>,
    auto: std::sync::atomic::AtomicU64,
}

impl Worktrees {
    /// The worktree the session is in.
    pub fn active(&self) -> Option<Active> {
        self.active.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Enters (or leaves) a worktree: the session's project root follows it (WT-1).
    fn set_active(&self, session: &crate::session::Session, a: Option<Active>) {
        session.set_active_root(a.as_ref().map(|a| a.path.clone()));
        *self.active.lock().unwrap_or_else(|p| p.into_inner()) = a;
    }
}

/// WT-1's slug rule, in the reference's words: `None` when valid.
pub fn name_issue(name: &str) -> Option<String> {
    let n = name.chars().count();
    if n > WORKTREE_NAME_MAX_CHARS {
        return Some(format!("Invalid worktree name: must be {WORKTREE_NAME_MAX_CHARS} characters or fewer (got {n})"));
    }
    let ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !name.split('/').all(ok) {
        return Some(format!("Invalid worktree name {}: each \"/\"-separated segment must be non-empty and contain only letters, digits, dots, underscores, and dashes", json!(name)));
    }
    if name.split('/').any(|s| s == "." || s == "..") {
        return Some(format!("Invalid worktree name {}: must not contain \".\" or \"..\" path segments", json!(name)));
    }
    None
}

fn name_error(message: &str) -> ToolError {
    ToolError::Validation(issues_error(&[custom_added(message, json!(["name"]))]))
}

/// Why a git command failed: the text the model gets after the tool's own words.
#[derive(Debug, thiserror::Error)]
enum GitError {
    /// git did not start.
    #[error("cannot run git: {0}")]
    Spawn(std::io::Error),
    /// git failed: its stderr.
    #[error("{0}")]
    Failed(String),
}

async fn git(ctx: &ToolContext, dir: &Path, args: &[&str]) -> Result<String, GitError> {
    let out = tokio::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("HOME", &ctx.home)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(GitError::Spawn)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
    } else {
        Err(GitError::Failed(String::from_utf8_lossy(&out.stderr).trim_end().to_string()))
    }
}

fn set_shell_cwd(ctx: &ToolContext, dir: &Path) {
    *ctx.shell.cwd.lock().unwrap_or_else(|p| p.into_inner()) =
        if dir == ctx.cwd { None } else { Some(dir.to_path_buf()) };
}

/// `git worktree list --porcelain`: (path, branch) per worktree, the main one first.
async fn worktree_list(ctx: &ToolContext, repo: &Path) -> Result<Vec<(PathBuf, String)>, GitError> {
    let text = git(ctx, repo, &["worktree", "list", "--porcelain"]).await?;
    let mut out: Vec<(PathBuf, String)> = Vec::new();
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            out.push((PathBuf::from(p), "HEAD".into()));
        } else if let (Some(b), Some(last)) = (line.strip_prefix("branch "), out.last_mut()) {
            last.1 = b.strip_prefix("refs/heads/").unwrap_or(b).to_string();
        }
    }
    Ok(out)
}

const SUCCESS_TAIL: &str =
    "The session is now working in the worktree. Use ExitWorktree to leave mid-session, or exit the session to be prompted.";

const ENTER_DESCRIPTION: &str = "Use this tool ONLY when explicitly instructed to work in a worktree \u{2014} either by the user directly, or by project instructions (CLAUDE.md / memory). This tool creates an isolated git worktree and switches the current session into it.\n\n## When to Use\n\n- The user explicitly says \"worktree\" (e.g., \"start a worktree\", \"work in a worktree\", \"create a worktree\", \"use a worktree\")\n- CLAUDE.md or memory instructions direct you to work in a worktree for the current task\n\n## When NOT to Use\n\n- The user asks to create a branch, switch branches, or work on a different branch \u{2014} use git commands instead\n- The user asks to fix a bug or work on a feature \u{2014} use normal git workflow unless worktrees are explicitly requested by the user or project instructions\n- Never use this tool unless \"worktree\" is explicitly mentioned by the user or in CLAUDE.md / memory instructions\n\n## Requirements\n\n- Must be in a git repository, OR have WorktreeCreate/WorktreeRemove hooks configured in settings.json\n- Must not already be in a worktree session when creating a new worktree (`name`); switching into another existing worktree via `path` is allowed\n\n## Behavior\n\n- In a git repository: creates a new git worktree inside `.claude/worktrees/` on a new branch. The base ref is governed by the `worktree.baseRef` setting: `fresh` (default) branches from origin/<default-branch>; `head` branches from your current local HEAD\n- Outside a git repository: delegates to WorktreeCreate/WorktreeRemove hooks for VCS-agnostic isolation\n- Switches the session's working directory to the new worktree\n- Use ExitWorktree to leave the worktree mid-session (keep or remove). On session exit, if still in the worktree, the user will be prompted to keep or remove it\n\n## Entering an existing worktree\n\nPass `path` instead of `name` to switch the session into a worktree that already exists (e.g., one you just created with `git worktree add`). On first entry from the launch directory, the path must appear in `git worktree list` for the repository that owns it \u{2014} the current repository or, in a multi-repo workspace, a repository nested inside it; paths registered by neither are rejected. ExitWorktree will not remove a worktree entered this way; use `action: \"keep\"` to return to the original directory.\n\nSwitching with `path` also works when the session is already in a worktree (the previous worktree is left on disk, untouched, and only the new one is tracked for exit-time cleanup), and from agents whose working directory was pinned at launch (subagent isolation or explicit cwd). In both cases the target must be a worktree under `.claude/worktrees/` of the same repository, and from a pinned agent the switch only affects this agent, not the parent session. After a further switch, previously-visited worktrees are no longer writable \u{2014} re-issue EnterWorktree with `path` to return to one.\n\n## Parameters\n\n- `name` (optional): A name for a new worktree. If neither `name` nor `path` is provided, a random name is generated.\n- `path` (optional): Path to an existing worktree to enter instead of creating one \u{2014} of the current repository, or (on first entry from the launch directory) of a repository nested inside it. Mutually exclusive with `name`.\n";

const EXIT_DESCRIPTION: &str = "Exit a worktree session created by EnterWorktree and return the session to the original working directory.\n\n## Scope\n\nThis tool ONLY operates on worktrees created by EnterWorktree in this session. It will NOT touch:\n- Worktrees you created manually with `git worktree add`\n- Worktrees from a previous session (even if created by EnterWorktree then)\n- The directory you're in if EnterWorktree was never called\n\nIf called outside an EnterWorktree session, the tool is a **no-op**: it reports that no worktree session is active and takes no action. Filesystem state is unchanged.\n\n## When to Use\n\n- The user explicitly asks to \"exit the worktree\", \"leave the worktree\", \"go back\", or otherwise end the worktree session\n- Do NOT call this proactively \u{2014} only when the user asks\n\n## Parameters\n\n- `action` (required): `\"keep\"` or `\"remove\"`\n  - `\"keep\"` \u{2014} leave the worktree directory and branch intact on disk. Use this if the user wants to come back to the work later, or if there are changes to preserve.\n  - `\"remove\"` \u{2014} delete the worktree directory and its branch. Use this for a clean exit when the work is done or abandoned.\n- `discard_changes` (optional, default false): only meaningful with `action: \"remove\"`. If the worktree has uncommitted files or commits not on the original branch, the tool will REFUSE to remove it unless this is set to `true`. If the tool returns an error listing changes, confirm with the user before re-invoking with `discard_changes: true`.\n\n## Behavior\n\n- Restores the session's working directory to where it was before EnterWorktree\n- Clears CWD-dependent caches (system prompt sections, memory files, plans directory) so the session state reflects the original directory\n- If a tmux session was attached to the worktree: killed on `remove`, left running on `keep` (its name is returned so the user can reattach)\n- Once exited, EnterWorktree can be called again to create a fresh worktree\n";

/// EnterWorktree.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnterWorktree;

impl EnterWorktree {
    async fn run(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let name = input.get("name").and_then(Value::as_str);
        let path = input.get("path").and_then(Value::as_str);
        if name.is_some() && path.is_some() {
            return Err(ToolError::Validation(issues_error(&[custom(
                json!([]),
                "Provide at most one of `name` or `path`, not both.",
            )])));
        }
        if let Some(m) = name.and_then(name_issue) {
            return Err(name_error(&m));
        }
        let state = ctx.session.state::<crate::tools::worktree::Worktrees>();
        let active = state.active();
        if path.is_none() && active.is_some() {
            return Err(ToolError::Validation("Already in a worktree session. Pass `path` to switch into another existing worktree, or use ExitWorktree to leave this one before creating a new worktree.".into()));
        }
        let repo = match &active {
            Some(a) => Ok(a.repo.clone()),
            None => git(ctx, &ctx.cwd, &["rev-parse", "--show-toplevel"]).await.map(PathBuf::from),
        };
        let original = active.as_ref().map(|a| a.original.clone()).unwrap_or_else(|| ctx.working_dir());
        let Some(path) = path else {
            let repo = repo.ok().filter(|_| ctx.session.state::<RepoAtStart>().0 != Some(false));
            let repo = repo.ok_or_else(|| ToolError::Runtime("Cannot create a worktree: not in a git repository and no WorktreeCreate hooks are configured. Configure WorktreeCreate/WorktreeRemove hooks in settings.json to use worktree isolation with other VCS systems.".into()))?;
            let name = match name {
                Some(n) => n.to_string(),
                None => format!("auto-{}", state.auto.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1),
            };
            return create(ctx, &repo, &name, original).await;
        };
        let repo = repo.map_err(|_| {
            ToolError::Runtime(
                "Cannot enter an existing worktree: the current directory is not in a git repository.".into(),
            )
        })?;
        let abs = crate::fs::confine(ctx, path)?;
        let shown = abs.display().to_string();
        let dir = abs.canonicalize().map_err(|_| {
            let call = if ctx.profile().has(&MISSING_PATH_REALPATH) { "realpath" } else { "lstat" };
            ToolError::Runtime(format!(
                "Cannot enter worktree: {shown}: ENOENT: no such file or directory, {call} '{shown}'"
            ))
        })?;
        let list =
            worktree_list(ctx, &repo).await.map_err(|e| ToolError::Runtime(format!("Cannot enter worktree: {e}")))?;
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let found = list.iter().position(|(p, _)| canon(p) == dir);
        let repo_shown = repo.display();
        let branch = match found {
            Some(0) => {
                return Err(ToolError::Runtime(format!(
                    "Cannot enter worktree: {} is the main working tree, not a linked worktree.",
                    dir.display()
                )))
            }
            Some(i) => list[i].1.clone(),
            None => {
                return Err(ToolError::Runtime(format!("Cannot enter worktree: {} is not a registered worktree of {repo_shown}. Run 'git -C {repo_shown} worktree list' to see registered worktrees.", dir.display())))
            }
        };
        if !dir.starts_with(&ctx.cwd) {
            return Err(ToolError::Runtime(format!(
                "Cannot enter worktree: {} is outside the project directory {}; the built-in runtime keeps the session's shell inside it.",
                dir.display(),
                ctx.cwd.display()
            )));
        }
        // only a removal reads the base, and a worktree entered by path is never removed (below); one on
        // an unborn branch has no HEAD, hence no base
        let base = git(ctx, &dir, &["rev-parse", "HEAD"]).await.unwrap_or_default();
        // a worktree entered by path is never this session's to remove, even one it made (measured)
        let owned = false;
        let text = format!(
            "Entered worktree at {} on branch {}. {SUCCESS_TAIL}",
            quoted(ctx, &dir.display().to_string()),
            quoted(ctx, &branch)
        );
        set_shell_cwd(ctx, &dir);
        state.set_active(
            &ctx.session,
            Some(Active { path: dir.clone(), branch: branch.clone(), owned, base, original, repo }),
        );
        Ok(ToolOutput::Data { text, data: json!({"worktreePath": dir, "worktreeBranch": branch}) })
    }
}

async fn create(ctx: &ToolContext, repo: &Path, name: &str, original: PathBuf) -> Result<ToolOutput, ToolError> {
    let slug = name.replace('/', "+");
    let branch = format!("{BRANCH_PREFIX}{slug}");
    let dir = repo.join(WORKTREES_DIR).join(&slug);
    let dir_s = dir.to_string_lossy().to_string();
    crate::fs::confine(ctx, &dir_s)?;
    fn fail(e: impl std::fmt::Display) -> ToolError {
        ToolError::Runtime(format!("Cannot create a worktree: {e}"))
    }
    let list = worktree_list(ctx, repo).await.map_err(fail)?;
    let resumed = dir.is_dir() && list.iter().any(|(p, _)| p.canonicalize().ok() == dir.canonicalize().ok());
    if !resumed {
        let made = git(ctx, repo, &["worktree", "add", "-q", "-b", &branch, &dir_s, "HEAD"]).await;
        if made.is_err() {
            // the branch survives a kept worktree whose directory was removed: check it out again
            git(ctx, repo, &["worktree", "add", "-q", &dir_s, &branch]).await.map_err(fail)?;
        }
    }
    let dir = dir.canonicalize().map_err(fail)?;
    // the base is what a removal counts commits from: without it, commits made here would be removed
    // uncounted
    let base = git(ctx, &dir, &["rev-parse", "HEAD"]).await.map_err(fail)?;
    let state = ctx.session.state::<crate::tools::worktree::Worktrees>();
    let (at, on) = (quoted(ctx, &dir.display().to_string()), quoted(ctx, &branch));
    let text = if resumed {
        format!("Resumed worktree at {at} on branch {on}. A worktree with this name already existed and was resumed as-is \u{2014} it may carry an earlier session\u{2019}s commits. Pass a different name if you wanted a fresh worktree. {SUCCESS_TAIL}")
    } else {
        format!("Created worktree at {at} on branch {on}. {SUCCESS_TAIL}")
    };
    set_shell_cwd(ctx, &dir);
    state.set_active(
        &ctx.session,
        Some(Active {
            path: dir.clone(),
            branch: branch.clone(),
            owned: true,
            base,
            original,
            repo: repo.to_path_buf(),
        }),
    );
    Ok(ToolOutput::Data { text, data: json!({"worktreePath": dir, "worktreeBranch": branch}) })
}

impl TypedTool for EnterWorktree {
    const NAME: &'static str = "EnterWorktree";
    const DESCRIPTION: &'static str = ENTER_DESCRIPTION;
    type Args = Value;

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "name": {"description": "Optional name for a new worktree. Each \"/\"-separated segment may contain only letters, digits, dots, underscores, and dashes; max 64 chars total. A random name is generated if not provided. Mutually exclusive with `path`.", "type": "string"},
                "path": {"description": "Path to an existing worktree to switch into instead of creating a new one. Must appear in `git worktree list` for the current repo \u{2014} or, on first entry from the launch directory, for a repo nested inside it (multi-repo workspace). Mutually exclusive with `name`.", "type": "string"}
            },
            "additionalProperties": false
        })
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.run(input, ctx).await
    }
}

/// From Claude Code 2.1.302 the worktree tools' texts put paths and branch names in curly quotes
/// (`Created worktree at “…/w” on branch “worktree-w”.`).
pub const CURLY_QUOTED_NAMES: Switch =
    Switch { name: "worktree: paths and branches in curly quotes", since: "2.1.302", probe: "worktree.lifecycle" };

/// From Claude Code 2.1.304 EnterWorktree names `realpath` (not `lstat`) in the error for a path that
/// does not exist.
pub const MISSING_PATH_REALPATH: Switch =
    Switch { name: "worktree: a missing path's error names realpath", since: "2.1.304", probe: "worktree.lifecycle" };

/// A path or branch name in a text, as the session's release shows it ([`CURLY_QUOTED_NAMES`]).
fn quoted(ctx: &ToolContext, name: &str) -> String {
    if ctx.profile().has(&CURLY_QUOTED_NAMES) {
        format!("\u{201c}{name}\u{201d}")
    } else {
        name.to_string()
    }
}

fn plural(n: u64, one: &str) -> String {
    format!("{n} {one}{}", if n == 1 { "" } else { "s" })
}

/// ExitWorktree.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExitWorktree;

impl ExitWorktree {
    async fn run(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let remove = input.get("action").and_then(Value::as_str) == Some("remove");
        let discard = input.get("discard_changes").and_then(Value::as_bool) == Some(true);
        let state = ctx.session.state::<crate::tools::worktree::Worktrees>();
        let Some(a) = state.active() else {
            return Err(ToolError::Validation("No-op: there is no active EnterWorktree session to exit. This tool only operates on worktrees created by EnterWorktree in the current session \u{2014} it will not touch worktrees created manually or in a previous session. No filesystem changes were made.".into()));
        };
        let wt_path = a.path.display().to_string();
        let (wt, orig) = (quoted(ctx, &wt_path), quoted(ctx, &a.original.display().to_string()));
        if !remove {
            state.set_active(&ctx.session, None);
            set_shell_cwd(ctx, &a.original);
            return Ok(ToolOutput::Text(format!(
                "Exited worktree. Your work is preserved at {wt} on branch {}. Session is now back in {orig}.",
                quoted(ctx, &a.branch)
            )));
        }
        if !a.owned {
            return Err(ToolError::Validation(format!("This session is not the owner of the worktree at {wt} \u{2014} it either entered a pre-existing worktree via EnterWorktree({{path}}) or resumed into a checkout whose liveness lock another running Claude Code session still holds \u{2014} so this tool will not remove it. Use action: \"keep\" to return to {orig}. If no other session is using it, remove it yourself with `git worktree remove`; while a live session's lock is present, git will refuse and name the owner.")));
        }
        let status =
            git(ctx, &a.path, &["status", "--porcelain"]).await.map_err(|e| ToolError::Runtime(e.to_string()))?;
        let files = status.lines().filter(|l| !l.is_empty()).count() as u64;
        let range = format!("{}..HEAD", a.base);
        // commits since the base that cannot be counted (the base or a commit after it unreadable: a
        // rewritten or damaged history) are never taken for none: without discard_changes the removal is
        // refused, saying why (a decision of ours, the reference's text for this case is not measured)
        let commits = match a.base.is_empty() {
            true => Ok(0),
            false => match git(ctx, &a.path, &["rev-list", "--count", &range]).await {
                Ok(s) => {
                    s.trim().parse::<u64>().map_err(|e| format!("git rev-list --count {range} printed {s:?}: {e}"))
                }
                Err(e) => Err(format!("git rev-list --count {range}: {e}")),
            },
        };
        let commits = match commits {
            Ok(n) => n,
            Err(why) if !discard => {
                return Err(ToolError::Validation(format!("Cannot tell whether the worktree at {wt} has commits that would be lost ({why}). Removing may discard work permanently. Confirm with the user, then re-invoke with discard_changes: true \u{2014} or use action: \"keep\" to preserve the worktree.")));
            }
            Err(_) => 0,
        };
        if (files > 0 || commits > 0) && !discard {
            let mut what = Vec::new();
            if files > 0 {
                what.push(plural(files, "uncommitted file"));
            }
            if commits > 0 {
                what.push(format!("{} on {}", plural(commits, "commit"), quoted(ctx, &a.branch)));
            }
            return Err(ToolError::Validation(format!("Worktree has {}. Removing will discard this work permanently. Confirm with the user, then re-invoke with discard_changes: true \u{2014} or use action: \"keep\" to preserve the worktree.", what.join(" and "))));
        }
        git(ctx, &a.repo, &["worktree", "remove", "--force", &wt_path])
            .await
            .map_err(|e| ToolError::Runtime(format!("Cannot remove the worktree at {wt}: {e}")))?;
        // a branch that is not the one the worktree was made on (resumed by name) stays
        let _ = git(ctx, &a.repo, &["branch", "-D", &a.branch]).await;
        state.set_active(&ctx.session, None);
        set_shell_cwd(ctx, &a.original);
        let mut discarded = Vec::new();
        if commits > 0 {
            discarded.push(plural(commits, "commit"));
        }
        if files > 0 {
            discarded.push(plural(files, "uncommitted file"));
        }
        let discarded =
            if discarded.is_empty() { String::new() } else { format!("Discarded {}. ", discarded.join(" and ")) };
        Ok(ToolOutput::Text(format!("Exited and removed worktree at {wt}. {discarded}Session is now back in {orig}.")))
    }
}

impl TypedTool for ExitWorktree {
    const NAME: &'static str = "ExitWorktree";
    const DESCRIPTION: &'static str = EXIT_DESCRIPTION;
    type Args = Value;

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "action": {"description": "\"keep\" leaves the worktree and branch on disk; \"remove\" deletes both.", "type": "string", "enum": ["keep", "remove"]},
                "discard_changes": {"description": "Required true when action is \"remove\" and the worktree has uncommitted files or unmerged commits. The tool will refuse and list them otherwise.", "type": "boolean"}
            },
            "required": ["action"],
            "additionalProperties": false
        })
    }

    fn is_destructive(&self, input: &Value) -> bool {
        input.get("action").and_then(Value::as_str) == Some("remove")
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.run(input, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_rule() {
        assert_eq!(name_issue("feat-1"), None);
        assert_eq!(name_issue("a/b.c_d"), None);
        assert_eq!(
            name_issue("bad name!").unwrap_or_default(),
            "Invalid worktree name \"bad name!\": each \"/\"-separated segment must be non-empty and contain only letters, digits, dots, underscores, and dashes"
        );
        assert!(name_issue("").is_some_and(|m| m.contains("must be non-empty")));
        assert!(name_issue("a//b").is_some_and(|m| m.contains("must be non-empty")));
        assert_eq!(
            name_issue("../up").unwrap_or_default(),
            "Invalid worktree name \"../up\": must not contain \".\" or \"..\" path segments"
        );
        assert_eq!(name_issue(&"x".repeat(64)), None);
        assert_eq!(
            name_issue(&"x".repeat(65)).unwrap_or_default(),
            "Invalid worktree name: must be 64 characters or fewer (got 65)"
        );
    }

    /// A worktree whose commits since its base cannot be counted (the base commit's object gone) is not
    /// removed without discard_changes: it used to count as no commits, and the worktree went silently.
    #[tokio::test]
    async fn commits_that_cannot_be_counted_are_never_taken_for_none() {
        let (_d, ctx) = ToolContext::for_test_at("2.1.333");
        let git = |dir: &std::path::Path, args: &[&str]| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
                .args(args)
                .env("HOME", &ctx.home)
                .output()
                .expect("git runs");
            assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        git(&ctx.cwd, &["init", "-q"]);
        std::fs::write(ctx.cwd.join("a"), "a").expect("write");
        git(&ctx.cwd, &["add", "a"]);
        git(&ctx.cwd, &["commit", "-qm", "base"]);
        let base = git(&ctx.cwd, &["rev-parse", "HEAD"]);
        EnterWorktree.run(json!({"name": "w"}), &ctx).await.expect("enter");
        let wt = ctx.session.state::<Worktrees>().active().expect("active").path.clone();
        // work committed in the worktree, then the base commit's object removed: git status still works
        // (HEAD is the new commit), but git can no longer walk base..HEAD
        std::fs::write(wt.join("a"), "work").expect("write");
        git(&wt, &["commit", "-qam", "work"]);
        let object = ctx.cwd.join(".git/objects").join(&base[..2]).join(&base[2..]);
        std::fs::remove_file(&object).expect("the base is a loose object");
        let refused = ExitWorktree.run(json!({"action": "remove"}), &ctx).await;
        let e = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.starts_with("Cannot tell whether the worktree at "), "{e}");
        assert!(e.contains("discard_changes: true"), "{e}");
        assert!(wt.is_dir(), "the worktree is still there");
    }

    /// Names plain before CURLY_QUOTED_NAMES (worktree.lifecycle on 2.1.301), in curly quotes from it
    /// (2.1.302); a missing path's error with lstat before MISSING_PATH_REALPATH (2.1.303), realpath from
    /// it (2.1.304).
    #[tokio::test]
    async fn texts_by_release() {
        let (_d, ctx) = ToolContext::for_test_at("2.1.301");
        assert_eq!(quoted(&ctx, "worktree-w"), "worktree-w");
        let (_d, ctx) = ToolContext::for_test_at("2.1.302");
        assert_eq!(quoted(&ctx, "worktree-w"), "\u{201c}worktree-w\u{201d}");
        let missing = |version: &'static str| async move {
            let (_d, ctx) = ToolContext::for_test_at(version);
            let init = std::process::Command::new("git").arg("init").arg("-q").arg(&ctx.cwd).status();
            assert!(init.is_ok_and(|s| s.success()), "git init");
            let out = EnterWorktree.run(json!({"path": "nowhere"}), &ctx).await;
            let shown = ctx.cwd.join("nowhere").display().to_string();
            (out.err().map(|e| e.to_string()).unwrap_or_default(), shown)
        };
        let (e, shown) = missing("2.1.303").await;
        assert_eq!(e, format!("Cannot enter worktree: {shown}: ENOENT: no such file or directory, lstat '{shown}'"));
        let (e, shown) = missing("2.1.304").await;
        assert_eq!(e, format!("Cannot enter worktree: {shown}: ENOENT: no such file or directory, realpath '{shown}'"));
    }
}
