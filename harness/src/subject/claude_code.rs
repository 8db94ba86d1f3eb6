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
use std::collections::BTreeMap;
use std::path::PathBuf;

pub use super::id::REFERENCE_VERSION;

pub use crate::versions::{cache_root, PACKAGE, PLATFORM_PACKAGE};

/// The fake key the binary sends (the record redacts it anyway).
pub const FAKE_API_KEY: &str = "sk-ant-probelab-fake-key";

/// An installed version, held: while a `ClaudeCode` (or a clone of it) lives, no probelab evicts or
/// replaces its binary (a shared lock on the version, see [`crate::versions::Cache`]).
#[derive(Debug, Clone)]
pub struct ClaudeCode {
    id: super::id::SubjectId,
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

pub use super::error::InstallError;
use super::error::{ConverseError, SubjectError};

/// Installs (or finds in the cache) a version, through the install cache ([`crate::versions::Cache`]
/// as the environment sets it: `PROBELAB_CACHE`, `PROBELAB_CACHE_MAX`, `PROBELAB_NPM`); a clear error
/// when npm or the version is unavailable. The returned value holds the install until it is dropped.
pub fn install(version: &str) -> Result<ClaudeCode, InstallError> {
    let v = semver::Version::parse(version)
        .map_err(|source| InstallError::NotAVersion { version: version.to_string(), source })?;
    install_version(&v)
}

/// [`install`] of a version already parsed (a subject id's).
pub fn install_version(v: &super::id::Version) -> Result<ClaudeCode, InstallError> {
    let cache = crate::versions::Cache::from_env()?;
    let installed = cache.ensure(v)?;
    Ok(ClaudeCode {
        id: super::id::SubjectId::claude_code(v.clone()),
        version: v.to_string(),
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

/// Its registration ([`super::REGISTERED`]): installed by version at set-up.
pub const REGISTRATION: super::api::Registration = super::api::Registration {
    kind: super::id::SubjectKind::ClaudeCode,
    versioned: super::api::Versioned::Required,
    usage: "claude-code@V",
    about: "the Claude Code CLI at version V, installed from npm into the cache (`probelab versions`)",
    speaks: None,
    pinned: None,
    prepare: |id| {
        let v = id
            .version
            .as_ref()
            .ok_or_else(|| SubjectError::NoVersion { subject: id.to_string(), kind: "Claude Code" })?;
        Ok(std::sync::Arc::new(install_version(v)?))
    },
};

impl super::api::Subject for ClaudeCode {
    fn id(&self) -> &super::id::SubjectId {
        &self.id
    }

    fn description(&self) -> String {
        super::id::describe(super::id::CLAUDE_CODE, &self.version, Some(&self.sha256))
    }

    fn rg_engine(&self, _lab_engine: &std::path::Path) -> Option<Result<(PathBuf, String), super::error::EngineError>> {
        Some(Ok((self.binary.clone(), self.sha256.clone())))
    }

    fn adjust_script(&self, _probe: &crate::probe::Probe, script: &mut stub_messages::Script) {
        // a real binary's versions defer different tools: the stub loads the ones the probe calls first
        // (a ToolSearch prelude, shown in the transcript, not a scripted turn)
        script.stub.load_deferred.get_or_insert(true);
    }

    fn converse<'a>(
        &'a self,
        c: super::api::Conversation<'a>,
    ) -> futures_util::future::LocalBoxFuture<'a, Result<super::api::Ended, ConverseError>> {
        Box::pin(async move {
            let cmd = command(self, c.probe, c.base_url, c.sandbox, c.confine.as_ref())?;
            let ended = super::process::run(cmd, &format!("{}", self.binary.display()), c.until, c.stop).await?;
            let end = match (ended.stopped, ended.timed_out, ended.code) {
                (true, ..) => super::api::RunEnd::cap_passed(),
                (_, true, _) => {
                    super::api::RunEnd::Failed(format!("claude passed the deadline of {}s", c.probe.deadline_secs))
                }
                (_, _, Some(0)) => super::api::RunEnd::Finished,
                (_, _, code) => {
                    super::api::RunEnd::Failed(format!("claude exited with {code:?}: {}", ended.stderr_tail(5)))
                }
            };
            let stream_json = if ended.timed_out { String::new() } else { ended.stdout };
            let artefact = (!ended.stopped).then(|| serde_json::json!({ "stream_json": stream_json }));
            let lifetime = (ended.spawned, ended.exited);
            Ok(super::api::Ended { end, within_deadline: !ended.timed_out, artefact, lifetime })
        })
    }
}

/// The command that runs `claude -p` in the sandbox against the stub at `url` (the probe's settings,
/// MCP servers and plugins written beside it first), confined by `confine` unless the probe opted out
/// ([`crate::confine`]).
pub fn command(
    cc: &ClaudeCode,
    probe: &Probe,
    url: &str,
    sandbox: &Sandbox,
    confine: Option<&probelab_runtime::confine::Confinement>,
) -> Result<tokio::process::Command, ConverseError> {
    let (cwd, home, root) = (&sandbox.cwd, &sandbox.home, &sandbox.root);
    super::api::write_claude_settings(probe, sandbox)?;
    // the binary's temp files (background task output, …) stay in the sandbox and go with it
    let tmp = root.join("tmp");
    std::fs::create_dir_all(&tmp).map_err(|source| ConverseError::CreateDir { path: tmp.clone(), source })?;
    // MCP servers of the probe: a config file beside the cwd, given with --mcp-config
    let mut mcp_args: Vec<std::ffi::OsString> = Vec::new();
    if !probe.mcp_servers.is_empty() {
        let path = root.join("mcp-config.json");
        let json = serde_json::to_vec_pretty(&mcp_config(&sandbox.mcp_servers(probe)))
            .map_err(|source| ConverseError::Json { what: "the MCP config", source })?;
        std::fs::write(&path, json).map_err(|source| ConverseError::WriteFile { path: path.clone(), source })?;
        mcp_args.push("--mcp-config".into());
        mcp_args.push(path.into());
    }
    // LSP-3: the probe's plugins (LSP servers) as plugin dirs beside the cwd, given with --plugin-dir
    let mut plugin_args: Vec<std::ffi::OsString> = Vec::new();
    for p in sandbox.plugins(probe) {
        let dir = p
            .write_dir(&root.join("plugins"))
            .map_err(|source| ConverseError::Plugin { name: p.name.clone(), source })?;
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
    let base: probelab_runtime::confine::Env = vec![
        ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
        ("HOME".into(), home.clone().into()),
        ("IS_SANDBOX".into(), "1".into()),
        ("ANTHROPIC_BASE_URL".into(), url.into()),
        ("ANTHROPIC_API_KEY".into(), FAKE_API_KEY.into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(), "1".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("TMPDIR".into(), tmp.clone().into()),
    ];
    let vars = probelab_runtime::confine::with_env(
        probelab_runtime::confine::with_env(base, sandbox.env(probe)),
        &probe.subject.claude_code.env,
    );
    Ok(probelab_runtime::confine::command(confine, &cc.binary, args, cwd, &vars))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_that_does_not_parse_is_refused_before_the_cache_is_touched() {
        let e = install("2.1").err().unwrap();
        assert!(matches!(&e, InstallError::NotAVersion { version, .. } if version == "2.1"), "{e:?}");
        let said = crate::exit::chain(&e);
        let head = format!("claude-code@2.1: not a version (write e.g. claude-code@{REFERENCE_VERSION}): ");
        assert!(said.starts_with(&head) && said.len() > head.len(), "{said}");
    }
}
