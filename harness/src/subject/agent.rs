//! What the third-party agents share: an npm package installed by version into the cache (the install
//! cache of [`crate::versions`]: atomic installs, locks, the program's SHA-256 checked at each use, the
//! cap and LRU eviction; `npm install --ignore-scripts`, so no install script of the package or its
//! dependencies runs), its tools put in Claude Code's terms by its [`Dialect`], and one run per probe:
//!
//! - confined like every subject ([`crate::confine`]: bubblewrap, the host read-only, only the probe's
//!   sandbox writable, no network but the stub), a clean environment (`PATH` with the cache's `rg` / `fd`
//!   first, `HOME` and `TMPDIR` in the sandbox, `LANG`, a dummy key, what the agent's module adds, then
//!   the probe's `[env]`), its configuration written into the sandbox's HOME or cwd by its module;
//! - killed with everything it started at the deadline or at the record's cap ([`super::process`]);
//!   exit 0 ends the conversation, any other exit is a failed run with its stderr's last lines.
//!
//! A probe the agent cannot be given is n/a there with the reason ([`Agent::unsupported`]): a tool call
//! its dialect has no counterpart for, or Claude Code's own configuration (settings, MCP servers,
//! plugins, command-line options other than `--model`), which the agent does not read.
//!
//! An agent is a module (`opencode.rs`, `pi.rs`) with an [`AgentSpec`] and a [`super::Registration`]
//! made by [`registration`]-style constants, and its line in [`super::REGISTERED`].

use super::api::{Conversation, Ended, Subject};
use super::dialect::Dialect;
use super::error::{ConverseError, SubjectError};
use super::id::SubjectId;
use crate::probe::Probe;
use futures_util::future::LocalBoxFuture;
use std::path::PathBuf;
use std::sync::Arc;

/// The key every agent is given (the record redacts keys anyway; the stub is its only endpoint).
pub const DUMMY_KEY: &str = "sk-ant-probelab-fake-key";

/// What the lab gives an agent's module to start one run with.
pub struct Start<'a> {
    /// The conversation (probe, sandbox, stub, deadline).
    pub c: &'a Conversation<'a>,
    /// The installed program (its SHA-256 is the subject's).
    pub program: &'a std::path::Path,
    /// The stub's root without a trailing slash (`http://127.0.0.1:PORT`).
    pub base_url: String,
}

/// The argv after the program, and the environment added to the lab's clean base.
pub type Launched = (Vec<String>, Vec<(String, String)>);

/// How an agent's module starts it ([`Launched`]); it writes its configuration files into the sandbox
/// itself.
pub type Launch = fn(&Start<'_>) -> Result<Launched, ConverseError>;

/// One third-party agent.
pub struct AgentSpec {
    /// Its kind, also its name (`opencode`).
    pub kind: &'static str,
    /// Its npm package, its program and version line.
    pub install: &'static crate::versions::Kind,
    /// Its dialect file's name and text.
    pub dialect: (&'static str, &'static str),
    /// The tools its pinned version sent in its first request (`{"tools": [...]}`): name and text, what
    /// `probelab dialect check` checks the dialect against.
    pub recorded_tools: (&'static str, &'static str),
    /// The host parts it needs (`rg`, `fd`, `node`).
    pub requires: &'static [&'static str],
    /// Starts it.
    pub launch: Launch,
}

/// An installed agent, held (its lease keeps the install from eviction while it lives).
pub struct Agent {
    id: SubjectId,
    spec: &'static AgentSpec,
    version: String,
    program: PathBuf,
    sha256: String,
    tree_sha256: Option<String>,
    dialect: Dialect,
    _lease: crate::versions::Lease,
}

impl Agent {
    /// Installs (or finds in the cache) the agent at the id's version.
    pub fn prepare(spec: &'static AgentSpec, id: &SubjectId) -> Result<Arc<dyn Subject>, SubjectError> {
        let v = id
            .version
            .as_deref()
            .ok_or_else(|| SubjectError::NoVersion { subject: id.to_string(), kind: spec.kind })?;
        let version =
            semver::Version::parse(v).map_err(|source| SubjectError::BadVersion { subject: id.to_string(), source })?;
        let dialect = Dialect::parse(spec.dialect.0, spec.dialect.1).map_err(SubjectError::from)?;
        let cache = crate::versions::Cache::from_env_of(spec.install)
            .map_err(|e| SubjectError::Cache { subject: format!("{}@{v}", spec.kind), source: Box::new(e) })?;
        let installed = cache
            .ensure(&version)
            .map_err(|e| SubjectError::Cache { subject: format!("{}@{v}", spec.kind), source: Box::new(e) })?;
        Ok(Arc::new(Agent {
            id: id.clone(),
            spec,
            version: v.to_string(),
            program: installed.binary,
            sha256: installed.sha256,
            tree_sha256: installed.tree_sha256,
            dialect,
            _lease: installed.lease,
        }))
    }

    /// Its dialect.
    pub fn dialect(&self) -> &Dialect {
        &self.dialect
    }
}

/// Why a probe cannot be put to an agent speaking `dialect`, if it cannot (see the module doc).
pub fn unsupported(dialect: &Dialect, probe: &Probe) -> Option<String> {
    if probe.settings != probelab_runtime::settings::Settings::default() {
        return Some(format!("the probe sets Claude Code's settings, which {} does not read", dialect.agent));
    }
    if !probe.mcp_servers.is_empty() {
        return Some("the probe's MCP servers are given to Claude Code's --mcp-config".into());
    }
    if !probe.plugins.is_empty() {
        return Some("the probe's plugins are Claude Code's".into());
    }
    let args = &probe.subject.claude_code.args;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            // the model is the stub's to play; --allowedTools only turns tools on in Claude Code (Glob in
            // some releases): the agent has its tools, and a call its dialect lacks is n/a by itself
            "--model" | "--allowedTools" | "--allowed-tools" => i += 2,
            other => return Some(format!("the probe gives Claude Code the option {other}")),
        }
    }
    dialect.unsupported(&probe.script)
}

impl Subject for Agent {
    fn id(&self) -> &SubjectId {
        &self.id
    }

    fn description(&self) -> String {
        let tree = self.tree_sha256.as_ref().map(|t| format!(", package tree sha256 {t}")).unwrap_or_default();
        format!("subject {} {}, program sha256 {}{tree}", self.spec.kind, self.version, self.sha256)
    }

    fn adjust_script(&self, _probe: &crate::probe::Probe, script: &mut stub_messages::Script) {
        self.dialect.translate(script);
    }

    fn unsupported(&self, probe: &Probe) -> Option<String> {
        unsupported(&self.dialect, probe)
    }

    fn dialect(&self) -> Option<&Dialect> {
        Some(&self.dialect)
    }

    fn requires(&self) -> Vec<String> {
        self.spec.requires.iter().map(|r| r.to_string()).collect()
    }

    fn converse<'a>(&'a self, c: Conversation<'a>) -> LocalBoxFuture<'a, Result<Ended, ConverseError>> {
        Box::pin(async move {
            let sb = c.sandbox;
            let tmp = sb.root.join("tmp");
            std::fs::create_dir_all(&tmp).map_err(|source| ConverseError::CreateDir { path: tmp.clone(), source })?;
            let start = Start { c: &c, program: &self.program, base_url: c.base_url.trim_end_matches('/').to_string() };
            let (args, env) = (self.spec.launch)(&start)?;
            // the programs it needs first on its PATH (the cache's rg and fd, node), then the lab's
            let dirs =
                self.spec.requires.iter().filter_map(|r| crate::probe::host::locate(r)?.parent().map(PathBuf::from));
            let path =
                std::env::join_paths(dirs.chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())))
                    .map_err(ConverseError::Path)?;
            use std::ffi::OsString;
            let base: probelab_runtime::confine::Env = vec![
                ("PATH".into(), path),
                ("HOME".into(), sb.home.clone().into()),
                ("LANG".into(), "C.UTF-8".into()),
                ("TMPDIR".into(), tmp.clone().into()),
                ("ANTHROPIC_API_KEY".into(), OsString::from(DUMMY_KEY)),
            ];
            let vars =
                probelab_runtime::confine::with_env(probelab_runtime::confine::with_env(base, env), sb.env(c.probe));
            let cmd = probelab_runtime::confine::command(c.confine.as_ref(), &self.program, &args, &sb.cwd, &vars);
            let name = self.id.to_string();
            let ended = super::process::run(cmd, &name, c.until, c.stop).await?;
            Ok(ended.ended(&name, c.probe.deadline_secs, serde_json::Map::new()))
        })
    }
}

/// Writes `text` at `dir/rel` (its directories made).
pub fn write_config(dir: &std::path::Path, rel: &str, text: &str) -> Result<(), ConverseError> {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|source| ConverseError::CreateDir { path: parent.to_path_buf(), source })?;
    }
    std::fs::write(&path, text).map_err(|source| ConverseError::WriteFile { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(extra: &str) -> Probe {
        let text = format!(
            "id = \"t.p\"\nclaims = [\"READ-1\"]\nabout = \"x\"\nsubjects = [\"claude-code\"]\n{extra}\n[[turn]]\ntool_use = [{{ name = \"Read\", input = {{ file_path = \"{{cwd}}/f\" }} }}]\n[[turn]]\ntext = \"done\"\n"
        );
        crate::probe::parse(std::path::Path::new("t.toml"), &text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn agents_are_named_by_version_and_run_claude_code_s_probes() {
        let r = super::super::Registry::default();
        let id = r.parse("pi@0.73.1").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((id.to_string(), id.answers_to("claude-code")), ("pi@0.73.1".to_string(), true));
        let bare = r.parse("opencode").map(|i| i.to_string());
        assert!(
            matches!(&bare, Err(super::super::SubjectError::Unknown { needs_version: Some(v), .. }) if v == "opencode@1.18.33"),
            "{bare:?}"
        );
        let said = bare.map_err(|e| e.to_string()).err().unwrap_or_default();
        assert!(said.contains("(it needs a version: opencode@1.18.33); the subjects are:\n  builtin"), "{said}");
    }

    #[test]
    fn a_probe_that_configures_claude_code_itself_is_n_a_with_the_reason() {
        let d = Dialect::parse("pi.toml", include_str!("../../dialects/pi.toml")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(unsupported(&d, &probe("")), None);
        let model = probe("[subject.claude-code]\nargs = [\"--model\", \"claude-sonnet-4-5\"]");
        assert_eq!(unsupported(&d, &model), None);
        let allowed = probe("[subject.claude-code]\nargs = [\"--allowedTools\", \"Grep,Glob\"]");
        assert_eq!(unsupported(&d, &allowed), None, "it only turns Claude Code's tools on");
        let plan =
            probe("[subject.claude-code]\nargs = [\"--allowedTools\", \"Read\", \"--permission-mode\", \"plan\"]");
        assert_eq!(unsupported(&d, &plan).as_deref(), Some("the probe gives Claude Code the option --permission-mode"));
        let settings = probe("[settings.permissions]\ndeny = [\"Read(x)\"]");
        assert_eq!(
            unsupported(&d, &settings).as_deref(),
            Some("the probe sets Claude Code's settings, which pi does not read")
        );
    }
}
