//! The real subject: the Claude Code CLI at a given version (`claude-code@2.1.235`). probelab installs
//! the npm package `@anthropic-ai/claude-code@VERSION` into a cache outside the repo (its optional
//! dependency `@anthropic-ai/claude-code-linux-x64` carries the ~330 MB native binary; no postinstall is
//! run; the cache, its locks, cap and metadata are [`crate::versions::Cache`]), records the binary's
//! SHA-256, and runs it in the probe's sandbox with the reference recipe:
//!
//! ```text
//! cd <sandbox>/work
//! HOME=<sandbox>/home IS_SANDBOX=1 ANTHROPIC_BASE_URL=<stub> ANTHROPIC_API_KEY=<fake> \
//! CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
//! claude -p "<prompt>" --dangerously-skip-permissions --output-format stream-json --verbose
//!   [--mcp-config …] [--plugin-dir …] [--session-id <[subject] session_id>] [probe args]
//! ```
//!
//! The probe's `[env]` and `[subject.claude-code]` `args` / `env` are added; its `[settings]` become the
//! project's `.claude/settings.json`. The binary runs under the lab's confinement ([`crate::confine`]:
//! bubblewrap, the host read-only, only the sandbox writable, the stub and the probe's services the only
//! network) unless the probe opts out. The stream-json output is kept as an artefact; the evidence is the
//! stub's record, as for every subject.

use crate::probe::sandbox::Sandbox;
use crate::probe::Probe;
use probelab_runtime::config::ServerSpec;
use probelab_runtime::settings::Settings;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The version the lab's goldens and CI follow (the one measured in the reference notes).
pub const REFERENCE_VERSION: &str = "2.1.235";

pub use crate::versions::{cache_root, PACKAGE, PLATFORM_PACKAGE};

/// The fake key the binary sends (the record redacts it anyway).
pub const FAKE_API_KEY: &str = "sk-ant-probelab-fake-key";

/// An installed version, held: while a `ClaudeCode` (or a clone of it) lives, no probelab evicts or
/// replaces its binary (a shared lock on the version, see [`crate::versions::Cache`]).
#[derive(Debug, Clone)]
pub struct ClaudeCode {
    /// `2.1.235`.
    pub version: String,
    /// The native binary.
    pub binary: PathBuf,
    /// Its SHA-256.
    pub sha256: String,
    _lease: std::sync::Arc<crate::versions::Lease>,
}

impl ClaudeCode {
    /// Ok when the binary is the one a golden header recorded (`binary sha256 <hex>`); else the error
    /// naming both hashes and the fix.
    pub fn check_sha256(&self, expected: &str) -> Result<(), crate::versions::VersionError> {
        crate::versions::check_sha256(&self.version, &self.binary, &self.sha256, expected)
    }
}

/// The version named by a subject (`claude-code@2.1.235` → `2.1.235`).
pub fn version_of(subject: &str) -> Option<&str> {
    subject
        .strip_prefix("claude-code@")
        .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-')))
}

/// Installs (or finds in the cache) a version, through the install cache ([`crate::versions::Cache`]
/// as the environment sets it: `PROBELAB_CACHE`, `PROBELAB_CACHE_MAX`, `PROBELAB_NPM`); a clear error
/// when npm or the version is unavailable. The returned value holds the install until it is dropped.
pub fn install(version: &str) -> Result<ClaudeCode, String> {
    let v = semver::Version::parse(version).map_err(|e| {
        format!("claude-code@{version}: not a version ({e}); write e.g. claude-code@{REFERENCE_VERSION}")
    })?;
    let cache = crate::versions::Cache::from_env().map_err(|e| e.to_string())?;
    let installed = cache.ensure(&v).map_err(|e| e.to_string())?;
    Ok(ClaudeCode {
        version: version.to_string(),
        binary: installed.binary,
        sha256: installed.sha256,
        _lease: std::sync::Arc::new(installed.lease),
    })
}

/// Claude Code's MCP config file (`--mcp-config`): `{"mcpServers": {name: {"type": "stdio", …}}}`.
pub fn mcp_config(servers: &BTreeMap<String, ServerSpec>) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (name, s) in servers {
        let mut v = serde_json::json!({"type": "stdio", "command": s.command, "args": s.args});
        if !s.env.is_empty() {
            v["env"] = serde_json::json!(s.env);
        }
        m.insert(name.clone(), v);
    }
    serde_json::json!({ "mcpServers": m })
}

/// How a run of the binary ended.
#[derive(Debug, Clone)]
pub struct Ended {
    /// Exit code (None: killed).
    pub code: Option<i32>,
    /// Killed at the deadline.
    pub timed_out: bool,
    /// The stream-json output.
    pub stream_json: String,
    /// Its stderr.
    pub stderr: String,
    /// When the process was started.
    pub spawned: std::time::Instant,
    /// When it exited (or was killed at the deadline).
    pub exited: std::time::Instant,
}

/// Runs `claude -p` in the sandbox against the stub at `url`, killed (with everything it started) at
/// `until`, the probe's deadline.
pub async fn run(
    cc: &ClaudeCode,
    probe: &Probe,
    url: &str,
    sandbox: &Sandbox,
    until: std::time::Instant,
    confine: Option<&probelab_runtime::confine::Confinement>,
) -> Result<Ended, String> {
    let (cwd, home, root) = (&sandbox.cwd, &sandbox.home, &sandbox.root);
    if probe.settings != Settings::default() {
        let dir = cwd.join(".claude");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let json = serde_json::to_vec_pretty(&probe.settings).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("settings.json"), json).map_err(|e| e.to_string())?;
    }
    // the binary's temp files (background task output, …) stay in the sandbox and go with it
    let tmp = root.join("tmp");
    std::fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    // MCP servers of the probe: a config file beside the cwd, given with --mcp-config
    let mut mcp_args: Vec<std::ffi::OsString> = Vec::new();
    if !probe.mcp_servers.is_empty() {
        let path = root.join("mcp-config.json");
        let json = serde_json::to_vec_pretty(&mcp_config(&sandbox.mcp_servers(probe))).map_err(|e| e.to_string())?;
        std::fs::write(&path, json).map_err(|e| format!("{}: {e}", path.display()))?;
        mcp_args.push("--mcp-config".into());
        mcp_args.push(path.into());
    }
    // LSP-3: the probe's plugins (LSP servers) as plugin dirs beside the cwd, given with --plugin-dir
    let mut plugin_args: Vec<std::ffi::OsString> = Vec::new();
    for p in sandbox.plugins(probe) {
        let dir = p.write_dir(&root.join("plugins")).map_err(|e| format!("cannot write plugin {}: {e}", p.name))?;
        plugin_args.push("--plugin-dir".into());
        plugin_args.push(dir.into_os_string());
    }
    let args = ["-p", &probe.prompt, "--dangerously-skip-permissions", "--output-format", "stream-json", "--verbose"]
        .into_iter()
        .map(std::ffi::OsString::from)
        .chain(mcp_args)
        .chain(plugin_args)
        .chain(probe.subject.session_id.iter().flat_map(|id| ["--session-id", id.as_str()]).map(Into::into))
        .chain(probe.subject.claude_code.args.iter().map(Into::into));
    // confined by the lab unless the probe opted out (crate::confine): bubblewrap, then the binary
    let mut cmd = probelab_runtime::confine::command(confine, &cc.binary, args, cwd);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("IS_SANDBOX", "1")
        .env("ANTHROPIC_BASE_URL", url)
        .env("ANTHROPIC_API_KEY", FAKE_API_KEY)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("LANG", "C.UTF-8")
        .env("TMPDIR", &tmp)
        .envs(&probe.env)
        .envs(&probe.subject.claude_code.env)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let spawned = std::time::Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", cc.binary.display()))?;
    // claude, its Bash commands (which it starts in sessions of their own) and its servers: killed as a
    // tree at the deadline, while claude still holds them; its group goes when this call ends anyway
    let group = probelab_runtime::process::Group::led_by(child.id());
    let read = |r: Option<Box<dyn tokio::io::AsyncRead + Send + Unpin>>| {
        tokio::spawn(async move {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = tokio::io::AsyncReadExt::read_to_end(&mut r, &mut buf).await;
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let stdout = read(child.stdout.take().map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>));
    let stderr = read(child.stderr.take().map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>));
    let waited = tokio::time::timeout_at(until.into(), child.wait()).await;
    let exited = std::time::Instant::now();
    let timed_out = waited.is_err();
    if let Some(g) = &group {
        g.kill();
    }
    let status = match waited {
        Ok(Ok(st)) => Some(st),
        Ok(Err(e)) => return Err(format!("waiting for claude: {e}")),
        Err(_) => child.wait().await.ok(),
    };
    let (stream_json, stderr) = (stdout.await.unwrap_or_default(), stderr.await.unwrap_or_default());
    Ok(Ended {
        code: if timed_out { None } else { status.and_then(|s| s.code()) },
        timed_out,
        stream_json: if timed_out { String::new() } else { stream_json },
        stderr: if timed_out { String::new() } else { stderr },
        spawned,
        exited,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_named_safely() {
        assert_eq!(version_of("claude-code@2.1.235"), Some("2.1.235"));
        assert_eq!(version_of("claude-code@../x"), None);
        assert_eq!(version_of("builtin"), None);
    }
}
