//! One probe run on a subject: sandbox → services → stub (the probe's turns, placeholders resolved) →
//! the subject's conversation ([`crate::subject::Subject::converse`]: the built-in loop, a process) →
//! the stub's record. The record, not the subject, is the evidence.

use crate::probe::sandbox::Sandbox;
use crate::probe::Probe;
use crate::subject::{Conversation, Ended, Subject};
use probelab_runtime::config::{ENV_ENABLE_ARTIFACT, PUBLIC_ORIGIN};
use probelab_runtime::settings::env_flag;
use std::path::Path;
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

/// Runs `probe` on the built-in subject.
pub async fn run_builtin(probe: &Probe, fixtures_root: &Path) -> Result<RunOutput, String> {
    run_conversation(probe, &crate::subject::builtin::Builtin::default(), fixtures_root).await
}

/// Runs a loop probe: the stub plays its turns, the subject answers with tool results.
pub async fn run_conversation(probe: &Probe, subject: &dyn Subject, fixtures_root: &Path) -> Result<RunOutput, String> {
    let entered = Instant::now();
    let mut sandbox = Sandbox::create(probe, fixtures_root)?;
    // the deadline counts from here: the services' start-up (web, artifact, the stub, MCP servers) is
    // part of the run
    let deadline = Duration::from_secs(probe.deadline_secs);
    let until = Instant::now() + deadline;
    // ART-1: the artifact service, a real local server, when the probe turns the Artifact tool on
    let artifact_service = match (subject.serves_artifact(), env_flag(&probe.env, ENV_ENABLE_ARTIFACT)) {
        (true, Some(true)) => {
            let running = crate::services::artifact::start(&crate::services::artifact::dir_for(&sandbox.root)).await?;
            sandbox.placeholders.insert("artifact".into(), PUBLIC_ORIGIN.into());
            Some(running)
        }
        _ => None,
    };
    // WEB-1, WEB-2: the probe's web, a real local server, when the probe has a [web] table
    let web_service = if probe.web.pages.is_empty() {
        None
    } else {
        let running = crate::services::web::start(&probe.web, &crate::services::web::dir_for(&sandbox.root)).await?;
        sandbox.placeholders.insert("web".into(), running.url());
        Some(running)
    };
    let resolved = sandbox.script(probe);
    let mut script = resolved.clone();
    subject.adjust_script(probe, &mut script);
    let timed: Vec<_> = probe.fixture.fault.iter().filter(|f| f.at_turn.is_some()).cloned().collect();
    let view = sandbox.view();
    let hook_errors = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let errors = hook_errors.clone();
    let record_full = Arc::new(tokio::sync::Notify::new());
    let record_lines = Arc::new(std::sync::Mutex::new(Vec::new()));
    let meter = RecordMeter { lines: record_lines.clone(), full: record_full.clone(), passed: false };
    let stub = Stub::new(script, Recorder::new(Some(Box::new(meter)))).with_turn_hook(Arc::new(
        move |conv: &str, turn: usize| {
            for f in timed.iter().filter(|f| conv == stub_messages::script::MAIN && f.at_turn == Some(turn + 1)) {
                if let Err(e) = view.apply(f) {
                    if let Ok(mut v) = errors.lock() {
                        v.push(e);
                    }
                }
            }
        },
    ));
    let stub = Arc::new(stub);
    let running =
        serve(stub.clone(), ([127, 0, 0, 1], 0).into()).await.map_err(|e| format!("cannot start the stub: {e}"))?;
    // every subject confined unless the probe opted out (crate::confine): its processes reach the stub
    // (the binary's own requests; the built-in's go from the lab's process) and the probe's services
    let whole = subject.confined_whole();
    let stub_port = whole.then(|| running.addr.port());
    let ports: Vec<u16> = stub_port.into_iter().chain(web_service.as_ref().map(|s| s.addr.port())).collect();
    let confined = crate::confine::for_run(probe, subject.id(), &sandbox.root, &ports, whole)?;
    let confinement = confined.as_ref().map(|c| c.confinement.clone());
    let start = Instant::now();
    let url = running.url();
    let conversation = Conversation {
        probe,
        sandbox: &sandbox,
        base_url: &url,
        until,
        stop: &record_full,
        artifact_api: artifact_service.as_ref().map(|s| s.url()),
        web: web_service.as_ref().map(|s| crate::services::web::WebAccess { addr: s.addr }),
        confine: confinement,
    };
    let ended = subject.converse(conversation).await;
    let web = web_service.as_ref().map(|s| s.url());
    let duration = start.elapsed();
    drop(confined);
    running.stop().await;
    if let Some(s) = web_service {
        s.stop().await;
    }
    if let Some(s) = artifact_service {
        s.stop().await;
    }
    let Ended { end, within_deadline, artefact, lifetime } = ended?;
    if let Some(e) = hook_errors.lock().ok().and_then(|v| v.first().cloned()) {
        return Err(format!("{}: {e}", probe.path.display()));
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
    })
}
