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
//!
//! ## Modules
//!
//! The core, which names no tool:
//! - [`tool`]: [`tool::TypedTool`], what a tool module implements (name and flags as constants, its own
//!   serde `Args`, an `async fn call`), the object-safe [`Tool`] the pool stores (every `TypedTool` is
//!   one, through a blanket adapter that deserialises the validated input), its two error channels
//!   ([`ToolError`]), [`ToolOutput`], [`PermissionSubject`], and [`tool::parse_args`] (a call's input as
//!   a tool's serde `Args`);
//! - [`context`]: what a call may use ([`ToolContext`], [`ReadState`]);
//! - [`session`]: what outlives a call ([`Session`]: settings, model, each tool's state by type);
//! - [`registry`]: the tool pool ([`Registry`]: built-ins by name, then MCP tools);
//! - [`pipeline`]: every call's way through the checks to its one result ([`Runtime`], [`pipeline::Extension`]);
//! - [`schema`]: an input checked against its tool's JSON Schema; [`validation`]: the reference's
//!   `InputValidationError` texts, the schema check's and zod's;
//! - [`settings`] (settings.json as data), [`permissions`] (allow / ask / deny rules), [`hooks`]
//!   (PreToolUse's and the other events' hook commands);
//! - [`process`]: children in process groups of their own, killed as a group or as a tree;
//! - [`paths`]: the one path resolver ([`paths::real_path`], a leaf); [`fs`]: confinement of every
//!   tool's paths and the file helpers; [`shell`]: a Bash command's parts
//!   and the read-only policy; [`background`]: the session's background tasks (BG-1);
//! - [`model`]: how a tool reaches the session's model ([`model::Model`], [`model::TokenCounter`],
//!   [`model::ModelError`]); [`wire`]: the Messages API's message and content blocks as the port and
//!   the client read them (a leaf: the port does not depend on its adapter); [`agent`]: the Messages
//!   client and the agent loop.
//!
//! The composition root, [`builtin`]: the pool of a session, its extensions, [`builtin::start`] and
//! [`builtin::shutdown`]. The tools themselves (`tools`, one module per tool or tool family) are
//! private to the crate; [`config`] re-exports the configuration types the lab's probe format reads
//! (with their errors) and [`limits`] the limits and texts tests refer to.
//!
//! ```
//! use probelab_runtime::tool::parse_args;
//! use probelab_runtime::ToolError;
//!
//! #[derive(serde::Deserialize)]
//! struct Args {
//!     file_path: String,
//! }
//! let args: Args = parse_args(serde_json::json!({"file_path": "a.txt"})).unwrap_or_else(|e| panic!("{e}"));
//! assert_eq!(args.file_path, "a.txt");
//! let refused = parse_args::<Args>(serde_json::json!({}));
//! assert!(matches!(refused, Err(ToolError::Validation(m)) if m == "missing field `file_path`"));
//! assert!(probelab_runtime::builtin::registry().names().contains(&"Read"));
//! ```

pub mod agent;
pub mod background;
pub mod builtin;
pub mod confine;
pub mod context;
pub mod encoding;
pub mod fs;
pub mod hooks;
pub mod model;
pub mod nofollow;
pub mod paths;
pub mod permissions;
pub mod pipeline;
pub mod process;
pub mod profile;
pub mod registry;
pub mod schema;
pub mod session;
pub mod settings;
pub mod shell;
pub mod switches;
pub mod tool;
pub mod tool_texts;
mod tools;
pub mod validation;
pub mod wire;

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
    pub use crate::tools::host::{AskReply, HostScript, PlanReply};
    pub use crate::tools::lsp::config::{LspServerSpec, PluginProblem, PluginSpec};
    pub use crate::tools::mcp::{HandshakeError, McpError, ServerSpec};
    pub use crate::tools::web_fetch::{ToService, WebAccess};
}

/// Limits and texts of the tools that tests and the lab refer to by name.
pub mod limits {
    pub use crate::tools::bash::{pids_limit_note, pids_stop_note, GUARD_POLL_MS, NO_OUTPUT, PIDS_MAX};
    pub use crate::tools::grep::{DEADLINE_ENV as GREP_DEADLINE_ENV, MAX_COLUMNS as GREP_MAX_COLUMNS, VCS_DIRS};
    pub use crate::tools::lsp::manager::ENV_REQUEST_TIMEOUT_MS as LSP_REQUEST_TIMEOUT_ENV;
    pub use crate::tools::read::{MAX_FILE_BYTES as READ_MAX_FILE_BYTES, MAX_OUTPUT_TOKENS as READ_MAX_OUTPUT_TOKENS};
}
