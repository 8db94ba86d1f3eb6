//! The real subject: the Claude Code CLI at a given version (`claude-code@2.1.235`). probelab installs
//! the npm package `@anthropic-ai/claude-code@VERSION` into a cache outside the repo (its optional
//! dependency `@anthropic-ai/claude-code-linux-x64` carries the ~330 MB native binary; no postinstall is
//! run), records the binary's SHA-256, and runs it in the probe's sandbox with the reference recipe:
//!
//! ```text
//! cd <sandbox>/work
//! HOME=<sandbox>/home IS_SANDBOX=1 ANTHROPIC_BASE_URL=<stub> ANTHROPIC_API_KEY=<fake> \
//! CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
//! claude -p "<prompt>" --dangerously-skip-permissions --output-format stream-json --verbose [probe args]
//! ```
//!
//! The probe's `[env]` and `[subject.claude-code]` `args` / `env` are added; its `[settings]` become the
//! project's `.claude/settings.json`. The stream-json output is kept as an artefact; the evidence is the
//! stub's record, as for every subject.

use crate::probe::sandbox::Sandbox;
use crate::probe::Probe;
use probelab_runtime::config::ServerSpec;
use probelab_runtime::settings::Settings;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The version the lab's goldens and CI follow (the one measured in the reference notes).
pub const REFERENCE_VERSION: &str = "2.1.235";

/// The npm package.
pub const PACKAGE: &str = "@anthropic-ai/claude-code";
/// The platform package that holds the native binary on this machine.
pub const PLATFORM_PACKAGE: &str = "@anthropic-ai/claude-code-linux-x64";
/// The fake key the binary sends (the record redacts it anyway).
pub const FAKE_API_KEY: &str = "sk-ant-probelab-fake-key";

/// An installed version.
#[derive(Debug, Clone)]
pub struct ClaudeCode {
    /// `2.1.235`.
    pub version: String,
    /// The native binary.
    pub binary: PathBuf,
    /// Its SHA-256.
    pub sha256: String,
}

/// The version named by a subject (`claude-code@2.1.235` → `2.1.235`).
pub fn version_of(subject: &str) -> Option<&str> {
    subject
        .strip_prefix("claude-code@")
        .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-')))
}

/// The cache root: `$PROBELAB_CACHE`, else `$XDG_CACHE_HOME/probelab`, else `~/.cache/probelab`.
pub fn cache_root() -> PathBuf {
    std::env::var_os("PROBELAB_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("probelab")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/probelab")))
        .unwrap_or_else(|| PathBuf::from(".cache/probelab"))
}

/// Installs (or finds in the cache) a version; a clear error when npm or the version is unavailable.
pub fn install(version: &str) -> Result<ClaudeCode, String> {
    let dir = cache_root().join("claude-code").join(version);
    let binary = dir.join("node_modules").join(PLATFORM_PACKAGE).join("claude");
    if !binary.is_file() {
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let out = std::process::Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-save", "--prefix"])
            .arg(&dir)
            .arg(format!("{PACKAGE}@{version}"))
            .output()
            .map_err(|e| format!("cannot run npm to install {PACKAGE}@{version}: {e} (is Node.js/npm installed?)"))?;
        if !out.status.success() {
            return Err(format!(
                "npm could not install {PACKAGE}@{version}:\n{}",
                String::from_utf8_lossy(&out.stderr).trim_end()
            ));
        }
        if !binary.is_file() {
            return Err(format!(
                "{PACKAGE}@{version} installed, but {} is missing: the linux-x64 binary package did not come with it",
                binary.display()
            ));
        }
    }
    let sha256 = cached_sha256(&binary)?;
    Ok(ClaudeCode { version: version.to_string(), binary, sha256 })
}

/// The binary's SHA-256, cached beside it (keyed by size and mtime: hashing 330 MB costs a second).
fn cached_sha256(binary: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(binary).map_err(|e| e.to_string())?;
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).unwrap_or_default();
    let key = format!("{}:{}.{:09}", meta.len(), mtime.as_secs(), mtime.subsec_nanos());
    let cache = binary.with_file_name("claude.sha256");
    if let Ok(text) = std::fs::read_to_string(&cache) {
        if let Some((k, h)) = text.trim().rsplit_once(' ') {
            if k == key {
                return Ok(h.to_string());
            }
        }
    }
    let bytes = std::fs::read(binary).map_err(|e| format!("{}: {e}", binary.display()))?;
    let h = crate::transcript::sha256(&bytes);
    let _ = std::fs::write(&cache, format!("{key} {h}\n"));
    Ok(h)
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

/// Runs `claude -p` in the sandbox against the stub at `url`.
pub async fn run(cc: &ClaudeCode, probe: &Probe, url: &str, sandbox: &Sandbox) -> Result<Ended, String> {
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
    let mut cmd = tokio::process::Command::new(&cc.binary);
    cmd.arg("-p")
        .arg(&probe.prompt)
        .args(["--dangerously-skip-permissions", "--output-format", "stream-json", "--verbose"])
        .args(&mcp_args)
        .args(&plugin_args)
        .args(&probe.subject.claude_code.args)
        .current_dir(cwd)
        .env_clear()
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
        .kill_on_drop(true);
    let spawned = std::time::Instant::now();
    let child = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", cc.binary.display()))?;
    let deadline = std::time::Duration::from_secs(probe.deadline_secs);
    let waited = tokio::time::timeout(deadline, child.wait_with_output()).await;
    let exited = std::time::Instant::now();
    match waited {
        Ok(Ok(o)) => Ok(Ended {
            code: o.status.code(),
            timed_out: false,
            stream_json: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            spawned,
            exited,
        }),
        Ok(Err(e)) => Err(format!("waiting for claude: {e}")),
        Err(_) => Ok(Ended {
            code: None,
            timed_out: true,
            stream_json: String::new(),
            stderr: String::new(),
            spawned,
            exited,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binary_hash_is_taken_from_the_cache_while_size_and_mtime_hold() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let bin = d.path().join("claude");
        std::fs::write(&bin, b"binary").unwrap_or_else(|e| panic!("{e}"));
        let real = crate::transcript::sha256(b"binary");
        assert_eq!(cached_sha256(&bin).unwrap_or_else(|e| panic!("{e}")), real);
        // a cache entry with the same key is believed (the 330 MB file is not read again)
        let cache = d.path().join("claude.sha256");
        let text = std::fs::read_to_string(&cache).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&cache, text.replace(&real, "cafe")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cached_sha256(&bin).unwrap_or_else(|e| panic!("{e}")), "cafe");
        // a changed binary (size) is hashed again
        std::fs::write(&bin, b"binary2").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cached_sha256(&bin).unwrap_or_else(|e| panic!("{e}")), crate::transcript::sha256(b"binary2"));
    }

    #[test]
    fn versions_are_named_safely() {
        assert_eq!(version_of("claude-code@2.1.235"), Some("2.1.235"));
        assert_eq!(version_of("claude-code@../x"), None);
        assert_eq!(version_of("builtin"), None);
    }
}
