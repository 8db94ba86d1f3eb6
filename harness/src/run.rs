//! One probe run on the built-in subject: sandbox → stub (the probe's turns, placeholders resolved) →
//! agent loop over the tool runtime → the stub's record. The record, not the subject, is the evidence.

use crate::probe::sandbox::Sandbox;
use crate::probe::Probe;
use probelab_runtime::agent::{run_loop, Client, LoopEnd};
use probelab_runtime::builtin::{self, SessionConfig};
use probelab_runtime::config::{ENV_ENABLE_ARTIFACT, PUBLIC_ORIGIN};
use probelab_runtime::settings::env_flag;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use stub_messages::{serve, Exchange, Recorder, Stub};

/// Model the built-in subject asks for unless the probe says otherwise.
pub const DEFAULT_MODEL: &str = "claude-opus-5";
/// Turn limit of the built-in loop unless the probe says otherwise.
pub const DEFAULT_MAX_TURNS: usize = 50;
/// The most bytes a run's record may hold (its exchanges as the stub's JSON lines): a run whose record
/// passes it is ended then (a `[stub] cycle` script, a subject that loops), so memory stays bounded —
/// the record, the transcript made of it and the subject's own message list all grow with it. The
/// largest record of the probes under `probes/` is far below (2.1 MB, measured with `--keep`).
pub const RECORD_CAP_BYTES: u64 = 32 << 20;

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

/// Which subject drives the conversation.
#[derive(Debug, Clone, Copy)]
pub enum Runner<'a> {
    /// The built-in agent loop over the tool runtime.
    Builtin,
    /// The Claude Code binary.
    ClaudeCode(&'a crate::subject::claude_code::ClaudeCode),
}

/// How a subject's run ended, in the lab's terms (whatever the subject: a loop, a process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// The model ended the conversation and the subject stopped on its own (the built-in loop's end of
    /// turn; the binary's exit 0).
    Finished,
    /// The subject stopped at its own turn limit.
    TurnLimit,
    /// The subject failed, or passed the deadline: why.
    Failed(String),
}

impl From<LoopEnd> for RunEnd {
    fn from(end: LoopEnd) -> RunEnd {
        match end {
            LoopEnd::EndTurn => RunEnd::Finished,
            LoopEnd::TurnLimit => RunEnd::TurnLimit,
            LoopEnd::Error(e) => RunEnd::Failed(e),
        }
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
    /// The subject's own output (Claude Code's stream-json), kept as an artefact.
    pub artefact: Option<String>,
    /// Where the time went (never in goldens; for the run-time benchmark).
    pub timing: Timing,
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
    run_conversation(probe, Runner::Builtin, fixtures_root).await
}

/// Runs a loop probe: the stub plays its turns, the subject answers with tool results.
pub async fn run_conversation(probe: &Probe, runner: Runner<'_>, fixtures_root: &Path) -> Result<RunOutput, String> {
    let entered = Instant::now();
    let mut sandbox = Sandbox::create(probe, fixtures_root)?;
    // the deadline counts from here: the services' start-up (web, artifact, the stub, MCP servers) is
    // part of the run
    let deadline = Duration::from_secs(probe.deadline_secs);
    let until = Instant::now() + deadline;
    let passed = |what: &str| format!("the run passed its deadline of {}s{what}", probe.deadline_secs);
    // ART-1: the artifact service, a real local server, when the probe turns the Artifact tool on
    let artifact_service = match (runner, env_flag(&probe.env, ENV_ENABLE_ARTIFACT)) {
        (Runner::Builtin, Some(true)) => {
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
    let mut script = sandbox.script(probe);
    // a real binary's versions defer different tools: the stub loads the ones the probe calls first
    // (a ToolSearch prelude, shown in the transcript, not a scripted turn)
    if matches!(runner, Runner::ClaudeCode(_)) {
        script.stub.load_deferred.get_or_insert(true);
    }
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
    let stub_port = matches!(runner, Runner::ClaudeCode(_)).then(|| running.addr.port());
    let ports: Vec<u16> = stub_port.into_iter().chain(web_service.as_ref().map(|s| s.addr.port())).collect();
    let kind = if stub_port.is_some() { "claude-code" } else { "builtin" };
    let confined = crate::confine::for_run(probe, kind, &sandbox.root, &ports, stub_port.is_some())?;
    let confinement = confined.as_ref().map(|c| c.confinement.clone());
    let start = Instant::now();
    let cap_passed = || RunEnd::Failed(format!("the run's record passed its cap of {RECORD_CAP_BYTES} bytes"));
    let (end, within_deadline, artefact, lifetime) = match runner {
        Runner::Builtin => {
            let model = probe.subject.builtin.model.clone().unwrap_or_else(|| DEFAULT_MODEL.into());
            let client = Arc::new(Client::new(&running.url(), &model));
            // MCP-1: the probe's MCP servers are connected at the start, before the first request
            let config = SessionConfig {
                cwd: sandbox.cwd.clone(),
                home: sandbox.home.clone(),
                roots: vec![sandbox.root.clone()],
                session_id: probe.subject.session_id.clone().unwrap_or_else(|| builtin::SESSION_ID.into()),
                env: probe.env.clone(),
                settings: probe.settings.clone(),
                ask: probe.ask,
                model: Some(client.clone()),
                host: probe.host.clone(),
                clock: probe.clock.clone(),
                mcp_servers: sandbox.mcp_servers(probe),
                plugins: sandbox.plugins(probe),
                artifact_api: artifact_service.as_ref().map(|s| s.url()),
                web: web_service.as_ref().map(|s| crate::services::web::WebAccess { addr: s.addr }),
                deadline: Some(until),
                confine: confinement,
            };
            let began = Instant::now();
            // MCP servers that never answer cost the deadline, no more (a server given up is killed
            // with its group when its connection is dropped)
            match tokio::time::timeout_at(until.into(), builtin::start(config)).await {
                Err(_) => {
                    (RunEnd::Failed(passed(" while starting its MCP servers")), false, None, (began, Instant::now()))
                }
                Ok(Err(e)) => return Err(format!("{}: settings: {e}", probe.path.display())),
                Ok(Ok(runtime)) => {
                    for (name, why) in builtin::mcp_failures(&runtime) {
                        eprintln!("probelab: {}: MCP server {name:?} is left out: {why}", probe.path.display());
                    }
                    let max_turns = probe.subject.builtin.max_turns.unwrap_or(DEFAULT_MAX_TURNS);
                    let conversation = run_loop(client.as_ref(), &runtime, &probe.prompt, max_turns);
                    let ended = tokio::select! {
                        end = tokio::time::timeout_at(until.into(), conversation) => match end {
                            Ok(_) if Instant::now() > until => (RunEnd::Failed(passed("")), false),
                            Ok(end) => (end.into(), true),
                            Err(_) => (RunEnd::Failed(passed("")), false),
                        },
                        _ = record_full.notified() => (cap_passed(), true),
                    };
                    let lifetime = (began, Instant::now());
                    // nothing the session started outlives it
                    builtin::shutdown(&runtime.ctx).await;
                    (ended.0, ended.1, None, lifetime)
                }
            }
        }
        Runner::ClaudeCode(cc) => {
            let url = running.url();
            let claude = crate::subject::claude_code::run(cc, probe, &url, &sandbox, until, confinement.as_ref());
            // the cap ends claude too: dropping its run kills its tree
            tokio::select! {
                ended = claude => {
                    let ended = ended?;
                    let end = match (ended.timed_out, ended.code) {
                        (true, _) => RunEnd::Failed(format!("claude passed the deadline of {}s", probe.deadline_secs)),
                        (false, Some(0)) => RunEnd::Finished,
                        (false, code) => {
                            let lines: Vec<&str> = ended.stderr.lines().collect();
                            let tail = lines[lines.len().saturating_sub(5)..].join("\n");
                            RunEnd::Failed(format!("claude exited with {code:?}: {tail}"))
                        }
                    };
                    (end, !ended.timed_out, Some(ended.stream_json), (ended.spawned, ended.exited))
                }
                _ = record_full.notified() => (cap_passed(), true, None, (start, Instant::now())),
            }
        }
    };
    let duration = start.elapsed();
    drop(confined);
    running.stop().await;
    if let Some(s) = web_service {
        s.stop().await;
    }
    if let Some(s) = artifact_service {
        s.stop().await;
    }
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
    let subject = match runner {
        Runner::Builtin => "builtin".to_string(),
        Runner::ClaudeCode(cc) => format!("claude-code@{}", cc.version),
    };
    Ok(RunOutput {
        subject,
        exchanges,
        record: record_lines.lock().map(|mut l| std::mem::take(&mut *l)).unwrap_or_default(),
        progress: stub.progress(),
        end,
        within_deadline,
        duration,
        sandbox,
        artefact,
        timing,
    })
}
