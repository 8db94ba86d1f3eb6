//! # probelab-runtime
//!
//! The built-in subject of probelab: a tool runtime that follows Claude Code's documented behaviour
//! (the claims catalogue) — the tools, the control pipeline every call passes ([`pipeline`]: schema
//! validation, hooks, permissions, sandbox, execution, result budget), and the agent loop with its own
//! Messages API client ([`agent`]).
//!
//! The core names no tool: a [`Tool`] gets a [`ToolContext`] (paths, the [`Session`] with each tool's
//! state attached by type, the shell, the read state); tools take part in the pipeline and the loop
//! through [`pipeline::Extension`]s and reach the model through [`model::Model`]. The composition root,
//! [`builtin`], is the one place that names every tool: the lab starts a session with
//! [`builtin::SessionConfig`] → [`builtin::start`], and the Agent tool builds its sub-agents through it.
//!
//! It depends on the search engine (probelab-search) and on nothing of the lab: it knows no probe, no
//! golden, no stub. The lab drives it through the same wire as a real agent binary.

pub mod agent;
pub mod background;
pub mod builtin;
pub mod context;
pub mod fs;
pub mod hooks;
pub mod model;
pub mod permissions;
pub mod pipeline;
pub mod registry;
pub mod schema;
pub mod session;
pub mod settings;
pub mod shell;
pub mod tool;
mod tools;
pub mod validation;

pub use context::{ReadState, ToolContext};
pub use pipeline::Runtime;
pub use registry::Registry;
pub use session::Session;
pub use settings::Settings;
pub use tool::{PermissionSubject, Tool, ToolError, ToolOutput};

/// The configuration types of the tools that need one (the lab's probe format reads them), and what can
/// be wrong with them.
pub mod config {
    pub use crate::tools::artifact::{ENV_ENABLE_ARTIFACT, PUBLIC_ORIGIN};
    pub use crate::tools::clock::{ClockError, DurationError};
    pub use crate::tools::cron::ClockSpec;
    pub use crate::tools::host::HostScript;
    pub use crate::tools::lsp::config::{PluginProblem, PluginSpec};
    pub use crate::tools::mcp::{HandshakeError, McpError, ServerSpec};
    pub use crate::tools::web_fetch::{ToService, WebAccess};
}

/// Limits and texts of the tools that tests and the lab refer to by name.
pub mod limits {
    pub use crate::tools::bash::{pids_limit_note, NO_OUTPUT, PIDS_MAX};
    pub use crate::tools::grep::{DEADLINE_ENV as GREP_DEADLINE_ENV, MAX_COLUMNS as GREP_MAX_COLUMNS, VCS_DIRS};
    pub use crate::tools::lsp::manager::ENV_REQUEST_TIMEOUT_MS as LSP_REQUEST_TIMEOUT_ENV;
    pub use crate::tools::read::{MAX_FILE_BYTES as READ_MAX_FILE_BYTES, MAX_OUTPUT_TOKENS as READ_MAX_OUTPUT_TOKENS};
}
