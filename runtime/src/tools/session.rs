//! Session-wide state of the coordination tools (issue 7): what lives outside the conversation and
//! outside the Bash shell — the host's scripted answers, the permission mode (plan mode), the cron
//! store and its clock, the worktrees this session made, the sub-agent machinery. One [`Session`] per
//! run, shared by every call through [`crate::tools::ToolContext::session`]; each part is owned by its
//! tool module.

use crate::pipeline::{AskAnswer, Settings};
use crate::tools::{agent_tool, cron, host, plan_mode, skill, tool_search, worktree};

/// Where the session's model lives (for nested agent loops and side requests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Api {
    /// Base URL of the Messages API (the stub).
    pub base_url: String,
    /// Model of the session.
    pub model: String,
}

/// The session's state.
#[derive(Debug, Default)]
pub struct Session {
    /// The session's settings (hooks of other events than PreToolUse, permissions for nested runtimes).
    pub settings: Settings,
    /// How the host answers permission asks.
    pub ask_answer: AskAnswer,
    /// The Messages API of the session (`None` in unit tests).
    pub api: Option<Api>,
    /// Scripted answers of the host (AskUserQuestion, plan approval).
    pub host: host::HostScript,
    /// Permission mode (plan mode).
    pub mode: plan_mode::ModeState,
    /// Cron jobs and the clock they run on.
    pub cron: cron::Cron,
    /// Worktrees this session created.
    pub worktrees: worktree::Worktrees,
    /// Sub-agents (depth, running ones, their outputs).
    pub agents: agent_tool::Agents,
    /// The session's MCP servers (MCP-1): connected at its start, shut down at its end.
    pub mcp: std::sync::Arc<crate::tools::mcp::Mcp>,
    /// Deferred tools loaded by ToolSearch, and the pool it searches (TS-1).
    pub tool_search: tool_search::ToolSearchState,
    /// Skills called so far (SKILL-1).
    pub skills: skill::SkillState,
    /// Texts for the next request after a call's result: a skill's body, `Tool loaded.` (SKILL-1, TS-1).
    pub followups: skill::Followups,
    /// The artifact service of the run and the versions this session saw (ART-1).
    pub artifacts: crate::tools::artifact::Artifacts,
    /// The web tools' state: the probe's web service, the fetch cache, the search count (WEB-1, WEB-2).
    pub web: crate::tools::web_fetch::Web,
    /// The session's LSP servers (LSP-1..5): started at the first call that needs one, shut down at its end.
    pub lsp: crate::tools::lsp::manager::LspManager,
}
