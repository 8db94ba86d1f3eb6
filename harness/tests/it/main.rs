//! Integration tests of the harness: the CLI (exit codes, malformed probes, bless), the pipeline's
//! behaviour that probes cannot show alone (parallel batches, budgets), and golden sensitivity.

// the sandbox and context builders the runtime's integration tests use too, with their failure dump
#[path = "../../../runtime/tests/support/mod.rs"]
mod support;

mod common;

mod agent;
mod agents;
mod cli;
mod command_subject;
mod confine;
mod determinism;
mod discover;
mod hang;
mod hostile;
mod html_report;
mod kill;
mod lsp_real;
mod mcp;
mod observatory;
mod own_suite;
mod probe_fuzz;
mod profiles;
mod surface_fuzz;
