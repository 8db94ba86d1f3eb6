//! The Workflow tool (WF-1): a script in a restricted JavaScript runs nested agents — `agent(prompt,
//! opts)` is a sub-agent loop against the session's Messages API — in the background, with a journal of
//! every agent call and a resume that replays the longest unchanged prefix of calls from it.
//!
//! A call resolves the script (`script`, a file at `scriptPath`, or a named workflow), checks it
//! statically ([`check`]: it parses; it opens with a pure-literal `export const meta = { name,
//! description, phases }`; an inline script names no `Date.now` / `Math.random` / argless `new Date`),
//! persists it, registers a background task and returns at once; the script runs on QuickJS-NG
//! ([`engine`]), each `agent()` call in turn, and the end arrives before a later request as a
//! `<task-notification>` whose `<result>` is the script's return value as JSON (TaskOutput gives the same).
//!
//! Measured on Claude Code 2.1.235 (`probes/claude-code/workflow-*.toml`) and copied:
//! - the schema and the description, byte for byte (`description.md`; it documents more than this
//!   runtime does, see below);
//! - the launch text (Task ID, Summary = `meta.description`, Transcript dir, Script file, Run ID, the
//!   resume hint) and the refusals, all `<tool_use_error>`-wrapped: `Invalid workflow script: …` (not
//!   the first statement, `meta must be a pure literal: …`, `meta.name` / `meta.description must be a
//!   non-empty string`, `Script parse error: Unexpected token (L:C)` with a code frame), the determinism
//!   text, `Must provide script, name, or scriptPath`, `Workflow "x" not found. Available: …`,
//!   `Workflow script file not found: …`, a resume of a running run;
//! - the files, under the session dir: `workflows/scripts/<meta.name>-<runId>.js` (the script),
//!   `workflows/<runId>.json` (the run record), and the transcript dir `subagents/workflows/<runId>/` with
//!   `agent-<id>.jsonl` + `agent-<id>.meta.json` per live agent and `journal.jsonl`;
//! - the journal: per live call a `{"type":"started","key","agentId"}` and a `{"type":"result","key",
//!   "agentId","result"}` line, appended (a resume appends to the run's journal); the key is the
//!   reference's: `v2:` + SHA-256 of `previous key \0 prompt \0 opts` (opts: schema, model, effort,
//!   isolation, agentType, disallowedTools, bashCommandClamp, nested keys sorted) — a chain, so a call's
//!   key changes when any earlier call changed;
//! - resume (`resumeFromRunId`): the run keeps that run id and transcript dir; calls are replayed from
//!   the journal (no request reaches the API) until the first whose key has no result, and every call
//!   from there runs live, unchanged ones included. An unknown run id is accepted and starts a fresh
//!   journal under that id;
//! - `script` wins over `scriptPath` when both are given (the inline text is written to the path): the
//!   claim's "scriptPath first" holds only for the file the run is persisted to;
//! - the sub-agents: system prompt opening "You are a subagent spawned by a workflow orchestration
//!   script." (the rest is our own), the session's pool less Agent, TaskOutput and Workflow, depth 1
//!   (`meta.json`: `{"agentType":"workflow-subagent","spawnDepth":1}`).
//!
//! Decided here (the reference is silent, or we differ on purpose):
//! - run ids (`wf_` + 8-3 hex) and task ids (`w` + 8 base-36 chars) derive from the session id and the
//!   tool_use id, not from randomness, so goldens are stable; agent ids are the Agent tool's `a…` ids;
//! - agents run one at a time (`parallel()` / `pipeline()` keep their results and null-on-throw rules but
//!   not the concurrency): the journal and the stub see the same order on every run;
//! - `agent()` with `schema` parses the agent's final text as JSON (null when it is not); there is no
//!   StructuredOutput tool. `opts.model` takes the Agent tool's aliases; other opts are hashed into the
//!   key and otherwise ignored. A failed agent resolves to null and is listed in the run record;
//! - named workflows are `.claude/workflows/<name>.js` under the cwd or HOME (the reference also ships a
//!   built-in `deep-research`); `workflow()` inside a script, `budget` targets and `/workflows` are not
//!   implemented (`budget.total` is null);
//! - `scriptPath` is confined to the sandbox (the reference reads any file, `/etc/passwd` included);
//! - the task is a `local_workflow` ([`crate::background::TaskRegistry::add_workflow`]), as on the reference
//!   (`probes/claude-code/workflow-texts.toml`, `workflow-task.toml`): TaskOutput gives a completed run's
//!   progress report as `<output>` (the record's `summary`, `agentCount`, `logs`, `result`,
//!   `workflowProgress`, `totalTokens`, `totalToolCalls`, pretty-printed; each agent entry with the
//!   reference's `model` name and `tokens`, [`crate::tools::agent_tool::model_setting`]), none for a running, failed or stopped run; TaskStop answers
//!   with `task_type: local_workflow` and `meta.description` as the command; the notification's summary
//!   is `Dynamic workflow "…" completed` (with `<result>`, `<diagnostics>`, `<usage>`) or `… failed:
//!   <error>` (with `<recovery>`, `<usage>`), and a stopped run is not notified. Differences: the
//!   notification sits inside BG-1's `<background-results>` envelope with `<result>` cut to 500 chars
//!   (the reference: a system message, the whole value); the error is the script's message without the
//!   reference's `Error:` name and Bun stack; `<output-file>` is the run record (the reference copies it
//!   to `<tmp>/claude-<uid>/…/tasks/<id>.output`); `agents_skipped` is always 0 (the reference's meaning is unknown: a resume's cached calls count as
//!   done there);
//! - at most [`driver::MAX_AGENT_CALLS`] agent() calls per run; TaskStop interrupts the script.
//!
//! This module is the tool (resolve, check, persist, launch); [`check`] the static checks, [`engine`]
//! the script's run on QuickJS-NG, `journal` the journal and its key chain, `driver` the run in the
//! background (agent() calls answered from the journal or by a live sub-agent, the run record, the end).

pub mod check;
mod driver;
pub mod engine;
mod journal;

use crate::background::{Status, Task};
use crate::context::ToolContext;
use crate::fs;
use crate::profile::Switch;
use crate::tool::{ToolError, ToolOutput, TypedTool};
pub use driver::PROMPT_FRAMED_SHOWN;
use driver::{drive, write_record, Job, Paths};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

const DESCRIPTION: &str = include_str!("description.md");

/// The Workflow tool.
#[derive(Debug, Default)]
pub struct Workflow;

#[derive(Debug, Deserialize)]
pub struct Args {
    #[serde(default)]
    script: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    title: Option<String>,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default, rename = "scriptPath")]
    script_path: Option<String>,
    #[serde(default, rename = "resumeFromRunId")]
    resume_from_run_id: Option<String>,
}

impl TypedTool for Workflow {
    const NAME: &'static str = "Workflow";
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = Args;

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "script": {
                    "description": "Self-contained workflow script. Must begin with `export const meta = { name, description, phases }` (pure literal, no computed values) followed by the script body using agent()/parallel()/pipeline()/phase().",
                    "type": "string",
                    "maxLength": check::MAX_SCRIPT_BYTES
                },
                "name": {
                    "description": "Name of a predefined workflow (built-in or from .claude/workflows/). Resolves to a self-contained script.",
                    "type": "string"
                },
                "description": {"description": "Ignored — set the workflow description in the script's `meta` block.", "type": "string"},
                "title": {"description": "Ignored — set the workflow title in the script's `meta` block.", "type": "string"},
                "args": {
                    "description": "Optional input value exposed to the script as the global `args`, verbatim. Pass arrays/objects as actual JSON values, NOT as a JSON-encoded string — a stringified list breaks `args.filter`/`args.map` in the script. Use for parameterized named workflows (e.g. a research question)."
                },
                "scriptPath": {
                    "description": "Path to a workflow script file on disk. Every Workflow invocation persists its script under the session directory and returns the path in the tool result. To iterate, edit that file with Write/Edit and re-invoke Workflow with the same `scriptPath` instead of re-sending the full script. Takes precedence over `script` and `name`.",
                    "type": "string"
                },
                "resumeFromRunId": {
                    "description": "Run ID of a prior Workflow invocation to resume from. Completed agent() calls with unchanged (prompt, opts) return their cached results instantly; only edited or new calls re-run. Same-session only. Stop the prior run first (TaskStop) before resuming.",
                    "type": "string",
                    "pattern": "^wf_[a-z0-9-]{6,}$"
                }
            },
            "additionalProperties": false
        })
    }

    fn permission_subject(&self, input: &Value, ctx: &ToolContext) -> crate::tool::PermissionSubject {
        match input.get("scriptPath").and_then(Value::as_str) {
            Some(p) if input.get("script").is_none() => crate::tool::PermissionSubject::ReadPath(fs::absolute(ctx, p)),
            _ => crate::tool::PermissionSubject::None,
        }
    }

    async fn call(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        launch(args, ctx)
    }
}

fn workflows_dir(ctx: &ToolContext) -> PathBuf {
    ctx.session_dir().join("workflows")
}

fn run_paths(ctx: &ToolContext, run_id: &str, name: &str, script_path: Option<PathBuf>) -> Paths {
    let dir = workflows_dir(ctx);
    Paths {
        script: script_path.unwrap_or_else(|| dir.join("scripts").join(format!("{}-{run_id}.js", safe(name)))),
        record: dir.join(format!("{run_id}.json")),
        transcript_dir: ctx.session_dir().join("subagents").join("workflows").join(run_id),
    }
}

/// A name as a file name: anything but `[A-Za-z0-9._-]` becomes `-`.
fn safe(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' }).collect()
}

fn nonempty(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.is_empty())
}

/// The script to run and, for `scriptPath`, the file it is persisted to.
struct Source {
    text: String,
    path: Option<PathBuf>,
}

fn resolve(args: &Args, ctx: &ToolContext) -> Result<Source, ToolError> {
    if let Some(p) = nonempty(&args.script_path) {
        let path = fs::confine(ctx, p)?;
        if let Some(s) = &args.script {
            return Ok(Source { text: s.clone(), path: Some(path) });
        }
        return Ok(Source { text: read_script(&path)?, path: Some(path) });
    }
    if let Some(name) = nonempty(&args.name) {
        let found = named_dirs(ctx).into_iter().map(|d| d.join(format!("{}.js", safe(name)))).find(|p| p.is_file());
        let Some(path) = found else {
            let names = available(ctx);
            return Err(ToolError::Validation(format!(
                "Workflow \"{name}\" not found. Available: {}",
                if names.is_empty() { "(none)".to_string() } else { names.join(", ") }
            )));
        };
        let text = match &args.script {
            Some(s) => s.clone(),
            None => read_script(&path)?,
        };
        return Ok(Source { text, path: None });
    }
    match nonempty(&args.script) {
        Some(s) => Ok(Source { text: s.to_string(), path: None }),
        None => Err(ToolError::Validation(crate::validation::issues_error(&[crate::validation::custom(
            json!([]),
            must_provide(ctx),
        )]))),
    }
}

fn read_script(path: &Path) -> Result<String, ToolError> {
    match std::fs::read(path) {
        Ok(b) if b.len() > check::MAX_SCRIPT_BYTES => Err(ToolError::Validation(format!(
            "Workflow script file {} exceeds {} bytes",
            path.display(),
            check::MAX_SCRIPT_BYTES
        ))),
        Ok(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(ToolError::Validation(format!("Workflow script file not found: {}", path.display())))
        }
        Err(e) => Err(ToolError::Validation(format!("Failed to read workflow script file {}: {e}", path.display()))),
    }
}

/// Where named workflows live: the project's `.claude/workflows`, then the user's.
fn named_dirs(ctx: &ToolContext) -> Vec<PathBuf> {
    vec![ctx.cwd.join(".claude").join("workflows"), ctx.home.join(".claude").join("workflows")]
}

fn available(ctx: &ToolContext) -> Vec<String> {
    let mut names: Vec<String> = named_dirs(ctx)
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".js").map(str::to_string))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `true` when `id` matches the schema's `^wf_[a-z0-9-]{6,}$`.
fn valid_run_id(id: &str) -> bool {
    id.strip_prefix("wf_").is_some_and(|rest| {
        rest.len() >= 6 && rest.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    })
}

/// The run id and task id of a call: derived from the session and the tool_use id (deterministic).
fn ids(ctx: &ToolContext) -> (String, String) {
    let call = ctx.call_id.clone().unwrap_or_else(|| "call".into());
    let h = Sha256::digest(format!("{}\0{call}", ctx.session_id).as_bytes());
    let hex: String = h.iter().map(|b| format!("{b:02x}")).collect();
    let run = format!("wf_{}-{}", &hex[..8], &hex[8..11]);
    let mut n = u64::from_be_bytes([h[16], h[17], h[18], h[19], h[20], h[21], h[22], h[23]]);
    let mut task = String::from("w");
    for _ in 0..8 {
        let d = (n % 36) as u32;
        n /= 36;
        task.push(char::from_digit(d, 36).unwrap_or('0'));
    }
    (run, task)
}

/// From Claude Code 2.1.248 a refused script (`Invalid workflow script: …`, the determinism text) ends
/// with a pointer to the `workflow-authoring` skill ([`AUTHORING_HINT`]).
pub const SCRIPT_REFUSAL_HINT: Switch = Switch {
    name: "workflow: a refused script points to the workflow-authoring skill",
    since: "2.1.248",
    probe: "workflow.refusals",
};

/// From Claude Code 2.1.265 a resume (`resumeFromRunId`) of a run whose journal is not on disk is
/// refused ([`no_journal`]); before, the id was taken for a fresh run.
pub const RESUME_NEEDS_JOURNAL: Switch = Switch {
    name: "workflow: resuming a run with no journal on disk is refused",
    since: "2.1.265",
    probe: "claude-code.workflow-texts",
};

/// From Claude Code 2.1.265 a fresh run's journal opens with a `{"type":"launched"}` line (a resume adds
/// none): read from 2.1.280's code; the probe's journal check fails from 2.1.265 (`workflow.resume`).
pub const JOURNAL_MARKS_LAUNCH: Switch = Switch {
    name: "workflow: a fresh run's journal opens with a launched line",
    since: "2.1.265",
    probe: "workflow.resume",
};

/// From Claude Code 2.1.326 the launch text's resume hint says which calls return cached results.
pub const RESUME_HINT_CALLS: Switch = Switch {
    name: "workflow: the launch text's resume hint names the agent() calls that replay",
    since: "2.1.326",
    probe: "workflow.resume",
};

/// The refusal of a call with no script, as the session's release words it ([`RUN_ID_NAMED`],
/// [`RUN_ID_UNNAMED`]).
fn must_provide(ctx: &ToolContext) -> &'static str {
    let p = ctx.profile();
    if p.has(&RUN_ID_NAMED) && !p.has(&RUN_ID_UNNAMED) {
        "Must provide script, name, scriptPath, or runId"
    } else {
        "Must provide script, name, or scriptPath"
    }
}

/// From Claude Code 2.1.239 a call with no script names `runId` among what it must provide
/// (`Must provide script, name, scriptPath, or runId`); [`RUN_ID_UNNAMED`] takes it back.
pub const RUN_ID_NAMED: Switch = Switch {
    name: "workflow: a call with no script names runId among what it must provide",
    since: "2.1.239",
    probe: "workflow.refusals",
};

/// From Claude Code 2.1.326 the refusal of a call with no script no longer names `runId` (reverts
/// [`RUN_ID_NAMED`]).
pub const RUN_ID_UNNAMED: Switch = Switch {
    name: "workflow: a call with no script no longer names runId (reverts the 2.1.239 text)",
    since: "2.1.326",
    probe: "workflow.refusals",
};

/// The line a refused script's error ends with under [`SCRIPT_REFUSAL_HINT`].
const AUTHORING_HINT: &str =
    "Load the `workflow-authoring` skill for the script reference if you have not, fix the script, and retry.";

/// A refusal of the script itself, worded as the session's release words it.
fn script_refusal(ctx: &ToolContext, text: String) -> ToolError {
    if ctx.profile().has(&SCRIPT_REFUSAL_HINT) {
        ToolError::Validation(format!("{text}\n{AUTHORING_HINT}"))
    } else {
        ToolError::Validation(text)
    }
}

/// The refusal of a resume whose run has no journal on disk ([`RESUME_NEEDS_JOURNAL`]), the reference's
/// words (2.1.333: it cannot fetch a remote copy either).
fn no_journal(run_id: &str, transcript_dir: &Path) -> ToolError {
    ToolError::Validation(format!(
        "The journal for workflow run {run_id} is not on disk, and this session cannot fetch a remote copy, so there is nothing to resume. Fallback: Read the agent-<id>.jsonl files in {} and hand-author a continuation script.",
        transcript_dir.display()
    ))
}

/// Checks that need no side effect, then the launch.
fn launch(args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let source = resolve(&args, ctx)?;
    let parsed =
        check::parse(&source.text).map_err(|e| script_refusal(ctx, format!("Invalid workflow script: {e}")))?;
    if args.script.is_some() && check::uses_nondeterminism(&parsed.body) {
        return Err(script_refusal(ctx, check::NOT_DETERMINISTIC.into()));
    }
    let (fresh_run, task_id) = ids(ctx);
    let run_id = match nonempty(&args.resume_from_run_id) {
        Some(id) if !valid_run_id(id) => {
            return Err(ToolError::Validation(format!(
                "Invalid resumeFromRunId {id:?}: a run id looks like wf_ followed by at least 6 of [a-z0-9-] (the Run ID of an earlier Workflow result)."
            )))
        }
        Some(id) => {
            if let Some(running) = running_task(ctx, id) {
                return Err(ToolError::Validation(format!(
                    "Workflow {id} is still running (task {running}). Stop it first with TaskStop({{taskId: \"{running}\"}}) before resuming."
                )));
            }
            id.to_string()
        }
        None => fresh_run,
    };
    let meta = &parsed.meta;
    let paths = run_paths(ctx, &run_id, &meta.name, source.path.clone());
    if nonempty(&args.resume_from_run_id).is_some()
        && ctx.profile().has(&RESUME_NEEDS_JOURNAL)
        && !paths.transcript_dir.join("journal.jsonl").is_file()
    {
        return Err(no_journal(&run_id, &paths.transcript_dir));
    }
    let io = |what: &Path, e: std::io::Error| ToolError::Runtime(format!("cannot write {}: {e}", what.display()));
    for dir in
        [paths.script.parent(), paths.record.parent(), Some(paths.transcript_dir.as_path())].into_iter().flatten()
    {
        crate::nofollow::create_dir_all(&ctx.roots, dir).map_err(|e| io(dir, e))?;
    }
    // the run's files lie in the sandbox the subject writes too: no link it planted is followed
    if source.path.is_none() || args.script.is_some() {
        crate::nofollow::write(&ctx.roots, &paths.script, source.text.as_bytes()).map_err(|e| io(&paths.script, e))?;
    }
    if nonempty(&args.resume_from_run_id).is_none() && ctx.profile().has(&JOURNAL_MARKS_LAUNCH) {
        let journal = paths.transcript_dir.join("journal.jsonl");
        crate::nofollow::write(&ctx.roots, &journal, b"{\"type\":\"launched\"}\n").map_err(|e| io(&journal, e))?;
    }
    let mut record = json!({
        "runId": run_id,
        "taskId": task_id,
        "script": source.text,
        "scriptPath": paths.script,
        "summary": meta.description,
        "workflowName": meta.name,
        "status": "running",
    });
    if let Some(a) = &args.args {
        record["args"] = a.clone();
    }
    if !meta.phases.is_empty() {
        record["phases"] = Value::Array(
            meta.phases
                .iter()
                .map(|p| match &p.detail {
                    Some(d) => json!({"title": p.title, "detail": d}),
                    None => json!({"title": p.title}),
                })
                .collect(),
        );
    }
    write_record(&ctx.roots, &paths.record, &record).map_err(|e| io(&paths.record, e))?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let task = Task {
        id: task_id.clone(),
        command: meta.description.clone(),
        description: meta.description.clone(),
        tool_use_id: ctx.call_id.clone().unwrap_or_default(),
        output_file: paths.record.clone(),
        status: Status::Running,
        exit_code: None,
        notified: false,
    };
    ctx.shell.tasks.set_log_if_absent(&ctx.roots, ctx.session_log());
    ctx.shell.tasks.add_workflow(task, stop_tx);
    let job = Job {
        ctx: ctx.clone(),
        task_id: task_id.clone(),
        body: parsed.body.clone(),
        args: args.args.clone(),
        paths: paths.clone(),
        run_id: run_id.clone(),
        record,
        started: std::time::Instant::now(),
    };
    tokio::spawn(drive(job, stop_rx));
    let script = paths.script.display();
    let dir = paths.transcript_dir.display();
    let resume = if ctx.profile().has(&RESUME_HINT_CALLS) {
        format!("To resume after editing the script, with the same args if this run had any: Workflow({{scriptPath: \"{script}\", resumeFromRunId: \"{run_id}\"}}) — agent() calls return cached results up to the first one that failed, no longer matches (edited, added, removed, or in a different call order) or never started. Cached results may themselves be empty: inspect journal.jsonl before assuming there is something to recover.")
    } else {
        format!("To resume after editing the script: Workflow({{scriptPath: \"{script}\", resumeFromRunId: \"{run_id}\"}}) — completed agents return cached results (cached results may themselves be empty — inspect journal.jsonl before assuming there is something to recover).")
    };
    let text = format!(
        "Workflow launched in background. Task ID: {task_id}\nSummary: {}\nTranscript dir: {dir}\nScript file: {script}\n(Edit this file with Write/Edit and re-invoke Workflow with {{scriptPath: \"{script}\"}} to iterate without resending the script.)\nRun ID: {run_id}\n{resume}\n\nYou will be notified when it completes. Use /workflows to watch live progress.",
        meta.description
    );
    let data = json!({
        "status": "async_launched",
        "taskId": task_id,
        "taskType": "local_workflow",
        "workflowName": meta.name,
        "runId": run_id,
        "summary": meta.description,
        "transcriptDir": paths.transcript_dir,
        "scriptPath": paths.script,
    });
    Ok(ToolOutput::Data { text, data })
}

/// The task of a run that is still running, from the run's record and the task registry.
fn running_task(ctx: &ToolContext, run_id: &str) -> Option<String> {
    let record = std::fs::read_to_string(workflows_dir(ctx).join(format!("{run_id}.json"))).ok()?;
    let v: Value = serde_json::from_str(&record).ok()?;
    let task = v.get("taskId")?.as_str()?;
    (ctx.shell.tasks.get(task)?.status == Status::Running).then(|| task.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids() {
        assert!(valid_run_id("wf_955a0217-17c"));
        assert!(!valid_run_id("wf_ABCDEF1"));
        assert!(!valid_run_id("wf_12345"));
        let (_d, mut ctx) = ToolContext::for_test();
        ctx.call_id = Some("toolu_1".into());
        let (run, task) = ids(&ctx);
        assert!(valid_run_id(&run), "{run}");
        assert_eq!(run.len(), "wf_955a0217-17c".len());
        assert_eq!(task.len(), 9);
        assert_eq!(ids(&ctx), (run, task), "deterministic");
    }

    #[test]
    fn refusals() {
        let (_d, ctx) = ToolContext::for_test();
        let go = |input: Value| {
            let args: Args = serde_json::from_value(input).unwrap_or_else(|e| panic!("{e}"));
            launch(args, &ctx).err().map(|e| e.to_string()).unwrap_or_default()
        };
        assert!(go(json!({})).contains("Must provide script, name, or scriptPath"));
        assert_eq!(go(json!({"name": "nope"})), "Workflow \"nope\" not found. Available: (none)");
        assert_eq!(
            go(json!({"script": "export const meta = { name: 'a', description: 'b' }\nconst t = Date.now()\n"})),
            check::NOT_DETERMINISTIC
        );
        assert!(go(json!({"scriptPath": "/etc/passwd"})).contains("outside the sandbox"));
        assert!(go(json!({"scriptPath": "missing.js"})).starts_with("Workflow script file not found: "));
        assert_eq!(
            go(json!({"script": "const x = 1\nexport const meta = { name: 'a', description: 'b' }"})),
            "Invalid workflow script: `export const meta = { name, description, phases }` must be the FIRST statement in the script"
        );
    }

    /// A fresh run's journal: none at launch before JOURNAL_MARKS_LAUNCH (2.1.263), a launched line from
    /// it (2.1.265); a resume adds none.
    #[tokio::test]
    async fn journal_marks_a_launch_from_2_1_265() {
        let script = "export const meta = { name: 'x', description: 'd' }\nreturn 1\n";
        let journal_at = |version: &str, resume: bool| {
            let (d, mut ctx) = ToolContext::for_test_at(version);
            ctx.call_id = Some("toolu_1".into());
            let input = if resume {
                json!({ "script": script, "resumeFromRunId": "wf_00000000-000" })
            } else {
                json!({ "script": script })
            };
            let args: Args = serde_json::from_value(input).unwrap_or_else(|e| panic!("{e}"));
            let out = launch(args, &ctx);
            ctx.shell.tasks.stop_all();
            let dir = match out {
                Ok(ToolOutput::Data { data, .. }) => data["transcriptDir"].as_str().unwrap_or_default().to_string(),
                Err(e) => return (d, Err(e.to_string())),
                other => panic!("{other:?}"),
            };
            (d, Ok(std::fs::read_to_string(Path::new(&dir).join("journal.jsonl")).ok()))
        };
        assert_eq!(journal_at("2.1.263", false).1, Ok(None));
        assert_eq!(journal_at("2.1.265", false).1, Ok(Some("{\"type\":\"launched\"}\n".to_string())));
        assert_eq!(journal_at("2.1.263", true).1, Ok(None), "an unknown run id starts a fresh journal, with no mark");
    }

    /// A call with no script: runId named from RUN_ID_NAMED (workflow.refusals on 2.1.238 / 2.1.239),
    /// not any more from RUN_ID_UNNAMED (2.1.325 / 2.1.326).
    #[test]
    fn must_provide_by_release() {
        let refusal = |version: &str| {
            let (_d, ctx) = ToolContext::for_test_at(version);
            let args: Args = serde_json::from_value(json!({})).unwrap_or_else(|e| panic!("{e}"));
            launch(args, &ctx).err().map(|e| e.to_string()).unwrap_or_default()
        };
        for (version, named) in [("2.1.238", false), ("2.1.239", true), ("2.1.325", true), ("2.1.326", false)] {
            let e = refusal(version);
            assert_eq!(e.contains("\"Must provide script, name, scriptPath, or runId\""), named, "{version}: {e}");
            assert_eq!(e.contains("\"Must provide script, name, or scriptPath\""), !named, "{version}: {e}");
        }
    }

    /// The refusal of a script, before and from SCRIPT_REFUSAL_HINT (measured: workflow.refusals on
    /// 2.1.247 / 2.1.248).
    #[test]
    fn a_refused_script_points_to_the_skill_from_2_1_248() {
        let refusal = |version: &str, script: &str| {
            let (_d, ctx) = ToolContext::for_test_at(version);
            let args: Args = serde_json::from_value(json!({ "script": script })).unwrap_or_else(|e| panic!("{e}"));
            launch(args, &ctx).err().map(|e| e.to_string()).unwrap_or_default()
        };
        let late = "const x = 1\nexport const meta = { name: 'a', description: 'b' }";
        let random = "export const meta = { name: 'a', description: 'b' }\nconst r = Math.random()\n";
        let first = "Invalid workflow script: `export const meta = { name, description, phases }` must be the FIRST statement in the script";
        assert_eq!(refusal("2.1.247", late), first);
        assert_eq!(refusal("2.1.247", random), check::NOT_DETERMINISTIC);
        assert_eq!(refusal("2.1.248", late), format!("{first}\n{AUTHORING_HINT}"));
        assert_eq!(refusal("2.1.333", random), format!("{}\n{AUTHORING_HINT}", check::NOT_DETERMINISTIC));
        // not a refusal of the script: no hint
        let (_d, ctx) = ToolContext::for_test_at("2.1.333");
        let args: Args = serde_json::from_value(json!({})).unwrap_or_else(|e| panic!("{e}"));
        assert!(!launch(args, &ctx).err().map(|e| e.to_string()).unwrap_or_default().contains(AUTHORING_HINT));
    }

    /// A resume of a run with no journal: a fresh run under that id before RESUME_NEEDS_JOURNAL, refused
    /// from it (measured: claude-code.workflow-texts on 2.1.263 / 2.1.265); the launch text's resume hint
    /// before and from RESUME_HINT_CALLS (workflow.resume on 2.1.325 / 2.1.326).
    #[tokio::test]
    async fn resume_texts_by_release() {
        let script = "export const meta = { name: 'x', description: 'fixed id' }\nreturn 1\n";
        let launch_at = |version: &str| {
            let (d, ctx) = ToolContext::for_test_at(version);
            let args: Args =
                serde_json::from_value(json!({ "script": script, "resumeFromRunId": "wf_chosen-by-model" }))
                    .unwrap_or_else(|e| panic!("{e}"));
            let out = launch(args, &ctx);
            ctx.shell.tasks.stop_all();
            (d, out)
        };
        let (_d, old) = launch_at("2.1.263");
        let text = match old {
            Ok(ToolOutput::Data { text, .. }) => text,
            other => panic!("{other:?}"),
        };
        assert!(text.contains("\nRun ID: wf_chosen-by-model\n"), "{text}");
        assert!(text.contains("\nTo resume after editing the script: Workflow({scriptPath: "), "{text}");
        assert!(text.contains("— completed agents return cached results (cached results may themselves be empty — inspect journal.jsonl before assuming there is something to recover).\n"), "{text}");
        let (_d, refused) = launch_at("2.1.265");
        let e = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.starts_with("The journal for workflow run wf_chosen-by-model is not on disk, and this session cannot fetch a remote copy, so there is nothing to resume. Fallback: Read the agent-<id>.jsonl files in /"), "{e}");
        assert!(e.ends_with("/subagents/workflows/wf_chosen-by-model and hand-author a continuation script."), "{e}");
        // a fresh run on 2.1.326: the new hint
        let (_d, ctx) = ToolContext::for_test_at("2.1.326");
        let args: Args = serde_json::from_value(json!({ "script": script })).unwrap_or_else(|e| panic!("{e}"));
        let out = launch(args, &ctx);
        ctx.shell.tasks.stop_all();
        let text = match out {
            Ok(ToolOutput::Data { text, .. }) => text,
            other => panic!("{other:?}"),
        };
        assert!(
            text.contains(
                "\nTo resume after editing the script, with the same args if this run had any: Workflow({scriptPath: "
            ),
            "{text}"
        );
        assert!(text.contains("— agent() calls return cached results up to the first one that failed, no longer matches (edited, added, removed, or in a different call order) or never started. Cached results may themselves be empty: inspect journal.jsonl before assuming there is something to recover.\n\nYou will"), "{text}");
    }
}
