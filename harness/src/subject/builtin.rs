//! The built-in subject: probelab-runtime's tools behind its agent loop, in this process, on the probe's
//! runtime (its requests and the stub's answers take turns on one thread).

use super::api::{Conversation, Ended, Registration, RunEnd, Subject};
use super::error::{ConverseError, EngineError, SubjectError};
use super::id::SubjectId;
use futures_util::future::LocalBoxFuture;
use probelab_runtime::agent::{run_loop, Client};
use probelab_runtime::builtin::{self, SessionConfig};
use probelab_runtime::profile::Profile;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Model the built-in subject asks for unless the probe says otherwise.
pub const DEFAULT_MODEL: &str = "claude-opus-5";
/// Turn limit of the built-in loop unless the probe says otherwise.
pub const DEFAULT_MAX_TURNS: usize = 50;

/// Its registration ([`super::REGISTERED`]).
pub const REGISTRATION: Registration = Registration {
    kind: super::id::SubjectKind::Builtin,
    versioned: super::api::Versioned::Optional { check: |v| probelab_runtime::profile::known(v).map(drop).map_err(Into::into) },
    usage: "builtin[@V]",
    about: "the embedded Rust runtime (default), behaving as the newest Claude Code the matrix measured; @V: as Claude Code V (version profiles)",
    speaks: None,
    pinned: None,
    prepare: |id| {
        profile_of(id)?;
        Ok(Arc::new(Builtin { id: id.clone() }))
    },
};

/// The built-in subject (nothing to set up).
#[derive(Debug, Clone)]
pub struct Builtin {
    id: SubjectId,
}

/// The release a built-in subject id behaves as: its version, else (a bare `builtin`) the newest release
/// the matrix has measured (`profile::NEWEST`).
pub fn profile_of(id: &SubjectId) -> Result<Profile, SubjectError> {
    match &id.version {
        None => Ok(Profile::newest()),
        Some(v) => Profile::of(v).map_err(|source| SubjectError::Profile { subject: id.to_string(), source }),
    }
}

impl Builtin {
    /// The built-in subject at the version profile of `version` (`builtin@V`).
    pub fn at(version: &str) -> Result<Builtin, SubjectError> {
        let profile = Profile::at(version)
            .map_err(|source| SubjectError::Profile { subject: format!("{}@{version}", super::id::BUILTIN), source })?;
        let id = SubjectId { version: Some(profile.release()), ..SubjectId::builtin() };
        Ok(Builtin { id })
    }
}

impl Default for Builtin {
    fn default() -> Builtin {
        Builtin { id: SubjectId::builtin() }
    }
}

impl Subject for Builtin {
    fn id(&self) -> &SubjectId {
        &self.id
    }

    fn description(&self) -> String {
        super::id::describe(&self.id.name, env!("CARGO_PKG_VERSION"), None)
    }

    fn rg_engine(&self, lab_engine: &Path) -> Option<Result<(PathBuf, String), EngineError>> {
        let sha = super::api::engine_sha256(lab_engine)
            .map_err(|source| EngineError { path: lab_engine.to_path_buf(), source });
        Some(sha.map(|h| (lab_engine.to_path_buf(), h)))
    }

    fn serves_artifact(&self) -> bool {
        true
    }

    fn confined_whole(&self) -> bool {
        false
    }

    fn adjust_script(&self, probe: &crate::probe::Probe, script: &mut stub_messages::Script) {
        // a version profile (a bare `builtin` too: the newest) defers what its release defers: in a probe
        // the real binary runs too, the stub loads the tools the probe calls first, as for the real binary
        // (the prelude is due only where ToolSearch is offered and a called tool is not); a probe only the
        // built-in runs keeps its conversation as written (its checks count messages)
        let real = SubjectId::claude_code(self.id.reference_version());
        if probe.applies_to(&real) {
            script.stub.load_deferred.get_or_insert(true);
        }
    }

    fn converse<'a>(&'a self, c: Conversation<'a>) -> LocalBoxFuture<'a, Result<Ended, ConverseError>> {
        let profile = profile_of(&self.id);
        Box::pin(async move { converse(c, profile?).await })
    }
}

async fn converse(c: Conversation<'_>, profile: Profile) -> Result<Ended, ConverseError> {
    let (probe, sandbox, until) = (c.probe, c.sandbox, c.until);
    let passed = |what: &str| format!("the run passed its deadline of {}s{what}", probe.deadline_secs);
    let model = probe.subject.builtin.model.clone().unwrap_or_else(|| DEFAULT_MODEL.into());
    let client = Arc::new(Client::new(c.base_url, &model));
    // MCP-1: the probe's MCP servers are connected at the start, before the first request
    let config = SessionConfig {
        cwd: sandbox.cwd.clone(),
        home: sandbox.home.clone(),
        roots: vec![sandbox.root.clone()],
        session_id: probe.subject.session_id.clone().unwrap_or_else(|| builtin::SESSION_ID.into()),
        env: sandbox.env(probe),
        settings: sandbox.settings(probe),
        ask: probe.ask,
        model: Some(client.clone()),
        host: probe.host.clone(),
        clock: probe.clock.clone(),
        mcp_servers: sandbox.mcp_servers(probe),
        plugins: sandbox.plugins(probe),
        artifact_api: c.artifact_api.clone(),
        web: c.web,
        deadline: Some(until),
        confine: c.confine.clone(),
        profile,
    };
    let began = Instant::now();
    // MCP servers that never answer cost the deadline, no more (a server given up is killed with its
    // group when its connection is dropped)
    let runtime = match tokio::time::timeout_at(until.into(), builtin::start(config)).await {
        Err(_) => {
            let end = RunEnd::Failed(passed(" while starting its MCP servers"));
            return Ok(Ended { end, within_deadline: false, artefact: None, lifetime: (began, Instant::now()) });
        }
        Ok(Err(source)) => return Err(ConverseError::Settings { probe: probe.path.clone(), source }),
        Ok(Ok(runtime)) => runtime,
    };
    for (name, why) in builtin::mcp_failures(&runtime) {
        eprintln!("probelab: {}: MCP server {name:?} is left out: {why}", probe.path.display());
    }
    let max_turns = probe.subject.builtin.max_turns.unwrap_or(DEFAULT_MAX_TURNS);
    let conversation = run_loop(client.as_ref(), &runtime, &probe.prompt, max_turns);
    let (end, within_deadline) = tokio::select! {
        end = tokio::time::timeout_at(until.into(), conversation) => match end {
            Ok(_) if Instant::now() > until => (RunEnd::Failed(passed("")), false),
            Ok(end) => (end.into(), true),
            Err(_) => (RunEnd::Failed(passed("")), false),
        },
        _ = c.stop.notified() => (RunEnd::cap_passed(), true),
    };
    let lifetime = (began, Instant::now());
    // nothing the session started outlives it
    builtin::shutdown(&runtime.ctx).await;
    Ok(Ended { end, within_deadline, artefact: None, lifetime })
}
