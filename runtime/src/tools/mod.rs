//! The built-in tool runtime: the [`Tool`] trait, what a call may use ([`ToolContext`]), the two error
//! channels ([`ToolError`]), and the [`Registry`] that builds the tool pool sorted by name (PIPE-7).
//!
//! One module per tool: a unit struct, a serde `Args`, the schema beside the handler, pure logic in plain
//! functions with their unit tests.

pub mod agent_tool;
pub mod apply_patch;
pub mod artifact;
pub mod ask;
pub mod bash;
pub mod bwrap;
pub mod clock;
pub mod cron;
pub mod edit;
pub mod fs;
pub mod glob;
pub mod grep;
pub mod host;
pub mod lsp;
pub mod mcp;
pub mod notebook_edit;
pub mod plan_mode;
pub mod read;
pub mod send_message;
pub mod session;
pub mod shell;
pub mod skill;
pub mod task_list;
pub mod tasks;
pub mod todo_write;
pub mod tool_search;
pub mod web_fetch;
pub mod web_search;
pub mod workflow;
pub mod worktree;
pub mod write;

use futures_util::future::BoxFuture;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Default `maxResultSizeChars` of a tool: over it the result is persisted to a file and the model gets
/// the path and a preview (PIPE-5: "most others 100,000").
pub const DEFAULT_MAX_RESULT_SIZE_CHARS: usize = 100_000;

/// The two error channels of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The input was refused before anything ran (validation of a file's state, of the parameters):
    /// becomes an `is_error` result wrapped in `<tool_use_error>…</tool_use_error>`, like the reference.
    #[error("{0}")]
    Validation(String),
    /// The tool ran and failed: an `is_error` result with the text as is (not wrapped).
    #[error("{0}")]
    Runtime(String),
}

/// What a successful call returns: text, or content blocks (an image, a PDF document).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// A text result.
    Text(String),
    /// Content blocks (`image`, `document`, `text`).
    Blocks(Vec<Value>),
    /// A text result plus the structured record the reference keeps beside it (its `toolUseResult`):
    /// the text goes to the model, the record to the session log (`<session dir>/<session id>.jsonl`).
    Data {
        /// What the model gets.
        text: String,
        /// The structured record.
        data: Value,
    },
}

/// What a permission rule of a tool is matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionSubject {
    /// A file the call reads.
    ReadPath(PathBuf),
    /// A file the call writes (also checked against `Read(...)` deny rules: EDIT-3).
    WritePath(PathBuf),
    /// A shell command.
    Command(String),
    /// Nothing to match beyond the tool name.
    None,
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
}

/// Counts tokens the way the subject's API does: the built-in subject asks the stub's
/// `/v1/messages/count_tokens`, like the reference binary for large reads.
pub trait TokenCounter: Send + Sync {
    /// Input tokens of a user message holding `text`.
    fn count<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<u64, String>>;
}

/// A counter that estimates 4 bytes per token, for unit tests.
#[derive(Debug, Default)]
pub struct EstimateTokens;

impl TokenCounter for EstimateTokens {
    fn count<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<u64, String>> {
        Box::pin(async move { Ok((text.len() as u64).div_ceil(4)) })
    }
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
    pub shell: tasks::Shell,
    /// `settings.sandbox` (Bash).
    pub sandbox: bwrap::SandboxSettings,
    /// The tool_use id of the call being run (set by the pipeline for each call).
    pub call_id: Option<String>,
    /// Session-wide state of the coordination tools (mode, cron, worktrees, sub-agents, host script).
    pub session: Arc<session::Session>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext").field("cwd", &self.cwd).field("home", &self.home).finish()
    }
}

impl ToolContext {
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
            sandbox: bwrap::SandboxSettings::default(),
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
        self.home.join(".claude").join("projects").join(fs::cwd_slug(&self.cwd))
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
        self.session.worktrees.active().map(|a| a.path).unwrap_or_else(|| self.cwd.clone())
    }
}

/// An env flag as Claude Code reads one: `1`, `true`, `yes`, `on` are true; `0`, `false`, `no`, `off` are
/// false (case-insensitive); anything else, or unset, is `None`.
pub fn env_flag(env: &BTreeMap<String, String>, key: &str) -> Option<bool> {
    match env.get(key)?.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Turns the Task* family on instead of nothing (as on Claude Code 2.1.235, where the task tools are
/// off by default in `-p` runs; TODO-1, TASK-1).
pub const ENV_ENABLE_TODO_TOOLS: &str = "CLAUDE_CODE_ENABLE_TODO_TOOLS";
/// `0` with the todo flag on: TodoWrite instead of the Task* family (TODO-1: the two are exclusive).
pub const ENV_ENABLE_TASKS: &str = "CLAUDE_CODE_ENABLE_TASKS";
/// Removes the cron surface (CRON-5).
pub const ENV_DISABLE_CRON: &str = "CLAUDE_CODE_DISABLE_CRON";
/// The Task* family (TASK-1..5).
pub const TASK_TOOLS: &[&str] = &["TaskCreate", "TaskGet", "TaskList", "TaskUpdate"];
/// The todo list tool (TODO-1).
pub const TODO_TOOL: &str = "TodoWrite";
/// The cron surface (CRON-1..5).
pub const CRON_TOOLS: &[&str] = &["CronCreate", "CronDelete", "CronList"];

/// A tool of the runtime.
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &'static str;
    /// The description sent with the schema.
    fn description(&self) -> String;
    /// JSON Schema of the input (draft-07 object).
    fn input_schema(&self) -> Value;
    /// Read-only for this input (PIPE-4; default false).
    fn is_read_only(&self, _input: &Value) -> bool {
        false
    }
    /// May run in parallel with other concurrency-safe calls of the same turn (PIPE-4; default false).
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }
    /// Destroys data for this input (PIPE-4; default false).
    fn is_destructive(&self, _input: &Value) -> bool {
        false
    }
    /// Left out of `tools[]` until ToolSearch loads it, when tool search is on (TS-1; default: the
    /// names of [`tool_search::DEFERRED_BUILTINS`] and MCP tools, [`tool_search::is_deferred_by_default`]).
    fn should_defer(&self) -> bool {
        tool_search::is_deferred_by_default(self.name())
    }
    /// The pipeline checks the input against [`Tool::input_schema`] before the call (PIPE-1; default
    /// true). MCP tools leave that to their server, as the reference does (MCP-1).
    fn validates_input(&self) -> bool {
        true
    }
    /// Result budget (PIPE-5); `None` = unlimited (the tool limits itself, like Read).
    fn max_result_size_chars(&self) -> Option<usize> {
        Some(DEFAULT_MAX_RESULT_SIZE_CHARS)
    }
    /// What permission rules of this tool match against.
    fn permission_subject(&self, _input: &Value, _ctx: &ToolContext) -> PermissionSubject {
        PermissionSubject::None
    }
    /// Runs the call; the input has passed schema validation, hooks and permissions.
    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// PIPE-7's order of the pool: built-ins by name, then MCP tools (`mcp__…`) by name.
pub fn pool_order(a: &str, b: &str) -> std::cmp::Ordering {
    (a.starts_with(mcp::MCP_PREFIX), a).cmp(&(b.starts_with(mcp::MCP_PREFIX), b))
}

/// The tool pool: built-ins sorted by name (PIPE-7), removable by deny rules (PIPE-6).
#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Registry {
    /// Every built-in tool of the runtime.
    pub fn builtin() -> Registry {
        Registry::from_tools(vec![
            Arc::new(read::Read),
            Arc::new(write::Write),
            Arc::new(edit::Edit),
            Arc::new(notebook_edit::NotebookEdit),
            Arc::new(grep::Grep),
            Arc::new(glob::Glob),
            Arc::new(bash::Bash),
            Arc::new(tasks::TaskOutput),
            Arc::new(tasks::TaskStop),
            Arc::new(task_list::TaskCreate),
            Arc::new(task_list::TaskGet),
            Arc::new(task_list::TaskList),
            Arc::new(task_list::TaskUpdate),
            Arc::new(todo_write::TodoWrite),
            Arc::new(cron::CronCreate),
            Arc::new(cron::CronDelete),
            Arc::new(cron::CronList),
            Arc::new(agent_tool::Agent),
            Arc::new(send_message::SendMessage),
            Arc::new(ask::AskUserQuestion),
            Arc::new(lsp::Lsp),
            Arc::new(plan_mode::EnterPlanMode),
            Arc::new(plan_mode::ExitPlanMode),
            Arc::new(worktree::EnterWorktree),
            Arc::new(worktree::ExitWorktree),
            Arc::new(workflow::Workflow),
            Arc::new(skill::Skill),
            Arc::new(tool_search::ToolSearch),
            Arc::new(artifact::Artifact),
            Arc::new(apply_patch::ApplyPatch),
            Arc::new(web_fetch::WebFetch),
            Arc::new(web_search::WebSearch),
        ])
    }

    /// The pool of a session with this env: [`Registry::builtin`] less what the env switches off. The
    /// Task* family appears with [`ENV_ENABLE_TODO_TOOLS`]; with [`ENV_ENABLE_TASKS`]`=0` as well,
    /// TodoWrite appears instead (never both: TODO-1); [`ENV_DISABLE_CRON`] removes the cron tools;
    /// ToolSearch is there only with [`tool_search::ENV_ENABLE_TOOL_SEARCH`] (TS-1); Artifact only with
    /// [`artifact::ENV_ENABLE_ARTIFACT`] (ART-1) and apply_patch only with
    /// [`apply_patch::ENV_ENABLE_APPLY_PATCH`] (PATCH-1: optional, off by default).
    pub fn for_session(env: &BTreeMap<String, String>) -> Registry {
        let mut r = Registry::builtin();
        let todo_flag = env_flag(env, ENV_ENABLE_TODO_TOOLS) == Some(true);
        let tasks_off = env_flag(env, ENV_ENABLE_TASKS) == Some(false);
        let cron_off = env_flag(env, ENV_DISABLE_CRON) == Some(true);
        let tool_search = tool_search::enabled(env);
        r.retain(|name| {
            if TASK_TOOLS.contains(&name) {
                todo_flag && !tasks_off
            } else if name == TODO_TOOL {
                todo_flag && tasks_off
            } else if CRON_TOOLS.contains(&name) {
                !cron_off
            } else if name == tool_search::TOOL_SEARCH {
                tool_search
            } else if name == "Artifact" {
                env_flag(env, artifact::ENV_ENABLE_ARTIFACT) == Some(true)
            } else if name == "apply_patch" {
                env_flag(env, apply_patch::ENV_ENABLE_APPLY_PATCH) == Some(true)
            } else {
                true
            }
        });
        r
    }

    /// A pool of these tools, sorted by name; on a name clash the first one given wins.
    pub fn from_tools(tools: Vec<Arc<dyn Tool>>) -> Registry {
        let mut out: Vec<Arc<dyn Tool>> = Vec::new();
        for t in tools {
            if !out.iter().any(|o| o.name() == t.name()) {
                out.push(t);
            }
        }
        out.sort_by(|a, b| pool_order(a.name(), b.name()));
        Registry { tools: out }
    }

    /// The pool with a session's MCP tools added (MCP-1, PIPE-7): built-ins stay one contiguous prefix
    /// sorted by name, MCP tools (`mcp__…`) follow, sorted by name; on a name clash the tool already in
    /// the pool (the built-in) wins.
    pub fn with_mcp(mut self, tools: Vec<Arc<dyn Tool>>) -> Registry {
        for t in tools {
            if self.get(t.name()).is_none() {
                self.tools.push(t);
            }
        }
        self.tools.sort_by(|a, b| pool_order(a.name(), b.name()));
        self
    }

    /// Keeps the tools `keep` says yes to.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.tools.retain(|t| keep(t.name()));
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name).cloned()
    }

    /// Names in pool order.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// The `tools` array of a Messages request.
    pub fn api_tools(&self) -> Vec<Value> {
        self.tools
            .iter()
            .map(|t| serde_json::json!({"name": t.name(), "description": t.description(), "input_schema": t.input_schema()}))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool named `.0` that answers `.1`.
    struct Named(&'static str, &'static str);

    impl Tool for Named {
        fn name(&self) -> &'static str {
            self.0
        }
        fn description(&self) -> String {
            String::new()
        }
        fn input_schema(&self) -> Value {
            serde_json::json!({"type": "object"})
        }
        fn call<'a>(&'a self, _: Value, _: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            Box::pin(async { Ok(ToolOutput::Text(self.1.into())) })
        }
    }

    #[test]
    fn mcp_tools_follow_the_sorted_builtins_and_lose_clashes() {
        // PIPE-7: `zz` sorts after `mcp__…` by bytes, yet built-ins stay one prefix
        let builtins: Vec<Arc<dyn Tool>> = vec![Arc::new(Named("zz", "builtin")), Arc::new(Named("Read", "r"))];
        let pool = Registry::from_tools(builtins).with_mcp(vec![
            Arc::new(Named("mcp__s__b", "b")),
            Arc::new(Named("ListMcpResourcesTool", "l")),
            Arc::new(Named("mcp__a__z", "z")),
            Arc::new(Named("zz", "mcp")),
        ]);
        assert_eq!(pool.names(), ["ListMcpResourcesTool", "Read", "zz", "mcp__a__z", "mcp__s__b"]);
        let ctx = ToolContext::for_sandbox(&std::env::temp_dir(), Arc::new(EstimateTokens));
        let ctx = ctx.unwrap_or_else(|e| panic!("{e}"));
        let kept = pool.get("zz").unwrap_or_else(|| panic!("zz"));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rt.block_on(kept.call(Value::Null, &ctx)), Ok(ToolOutput::Text("builtin".into())));
    }

    #[test]
    fn pool_is_sorted_by_name() {
        let names = Registry::builtin().names();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert!(names.contains(&"Read"));
    }
}
