//! The built-in tools, one module per tool (or tool family): a unit struct, a serde `Args`, the schema
//! beside the handler, pure logic in plain functions with their unit tests. Only the composition root
//! ([`crate::builtin`]) names them all.

pub mod agent_tool;
pub mod apply_patch;
pub mod artifact;
pub mod ask;
pub mod bash;
pub mod clock;
pub mod cron;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod host;
pub mod lsp;
pub mod mcp;
pub mod notebook_edit;
pub mod plan_mode;
pub mod read;
pub mod send_message;
pub mod skill;
pub mod task_list;
pub mod task_output;
pub mod todo_write;
pub mod tool_search;
pub mod web_fetch;
pub mod web_search;
pub mod workflow;
pub mod worktree;
pub mod write;
