//! What a subject is to the lab: the [`Subject`] trait, the conversation it is asked to hold, how it
//! ended, and how a kind registers ([`Registration`]); the registry is [`super::Registry`].

use super::id::SubjectId;
use crate::probe::sandbox::Sandbox;
use crate::probe::Probe;
use futures_util::future::LocalBoxFuture;
use sha2::Digest;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// How a subject's run ended, in the lab's terms (whatever the subject: a loop, a process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// The model ended the conversation and the subject stopped on its own (the built-in loop's end of
    /// turn; a process's exit 0).
    Finished,
    /// The subject stopped at its own turn limit.
    TurnLimit,
    /// The subject failed, or passed the deadline: why.
    Failed(String),
}

/// The most bytes a run's record may hold (its exchanges as the stub's JSON lines): a run whose record
/// passes it is ended then (a `[stub] cycle` script, a subject that loops), so memory stays bounded —
/// the record, the transcript made of it and the subject's own message list all grow with it. The
/// largest record of the probes under `probes/` is far below (2.1 MB, measured with `--keep`).
pub const RECORD_CAP_BYTES: u64 = 32 << 20;

impl RunEnd {
    /// The end of a run stopped at the record's cap ([`Conversation::stop`]).
    pub fn cap_passed() -> RunEnd {
        RunEnd::Failed(format!("the run's record passed its cap of {RECORD_CAP_BYTES} bytes"))
    }
}

impl From<probelab_runtime::agent::LoopEnd> for RunEnd {
    fn from(end: probelab_runtime::agent::LoopEnd) -> RunEnd {
        use probelab_runtime::agent::LoopEnd;
        match end {
            LoopEnd::EndTurn => RunEnd::Finished,
            LoopEnd::TurnLimit => RunEnd::TurnLimit,
            LoopEnd::Error(e) => RunEnd::Failed(e),
        }
    }
}

/// One conversation a subject is asked to hold: the probe, its sandbox (cwd, HOME), the stub, the
/// deadline, and the lab's services the run started.
pub struct Conversation<'a> {
    /// The probe (its prompt, env, settings, per-subject options).
    pub probe: &'a Probe,
    /// Its sandbox: `cwd`, `home`, `root` (the subject's temp files go under it).
    pub sandbox: &'a Sandbox,
    /// The stub's root (`http://127.0.0.1:PORT`, as `ANTHROPIC_BASE_URL` and the official SDKs take it).
    pub base_url: &'a str,
    /// The probe's deadline: the subject is stopped (killed, with everything it started) at it.
    pub until: Instant,
    /// Notified when the run's record passes its cap: the subject ends at once.
    pub stop: &'a tokio::sync::Notify,
    /// The artifact service's URL, when the run started it ([`Subject::serves_artifact`]).
    pub artifact_api: Option<String>,
    /// The probe's web service, when it has a `[web]` table.
    pub web: Option<probelab_runtime::config::WebAccess>,
    /// What confines the subject's processes ([`crate::confine`]); None: the probe opted out.
    pub confine: Option<probelab_runtime::confine::Confinement>,
}

/// How a conversation ended.
#[derive(Debug)]
pub struct Ended {
    /// In the lab's terms.
    pub end: RunEnd,
    /// Ended within the probe's deadline.
    pub within_deadline: bool,
    /// The subject's own output kept as evidence, as fields of the evidence file (Claude Code's
    /// `stream_json`; a command's `stdout`, `stderr`, `exit`).
    pub artefact: Option<serde_json::Value>,
    /// The subject's lifetime: spawn (or loop start) to exit.
    pub lifetime: (Instant, Instant),
}

/// A subject: set up once, then one conversation per probe. Implementations hold what set-up made (an
/// install's lease, a parsed config) and nothing per probe.
pub trait Subject: Send + Sync {
    /// Its id (`builtin`, `claude-code@2.1.235`, `my-agent`).
    fn id(&self) -> &SubjectId;
    /// The golden header's description (`subject builtin 0.1.0, embedded`).
    fn description(&self) -> String;
    /// What an exec probe's `{rg}` starts (argv0 `rg`) and its SHA-256, given the lab's own engine;
    /// None: the subject has no search engine, its exec probes are skipped.
    fn rg_engine(&self, _lab_engine: &Path) -> Option<Result<(PathBuf, String), super::error::EngineError>> {
        None
    }
    /// Changes to the stub's script this subject needs (a real binary's deferred tools loaded first).
    fn adjust_script(&self, _probe: &crate::probe::Probe, _script: &mut stub_messages::Script) {}
    /// Whether the subject is a process of its own that makes its own requests (Claude Code, a command):
    /// confined whole, the stub's port relayed into its namespace; else (the built-in runtime, whose
    /// requests go from the lab's process) each process it starts is confined.
    fn confined_whole(&self) -> bool {
        true
    }
    /// Why the probe cannot be put to this subject (it is n/a there), if it cannot: a tool call its
    /// dialect has no counterpart for, a Claude Code setting it does not read ([`super::dialect`]).
    fn unsupported(&self, _probe: &Probe) -> Option<String> {
        None
    }
    /// The dialect its tools are put in Claude Code's terms by (a third-party agent, a command subject
    /// declaring a dialect file), if any: its refusals in words count as is_error for the checks.
    fn dialect(&self) -> Option<&super::dialect::Dialect> {
        None
    }
    /// The host parts the subject itself needs (`rg`, `fd`, `node`: [`crate::probe::host`]); a probe is
    /// skipped where one is missing, saying which.
    fn requires(&self) -> Vec<String> {
        Vec::new()
    }
    /// Whether the run starts the artifact service for it when the probe turns the Artifact tool on.
    fn serves_artifact(&self) -> bool {
        false
    }
    /// Holds one conversation to its end: the model (the stub) ends it, the subject fails, the deadline
    /// passes or the record's cap is reached; nothing the subject started outlives the returned future
    /// (also when it is dropped).
    fn converse<'a>(&'a self, c: Conversation<'a>) -> LocalBoxFuture<'a, Result<Ended, super::error::ConverseError>>;
}

/// Whether a registered kind is named with a version.
#[derive(Debug, Clone, Copy)]
pub enum Versioned {
    /// Never (`my-kind`).
    No,
    /// Always: an install by version (`claude-code@2.1.235`).
    Required,
    /// Either: bare, it means its default version (`builtin` = the built-in runtime's default profile;
    /// `builtin@2.1.280` = the runtime behaving as Claude Code 2.1.280). `check` refuses a version the
    /// kind cannot take, saying why.
    Optional {
        /// Ok, or why not.
        check: fn(&str) -> Result<(), super::error::Refusal>,
    },
}

/// A kind of subject every project has, registered once here.
pub struct Registration {
    /// Its kind, whose name is the subject's (`builtin`, `claude-code`).
    pub kind: super::id::SubjectKind,
    /// Whether it is named with a version (`claude-code@2.1.235`, `builtin@2.1.280`).
    pub versioned: Versioned,
    /// How `probelab list` and errors show it (`claude-code@V`).
    pub usage: &'static str,
    /// One line about it.
    pub about: &'static str,
    /// The subject whose probes it runs because it speaks its tools (`claude-code`, through a dialect).
    pub speaks: Option<&'static str>,
    /// The version the conformance table runs it at (`probelab conformance`).
    pub pinned: Option<&'static str>,
    /// Set-up: an install, a lease on it.
    pub prepare: fn(&SubjectId) -> Result<Arc<dyn Subject>, super::error::SubjectError>,
}

/// Writes the probe's `[settings]` as the project's `.claude/settings.json` (Claude Code's place for them),
/// unless they are the defaults.
pub fn write_claude_settings(probe: &Probe, sandbox: &Sandbox) -> Result<(), super::error::ConverseError> {
    if probe.settings == probelab_runtime::settings::Settings::default() {
        return Ok(());
    }
    let path = sandbox.cwd.join(".claude").join("settings.json");
    let json = serde_json::to_vec_pretty(&sandbox.settings(probe))
        .map_err(|source| super::error::ConverseError::Json { what: "the settings", source })?;
    // no link a fixture or a fault put on the way is followed (issue 41)
    probelab_runtime::nofollow::write(std::slice::from_ref(&sandbox.root), &path, &json)
        .map_err(|source| super::error::ConverseError::WriteFile { path, source })
}

/// The SHA-256 of the engine binary at `path`, read and hashed once per process (a 30 MB release
/// binary took ~60 ms a probe); a binary replaced while the lab runs is not seen. A binary that cannot
/// be read is an error of the probe (its evidence would name the hash of nothing).
pub fn engine_sha256(path: &Path) -> std::io::Result<String> {
    static KNOWN: std::sync::Mutex<BTreeMap<PathBuf, String>> = std::sync::Mutex::new(BTreeMap::new());
    if let Some(h) = KNOWN.lock().ok().and_then(|k| k.get(path).cloned()) {
        return Ok(h);
    }
    let h = probelab_runtime::fs::hex(&sha2::Sha256::digest(std::fs::read(path)?));
    if let Ok(mut k) = KNOWN.lock() {
        k.insert(path.to_path_buf(), h.clone());
    }
    Ok(h)
}
