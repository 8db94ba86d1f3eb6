//! Integration tests of the runtime's tools on the real machine, through the pool as the lab gets it:
//! the Bash tool's edges (the fork bomb in its pids cgroup, timeouts of process trees) and the Grep tool
//! on hostile inputs — cases that need real processes and files, and end within their deadlines.

#[path = "../support/mod.rs"]
mod support;

mod bash_edges;
mod resolver;
mod search_limits;
