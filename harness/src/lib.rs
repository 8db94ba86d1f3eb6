//! # probelab harness
//!
//! The probe lab: probe files go in ([`probe`]), a subject runs them against stub-messages (the
//! built-in [`tools`] runtime through its [`pipeline`] and [`agent`] loop, see [`run`]), the stub's record
//! is checked ([`check`]), rendered as a transcript and compared with its golden file ([`transcript`]);
//! [`lab`] ties these together for the CLI and the tests.

pub mod agent;
pub mod check;
pub mod claims;
pub mod fake_lsp;
pub mod fake_mcp;
pub mod hooks;
pub mod lab;
pub mod permissions;
pub mod pipeline;
pub mod probe;
pub mod run;
pub mod schema;
pub mod search;
pub mod services;
pub mod subject;
pub mod tools;
pub mod transcript;
pub mod versions;
