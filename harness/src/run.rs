//! One probe run on a subject: sandbox → services → stub (the probe's turns, placeholders resolved) →
//! the subject's conversation ([`crate::subject::Subject::converse`]: the built-in loop, a process) →
//! the stub's record. The record, not the subject, is the evidence.

use crate::probe::sandbox::Sandbox;
use crate::probe::Probe;
use crate::subject::{Conversation, Ended, Subject};
use probelab_runtime::config::{ENV_ENABLE_ARTIFACT, PUBLIC_ORIGIN};
use probelab_runtime::settings::env_flag;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use stub_messages::{serve, Exchange, Recorder, Stub};

pub use crate::subject::builtin::{DEFAULT_MAX_TURNS, DEFAULT_MODEL};
pub use crate::subject::{RunEnd, RECORD_CAP_BYTES};

/// The stub's record sink of a run: keeps the record's lines as the stub wrote them (its requests stored
/// by prefix: `stub_messages::stored`; what `--keep` writes as `record.jsonl`), counts the bytes they hold
/// and says when [`RECORD_CAP_BYTES`] is passed.
struct RecordMeter {
    lines: Arc<std::sync::Mutex<Vec<u8>>>,
    full: Arc<tokio::sync::Notify>,
    /// Past the cap: nothing more is kept (no half line).
    passed: bool,
}

impl std::io::Write for RecordMeter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let Ok(mut lines) = self.lines.lock() else { return Ok(buf.len()) };
        if self.passed || lines.len() as u64 + buf.len() as u64 > RECORD_CAP_BYTES {
            self.passed = true;
            self.full.notify_one();
        } else {
            lines.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Why a probe could not be run (its checks failing is no error: the lab's report says so). The steps of
/// a run, each with what went wrong; the cause is the source, never repeated in the message (the chain is
/// said once: [`crate::exit::chain`]).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The subject cannot be named or set up.
    #[error(transparent)]
    Subject(#[from] crate::subject::SubjectError),
    /// An exec probe on a subject that has no search engine to start as `rg`.
    #[error("{probe}: an exec probe, and subject {subject} has no search engine to start as rg")]
    NoEngine {
        /// The probe's id.
        probe: String,
        /// The subject.
        subject: String,
    },
    /// The subject's search engine cannot be read (its evidence would name the hash of nothing).
    #[error(transparent)]
    Engine(#[from] crate::subject::EngineError),
    /// The sandbox or its fixture cannot be made.
    #[error(transparent)]
    Sandbox(#[from] crate::probe::sandbox::SandboxError),
    /// A service the probe asked for (web, artifact) did not start.
    #[error(transparent)]
    Service(#[from] crate::services::ServiceError),
    /// The stub did not start.
    #[error("cannot start the stub")]
    Stub(#[source] std::io::Error),
    /// The subject's processes cannot be confined as the probe asks.
    #[error(transparent)]
    Confine(#[from] crate::confine::ConfineError),
    /// The subject failed to hold the conversation (not a verdict: it could not be started or watched).
    #[error(transparent)]
    Conversation(#[from] crate::subject::ConverseError),
    /// A fault the probe times to a turn (`[[fixture.fault]] at_turn`) could not be applied.
    #[error("{}", probe.display())]
    Fault {
        /// The probe file.
        probe: PathBuf,
        /// The fault and why.
        source: crate::probe::sandbox::FaultError,
    },
    /// An exec probe's commands could not be run.
    #[error(transparent)]
    Exec(#[from] crate::subject::exec::ExecError),
    /// The stub's record holds a content block the transcript cannot read (its place and what is wrong).
    #[error(transparent)]
    Record(#[from] crate::transcript::Malformed),
}

/// What a run left behind.
#[derive(Debug)]
pub struct RunOutput {
    /// The subject's name (`builtin`).
    pub subject: String,
    /// Every exchange, in the order the stub answered them ([`Exchange::answer_seq`]), requests in the
    /// stored form (`stub_messages::Requests` answers for them whole).
    pub exchanges: Vec<Exchange>,
    /// The record as the stub wrote it (JSONL; `stub_messages::read_record` reads it back), up to the cap.
    pub record: Vec<u8>,
    /// Turns served per conversation: (name, served, scripted).
    pub progress: Vec<(String, usize, usize)>,
    /// How the subject ended.
    pub end: RunEnd,
    /// Whether it ended within the probe's deadline.
    pub within_deadline: bool,
    /// Wall time (never in goldens).
    pub duration: Duration,
    /// The sandbox (removed on drop unless kept).
    pub sandbox: Sandbox,
    /// The subject's own output (Claude Code's stream-json, a command's stdout and stderr), kept as
    /// evidence: fields of the evidence file.
    pub artefact: Option<serde_json::Value>,
    /// Where the time went (never in goldens; for the run-time benchmark).
    pub timing: Timing,
    /// The probe's script as this run played it: placeholders resolved once, for the stub and for the
    /// checks and the transcript (before the subject's own adjustments, which are the stub's business).
    pub script: stub_messages::Script,
    /// The base URL of the probe's web service (`{web}`) when it had one: the transcript shows it as
    /// `<web>`.
    pub web: Option<String>,
    /// The limits of [`crate::limits`] the subject reached, in words (an invariant fails on each).
    pub limits_reached: Vec<String>,
}

/// Where a run's time went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timing {
    /// The subject's lifetime: the process from spawn to exit (the built-in: its loop).
    pub subject: Duration,
    /// From the subject's start to its first request at the stub (binary start-up).
    pub startup: Duration,
    /// Time the stub spent answering, summed over every exchange (arrival to last byte).
    pub stub: Duration,
    /// The whole of [`run_conversation`]: sandbox, stub start and stop, the subject.
    pub run: Duration,
}

/// The lab's services a probe asks for, each a real local server started in its sandbox (its
/// placeholder set for the script): stopped after the conversation, the web before the artifact.
struct Services {
    /// ART-1: the artifact service, when the probe turns the Artifact tool on and the subject serves it.
    artifact: Option<crate::services::artifact::Running>,
    /// WEB-1, WEB-2: the probe's web, when the probe has a `[web]` table.
    web: Option<crate::services::web::Running>,
}

impl Services {
    async fn start(probe: &Probe, subject: &dyn Subject, sandbox: &mut Sandbox) -> Result<Services, RunError> {
        let artifact = match (subject.serves_artifact(), env_flag(&probe.env, ENV_ENABLE_ARTIFACT)) {
            (true, Some(true)) => {
                let running = crate::services::artifact::start(&crate::services::artifact::dir_for(&sandbox.root))
                    .await
                    .map_err(RunError::Service)?;
                sandbox.placeholders.insert("artifact".into(), PUBLIC_ORIGIN.into());
                Some(running)
            }
            _ => None,
        };
        let web = if probe.web.pages.is_empty() {
            None
        } else {
            let running = crate::services::web::start(&probe.web, &crate::services::web::dir_for(&sandbox.root))
                .await
                .map_err(RunError::Service)?;
            sandbox.placeholders.insert("web".into(), running.url());
            Some(running)
        };
        Ok(Services { artifact, web })
    }

    async fn stop(self) {
        if let Some(s) = self.web {
            s.stop().await;
        }
        if let Some(s) = self.artifact {
            s.stop().await;
        }
    }
}

/// The stub of a run: `script` played, the record kept by `meter`, and the probe's faults timed to a
/// turn (`at_turn`) applied to the sandbox as the main conversation's turns are served — one that
/// cannot be applied is kept in `errors` (the run is an error then, not a verdict).
fn stub_of(
    probe: &Probe,
    script: stub_messages::Script,
    sandbox: &Sandbox,
    meter: RecordMeter,
    errors: Arc<std::sync::Mutex<Vec<crate::probe::sandbox::FaultError>>>,
) -> Stub {
    let timed: Vec<_> = probe.fixture.fault.iter().filter(|f| f.at_turn.is_some()).cloned().collect();
    let view = sandbox.view();
    Stub::new(script, Recorder::new(Some(Box::new(meter)))).with_turn_hook(Arc::new(move |conv: &str, turn: usize| {
        for f in timed.iter().filter(|f| conv == stub_messages::script::MAIN && f.at_turn == Some(turn + 1)) {
            if let Err(e) = view.apply(f) {
                if let Ok(mut v) = errors.lock() {
                    v.push(e);
                }
            }
        }
    }))
}

/// Runs `probe` on the built-in subject.
pub async fn run_builtin(probe: &Probe, fixtures_root: &Path) -> Result<RunOutput, RunError> {
    run_conversation(probe, &crate::subject::builtin::Builtin::default(), fixtures_root).await
}

/// Runs a loop probe: the stub plays its turns, the subject answers with tool results.
pub async fn run_conversation(
    probe: &Probe,
    subject: &dyn Subject,
    fixtures_root: &Path,
) -> Result<RunOutput, RunError> {
    let entered = Instant::now();
    let mut sandbox = Sandbox::create(probe, fixtures_root).map_err(RunError::Sandbox)?;
    // the deadline counts from here: the services' start-up (web, artifact, the stub, MCP servers) is
    // part of the run
    let deadline = Duration::from_secs(probe.deadline_secs);
    let until = Instant::now() + deadline;
    let services = Services::start(probe, subject, &mut sandbox).await?;
    let resolved = sandbox.script(probe);
    let mut script = resolved.clone();
    subject.adjust_script(probe, &mut script);
    let hook_errors = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record_full = Arc::new(tokio::sync::Notify::new());
    let record_lines = Arc::new(std::sync::Mutex::new(Vec::new()));
    let meter = RecordMeter { lines: record_lines.clone(), full: record_full.clone(), passed: false };
    let stub = Arc::new(stub_of(probe, script, &sandbox, meter, hook_errors.clone()));
    let running = serve(stub.clone(), ([127, 0, 0, 1], 0).into()).await.map_err(RunError::Stub)?;
    // every subject confined unless the probe opted out (crate::confine): its processes reach the stub
    // (the binary's own requests; the built-in's go from the lab's process) and the probe's services
    let whole = subject.confined_whole();
    let stub_port = whole.then(|| running.addr.port());
    let ports: Vec<u16> = stub_port.into_iter().chain(services.web.as_ref().map(|s| s.addr.port())).collect();
    let confined =
        crate::confine::for_run(probe, subject.id(), &sandbox.root, &ports, whole).await.map_err(RunError::Confine)?;
    let confinement = confined.as_ref().map(|c| c.confinement.clone());
    let start = Instant::now();
    let url = running.url();
    let conversation = Conversation {
        probe,
        sandbox: &sandbox,
        base_url: &url,
        until,
        stop: &record_full,
        artifact_api: services.artifact.as_ref().map(|s| s.url()),
        web: services.web.as_ref().map(|s| crate::services::web::WebAccess { addr: s.addr }),
        confine: confinement,
    };
    // the sandbox's disk is watched while the subject runs (crate::limits::watch_disk): past the limit
    // the subject is stopped as at the record's cap, and the verdict says why
    let disk_limit = crate::limits::Limits::of(&probe.limits).disk_bytes;
    let (ended, disk_used) = {
        let converse = subject.converse(conversation);
        tokio::pin!(converse);
        tokio::select! {
            ended = &mut converse => (ended, None),
            used = crate::limits::watch_disk(sandbox.root.clone(), disk_limit) => {
                record_full.notify_one();
                (converse.await, Some(used))
            }
        }
    };
    let web = services.web.as_ref().map(|s| s.url());
    let duration = start.elapsed();
    let mut limits_reached = confined.as_ref().map(|c| c.limits_reached(&sandbox.root)).unwrap_or_default();
    limits_reached.extend(disk_used.map(|used| crate::limits::disk_reached(disk_limit, used)));
    drop(confined);
    running.stop().await;
    services.stop().await;
    let Ended { end, within_deadline, artefact, lifetime } = ended.map_err(RunError::Conversation)?;
    let end = match disk_used {
        Some(_) => RunEnd::Failed(format!("stopped at its disk limit of {} MiB", disk_limit >> 20)),
        None => end,
    };
    if let Some(source) = hook_errors.lock().ok().and_then(|mut v| std::mem::take(&mut *v).into_iter().next()) {
        return Err(RunError::Fault { probe: probe.path.clone(), source });
    }
    // in the order the stub answered: where turns waited for events, that order is the one the waits
    // made (arrivals of concurrent clients race; what a held turn waited for does not)
    let mut exchanges = stub.recorder().take();
    exchanges.sort_by_key(|e| (e.answer_seq, e.seq));
    let first = exchanges.first().map(|e| stub.recorder().started() + Duration::from_millis(e.offset_ms));
    let timing = Timing {
        subject: lifetime.1.saturating_duration_since(lifetime.0),
        startup: first.map(|f| f.saturating_duration_since(lifetime.0)).unwrap_or_default(),
        stub: Duration::from_micros(exchanges.iter().filter_map(|e| e.elapsed_us).sum()),
        run: entered.elapsed(),
    };
    Ok(RunOutput {
        subject: subject.id().to_string(),
        exchanges,
        record: record_lines.lock().map(|mut l| std::mem::take(&mut *l)).unwrap_or_default(),
        progress: stub.progress(),
        end,
        within_deadline,
        duration,
        sandbox,
        artefact,
        timing,
        script: resolved,
        web,
        limits_reached,
    })
}
