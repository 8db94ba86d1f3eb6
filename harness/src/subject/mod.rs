//! Subjects other than the built-in agent loop (which is [`crate::run`]): exec probes, which run a
//! command — typically the subject's search engine as `rg` — and record its output, exit, time and memory.

pub mod claude_code;
pub mod exec;
