//! The Bash sandbox (Linux): bubblewrap confines a command to a read-only view of the system, a
//! writable sandbox root (the probe's sandbox: cwd, HOME, tmp), its own pid namespace (nothing outlives
//! it) and, unless the settings allow it, no network. `settings.sandbox` (a subset of Claude Code's
//! settings.json `sandbox` table):
//!
//! ```toml
//! [settings.sandbox]
//! enabled = true                    # default false: commands run unconfined
//! allowUnsandboxedCommands = false  # honour a call's dangerouslyDisableSandbox (default true, like the reference)
//! allowNetwork = false              # keep the host's network (default false)
//! ```
//!
//! A write outside or a network attempt fails inside the command; the result then names the sandbox
//! violation. Where bubblewrap is missing or cannot create namespaces, the call fails with that reason:
//! the runtime never silently runs a command unconfined that was meant to be confined.

use super::{ToolContext, ToolError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// `settings.sandbox`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SandboxSettings {
    /// Confine Bash commands.
    #[serde(default)]
    pub enabled: bool,
    /// A call's `dangerouslyDisableSandbox: true` is honoured (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_unsandboxed_commands: Option<bool>,
    /// Network stays on inside the sandbox.
    #[serde(default)]
    pub allow_network: bool,
}

/// How one command will run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    confined: bool,
    network: bool,
    /// Why the sandbox is not used although enabled (dangerouslyDisableSandbox honoured), or a note
    /// that the flag was ignored.
    pub note: Option<String>,
}

/// Decides how a call runs: the settings, the call's `dangerouslyDisableSandbox`, and whether
/// bubblewrap is there.
pub fn plan(ctx: &ToolContext, disable: bool) -> Result<Plan, ToolError> {
    let s = &ctx.sandbox;
    if !s.enabled {
        return Ok(Plan { confined: false, network: true, note: None });
    }
    if disable {
        if s.allow_unsandboxed_commands.unwrap_or(true) {
            return Ok(Plan { confined: false, network: true, note: None });
        }
        // not allowed: run confined anyway and say so
        return available().map(|_| Plan {
            confined: true,
            network: s.allow_network,
            note: Some(
                "dangerouslyDisableSandbox was ignored: settings.sandbox.allowUnsandboxedCommands is false".into(),
            ),
        });
    }
    available()?;
    Ok(Plan { confined: true, network: s.allow_network, note: None })
}

fn available() -> Result<(), ToolError> {
    let found =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).any(|d| d.join("bwrap").is_file())).unwrap_or(false);
    if found {
        Ok(())
    } else {
        Err(ToolError::Runtime(
            "Sandbox unavailable: bubblewrap (bwrap) is not installed; the command did not run. Install the Debian package `bubblewrap`, or turn settings.sandbox.enabled off.".into(),
        ))
    }
}

impl Plan {
    /// Runs confined.
    pub fn confined(&self) -> bool {
        self.confined
    }

    /// The process to spawn for `script` in `cwd`; unconfined, with `join` (a cgroup's `cgroup.procs`)
    /// the shell writes its pid there first and then execs `bash -c script` (same pid, already inside).
    pub fn command(&self, ctx: &ToolContext, cwd: &Path, script: &str, join: Option<&Path>) -> tokio::process::Command {
        if !self.confined {
            let mut c = tokio::process::Command::new("bash");
            match join {
                Some(procs) => {
                    c.args(["-c", r#"echo $$ >| "$1" 2>/dev/null; exec bash -c "$2""#, "bash"]).arg(procs).arg(script)
                }
                None => c.arg("-c").arg(script),
            };
            c.current_dir(cwd);
            return c;
        }
        let mut c = tokio::process::Command::new("bwrap");
        c.args(["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]);
        if !self.network {
            c.arg("--unshare-net");
        }
        c.args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]);
        for root in &ctx.roots {
            c.arg("--bind").arg(root).arg(root);
        }
        c.arg("--chdir").arg(cwd).args(["--", "bash", "-c"]).arg(script);
        c
    }

    /// bubblewrap's own failure (it could not set the sandbox up): the command did not run.
    pub fn setup_failure(&self, code: i32, output: &str) -> Option<String> {
        let first = output.lines().next().unwrap_or_default();
        (self.confined && code != 0 && first.starts_with("bwrap: "))
            .then(|| format!("Sandbox unavailable ({first}); the command did not run, and it is not run unconfined."))
    }

    /// The violations the output shows, as one line for the result.
    pub fn violations(&self, output: &str) -> Option<String> {
        if !self.confined {
            return None;
        }
        let mut v = Vec::new();
        if output.contains("Read-only file system") {
            v.push("a write outside the sandbox's writable root was refused (Read-only file system)");
        }
        let net = [
            "Network is unreachable",
            "Could not resolve host",
            "Temporary failure in name resolution",
            "Name or service not known",
        ];
        if !self.network && net.iter().any(|n| output.contains(n)) {
            v.push("network access is off in the sandbox");
        }
        (!v.is_empty()).then(|| format!("<sandbox_violations>{}</sandbox_violations>", v.join("; ")))
    }
}
