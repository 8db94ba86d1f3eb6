//! # probelab harness
//!
//! The probe lab: probe files go in ([`probe`]), a subject runs them against stub-messages (the
//! built-in runtime of probelab-runtime through its agent loop, see [`run`], or the Claude Code binary,
//! [`subject`]), the stub's record is checked ([`check`]), rendered as a transcript and compared with its
//! golden file ([`transcript`]); [`lab`] ties these together for the CLI and the tests, [`suite`] runs many probes side by side,
//! [`testing`] runs a user's suite from `cargo test`;
//! [`project`] finds the suite a command works in (a user's own, or this repository's); [`import`] makes a
//! probe of a Claude Code session; [`cleanup`] makes sure a run leaves nothing behind; [`confine`] keeps every subject inside its sandbox.

pub mod check;
pub mod claims;
pub mod cleanup;
pub mod commands;
pub mod confine;
pub mod conformance;
pub mod discover;
pub mod exit;
pub mod fake_lsp;
pub mod fake_mcp;
pub mod host_view;
pub mod html;
pub mod import;
pub mod lab;
pub mod limits;
pub mod located;
pub mod observatory;
pub mod observe;
pub mod probe;
pub mod project;
pub mod run;
pub mod safe_fs;
pub mod serde_kind;
pub mod services;
pub mod sessions;
pub mod subject;
pub mod suite;
pub mod testing;
pub mod transcript;
pub mod versions;
