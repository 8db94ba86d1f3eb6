//! # probelab-runtime
//!
//! The built-in subject of probelab: a tool runtime that follows Claude Code's documented behaviour
//! (the claims catalogue) — the tools ([`tools`]), the control pipeline every call passes
//! ([`pipeline`]: schema validation, hooks, permissions, sandbox, execution, result budget), and the
//! agent loop with its own Messages API client ([`agent`]).
//!
//! It depends on the search engine (probelab-search) and on nothing of the lab: it knows no probe, no
//! golden, no stub. The lab drives it through the same wire as a real agent binary.

pub mod agent;
pub mod hooks;
pub mod permissions;
pub mod pipeline;
pub mod schema;
pub mod tools;
