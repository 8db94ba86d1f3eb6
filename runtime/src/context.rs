//! What a call may use: [`ToolContext`] (the sandbox paths, the session, the shell, the read state),
//! [`ReadState`] (READ-4).

use crate::background::Shell;
use crate::model::TokenCounter;
use crate::session::Session;
use crate::settings::SandboxSettings;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The name Claude Code gives per-project state after a cwd: every non-alphanumeric character turned
/// into '-' (`/tmp/p/work` → `-tmp-p-work`).
pub fn cwd_slug(cwd: &Path) -> String {
    cwd.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// What the runtime remembers of a file a Read returned (READ-4), used by the Edit / Write gates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadState {
    /// The file's content when read (whole file, even for a windowed read).
    pub content: Vec<u8>,
    /// Modification time when read.
    pub mtime: Option<SystemTime>,
    /// True when the read was a window (offset / limit).
    pub partial: bool,
    /// The window (`offset`, default 1, and `limit`) when the state comes from a Read; `None` after an
    /// Edit or Write. A second Read of the same window of an unchanged file is answered with the
    /// reference's "file unchanged" note instead of the content.
    pub window: Option<(u64, Option<u64>)>,
    /// The batch of parallel calls the state was recorded in ([`crate::fs::ReadBatch`]): a Read in the
    /// same batch does not see it.
    pub batch: u64,
    /// The model has not seen all of this content: an Edit changed a file it never read, or one changed
    /// on disk since its Read ([`crate::fs::Gate`]); a Read makes it seen again.
    pub unseen: bool,
}

/// Everything a call may use: the sandbox, the session's state, the env of the probe.
#[derive(Clone)]
pub struct ToolContext {
    /// Working directory (inside the sandbox).
    pub cwd: PathBuf,
    /// HOME (inside the sandbox).
    pub home: PathBuf,
    /// Roots a tool may touch (canonical).
    pub roots: Vec<PathBuf>,
    /// Session id.
    pub session_id: String,
    /// Environment the probe gives the subject.
    pub env: BTreeMap<String, String>,
    /// Files read in this session (READ-4).
    pub read_state: Arc<Mutex<HashMap<PathBuf, ReadState>>>,
    /// Token counting (the subject's API).
    pub tokens: Arc<dyn TokenCounter>,
    /// The Bash shell's cwd and the background tasks.
    pub shell: Shell,
    /// `settings.sandbox` (Bash).
    pub sandbox: SandboxSettings,
    /// The tool_use id of the call being run (set by the pipeline for each call).
    pub call_id: Option<String>,
    /// The session: settings, model, and each tool's state by type.
    pub session: Arc<Session>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext").field("cwd", &self.cwd).field("home", &self.home).finish()
    }
}

impl ToolContext {
    /// A fresh temp dir and a context in it (counting tokens by estimate), for unit tests; the dir
    /// lives as long as the returned guard.
    #[cfg(test)]
    pub(crate) fn for_test() -> (tempfile::TempDir, ToolContext) {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let c = ToolContext::for_sandbox(d.path(), Arc::new(crate::model::EstimateTokens))
            .unwrap_or_else(|e| panic!("{e}"));
        (d, c)
    }

    /// [`ToolContext::for_test`] in a session that behaves as Claude Code `version` (a switch's tests
    /// hold both sides: the reference before its `since`, the new behaviour from it).
    #[cfg(test)]
    pub(crate) fn for_test_at(version: &str) -> (tempfile::TempDir, ToolContext) {
        let (d, mut c) = ToolContext::for_test();
        let profile = crate::profile::Profile::at(version).unwrap_or_else(|e| panic!("{e}"));
        c.session = Arc::new(crate::session::Session::default().put(profile));
        (d, c)
    }

    /// A context for `root` with `root/work` as cwd and `root/home` as HOME (both created).
    pub fn for_sandbox(root: &std::path::Path, tokens: Arc<dyn TokenCounter>) -> std::io::Result<ToolContext> {
        let root = root.canonicalize()?;
        let cwd = root.join("work");
        let home = root.join("home");
        std::fs::create_dir_all(&cwd)?;
        std::fs::create_dir_all(&home)?;
        Ok(ToolContext {
            cwd,
            home,
            roots: vec![root],
            session_id: "00000000-0000-4000-8000-000000000001".into(),
            env: BTreeMap::new(),
            read_state: Arc::default(),
            tokens,
            shell: Arc::default(),
            sandbox: SandboxSettings::default(),
            call_id: None,
            session: Arc::default(),
        })
    }

    /// The session's own directory under HOME, where the reference keeps it:
    /// `<home>/.claude/projects/<cwd-slug>/<session id>` (persisted results, file history, workflows).
    pub fn session_dir(&self) -> PathBuf {
        self.project_dir().join(&self.session_id)
    }

    /// The project's directory under HOME, `<home>/.claude/projects/<cwd-slug>`: the session's log
    /// (`<session id>.jsonl`) sits there, beside the session's own directory.
    pub fn project_dir(&self) -> PathBuf {
        self.home.join(".claude").join("projects").join(cwd_slug(&self.cwd))
    }

    /// The session's log, `<project dir>/<session id>.jsonl`: structured tool results and queued
    /// notifications, as the reference keeps them in its session transcript.
    pub fn session_log(&self) -> PathBuf {
        self.project_dir().join(format!("{}.jsonl", self.session_id))
    }

    /// The session's temp root: `$TMPDIR` of the session's env, else `<first root>/tmp` (writable in the
    /// Bash sandbox).
    pub fn tmp_base(&self) -> PathBuf {
        self.env("TMPDIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| self.roots.first().cloned().unwrap_or_else(|| self.cwd.clone()).join("tmp"))
    }

    /// Where temp files of the session go, the reference's layout below [`ToolContext::tmp_base`]:
    /// `claude-<uid>/<cwd slug>/<session>/` (Bash's output files, background tasks).
    pub fn session_tmp(&self) -> PathBuf {
        self.tmp_base()
            .join(format!("claude-{}", nix::unistd::getuid()))
            .join(cwd_slug(&self.cwd))
            .join(&self.session_id)
    }

    /// What the permission rules' paths are anchored at now (HOME, [`ToolContext::project_root`]).
    pub fn anchors(&self) -> crate::permissions::Anchors {
        crate::permissions::Anchors { home: self.home.clone(), project_root: self.project_root() }
    }

    /// Where the session's hook commands run.
    pub fn hook_env(&self) -> crate::hooks::HookEnv {
        crate::hooks::HookEnv {
            session_id: self.session_id.clone(),
            cwd: self.cwd.clone(),
            home: self.home.clone(),
            confine: self.session.state::<crate::confine::SessionConfinement>().0.clone(),
            profile: self.profile(),
        }
    }

    /// The Claude Code release the session behaves as ([`crate::profile`]): tools ask it
    /// `ctx.profile().has(&SWITCH)`.
    pub fn profile(&self) -> crate::profile::Profile {
        *self.session.state::<crate::profile::Profile>()
    }

    /// This context in a fresh session of its own that behaves as `profile` (for tests of a tool's
    /// version switches: a [`ToolContext::for_sandbox`] context at another release).
    pub fn with_profile(mut self, profile: crate::profile::Profile) -> ToolContext {
        self.session = Arc::new(crate::session::Session::default().put(profile));
        self
    }

    /// An env value the probe set.
    pub fn env(&self, key: &str) -> Option<&str> {
        self.env.get(key).map(String::as_str)
    }

    /// The session's working directory, the reference's one cwd (WT-1, measured on Claude Code 2.1.235
    /// by `probes/claude-code/worktree-cwd.toml`): the Bash shell's cwd, which a `cd` and
    /// EnterWorktree / ExitWorktree move, else [`ToolContext::cwd`]. Relative paths resolve against it,
    /// Grep and Glob search it when given no `path`, and their results are shown relative to it.
    pub fn working_dir(&self) -> PathBuf {
        let g = self.shell.cwd.lock().unwrap_or_else(|p| p.into_inner());
        g.clone().filter(|p| p.is_dir()).unwrap_or_else(|| self.cwd.clone())
    }

    /// The project root the permission rules' paths are anchored at (`Read(/secret.txt)` = a
    /// `secret.txt` at the root): the active worktree after EnterWorktree, else [`ToolContext::cwd`].
    /// A Bash `cd` does not move it (measured, like [`ToolContext::working_dir`]).
    pub fn project_root(&self) -> PathBuf {
        self.session.active_root().unwrap_or_else(|| self.cwd.clone())
    }
}
