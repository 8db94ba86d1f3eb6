//! The names of a run's placeholders and the probelab binary `{probelab}` stands for: a leaf, so the
//! parser can validate a `matches` regex before any sandbox exists ([`placeholders_as_literals`]) and the
//! sandbox can resolve them ([`super::sandbox`]).

use std::path::{Path, PathBuf};

/// The `{probelab}` placeholder's name: the probelab binary (its `fake-mcp` and `fake-lsp` subcommands
/// are the fixture servers of MCP and LSP probes).
pub const PROBELAB: &str = "probelab";
/// Every placeholder a run resolves: the sandbox's three, `{probelab}`, and those the run's services
/// add (`{web}`, `{artifact}`).
pub const PLACEHOLDERS: &[&str] = &["cwd", "home", "sandbox", PROBELAB, "web", "artifact"];

/// `re` with each placeholder replaced by `literal` (checked to be a regex literal by the caller): how a
/// probe's `matches` is validated before any run has its values.
pub fn placeholders_as_literals(re: &str, literal: &str) -> String {
    PLACEHOLDERS.iter().fold(re.to_string(), |out, name| out.replace(&format!("{{{name}}}"), literal))
}

/// Env override of the probelab binary `{probelab}` names.
pub const ENV_PROBELAB_BIN: &str = "PROBELAB_BIN";

/// The probelab binary: `$PROBELAB_BIN`, else this executable when it is probelab, else the `probelab`
/// beside or above it (a test binary in `target/<profile>/deps/`).
pub fn probelab_binary() -> PathBuf {
    if let Some(p) = std::env::var_os(ENV_PROBELAB_BIN) {
        return PathBuf::from(p);
    }
    let Ok(exe) = std::env::current_exe() else { return PathBuf::from("probelab") };
    if exe.file_stem().is_some_and(|n| n == "probelab") {
        return exe;
    }
    let dir = exe.parent().unwrap_or(Path::new("."));
    [dir.join("probelab"), dir.join("..").join("probelab")]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("probelab"))
}
