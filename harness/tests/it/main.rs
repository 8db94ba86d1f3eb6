//! Integration tests of the harness: the CLI (exit codes, malformed probes, bless), the pipeline's
//! behaviour that probes cannot show alone (parallel batches, budgets), and golden sensitivity.

mod agent;
mod cli;
mod html_report;
mod lsp_real;
mod mcp;
