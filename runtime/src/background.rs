//! Background work of a session (BG-1): the registry of tasks a call started and left running — a Bash
//! command with `run_in_background` (BASH-4), a background agent, a workflow run — each with an id and an
//! output file; the agent loop drains the finished ones before each model call as one
//! `<background-results>` block, each output cut to [`BACKGROUND_RESULT_CHARS`] chars, and waits for the
//! running ones at the model's end. The shell state of the session ([`ShellState`]: the Bash cwd) lives
//! here too. TaskOutput and TaskStop (`tools/task_output.rs`) read and stop these tasks.
//!
//! The notification reuses the reference's `<task-notification>` fields (measured on Claude Code 2.1.235
//! by `probes/claude-code/bash-*.toml`) inside BG-1's `<background-results>` envelope and adds the
//! output, which the reference leaves in the file.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// How long the agent loop waits for a background task to end before it looks again (it waits while any
/// runs: the reference's `-p` mode lets background work finish; the same bound as Bash's longest timeout).
pub const MAX_WAIT_MS: u64 = 600_000;
/// Bound on the wait for the end of a command whose process has exited to be recorded, before a request
/// ([`TaskRegistry::settle`]): collecting its output and removing its cgroup take milliseconds.
pub const SETTLE_MS: u64 = 2_000;
/// Characters of a finished task's output injected before the next model call (BG-1).
pub const BACKGROUND_RESULT_CHARS: usize = 500;

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Still running.
    Running,
    /// Exited 0.
    Completed,
    /// Exited non-zero (or was killed by a signal it did not get from TaskStop).
    Failed,
    /// Stopped by TaskStop (or at the end of the session).
    Killed,
}

impl Status {
    /// The word the reference uses.
    pub fn word(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Killed => "killed",
        }
    }
}

/// One background task.
#[derive(Debug, Clone)]
pub struct Task {
    /// `b…` id.
    pub id: String,
    /// The command.
    pub command: String,
    /// The call's description (or the command).
    pub description: String,
    /// The tool_use that started it.
    pub tool_use_id: String,
    /// stdout + stderr, as written.
    pub output_file: PathBuf,
    /// Status.
    pub status: Status,
    /// Exit code once ended.
    pub exit_code: Option<i32>,
    /// Delivered to the model by the loop (or needs no delivery: stopped).
    pub notified: bool,
}

/// The session's tasks.
#[derive(Debug, Default)]
pub struct TaskRegistry {
    tasks: Mutex<Vec<Task>>,
    stops: Mutex<Vec<(String, tokio::sync::oneshot::Sender<()>)>>,
    changed: Mutex<Option<watch::Sender<u64>>>,
    issued: std::sync::atomic::AtomicU64,
    /// Tasks that are background sub-agents (`local_agent`, AGENT-1): id → the agent's final text once
    /// it ended (None while it runs or when it failed).
    agents: Mutex<std::collections::HashMap<String, Option<String>>>,
    /// A finished sub-agent's `<usage>` element for its notification (AGENT-1).
    agent_usage: Mutex<std::collections::HashMap<String, String>>,
    /// The conversation's mailbox reader (MSG-1): its unread messages go in with the notifications.
    inbox: Mutex<Option<InboxReader>>,
    /// Background commands the reference forgets: stopped by TaskStop, or whose end TaskOutput has
    /// returned ([`TaskRegistry::retire`]).
    retired: Mutex<std::collections::HashSet<String>>,
    /// Tasks that are Workflow runs (`local_workflow`, WF-1): id → what the run left once it ended.
    workflows: Mutex<std::collections::HashMap<String, Option<WorkflowEnd>>>,
    /// Background commands whose shell has exited and been reaped but whose end is not recorded yet
    /// (their output is still being collected): [`TaskRegistry::settle`] waits for them.
    exiting: Mutex<std::collections::HashSet<String>>,
    /// The session log (`<project dir>/<session id>.jsonl`) where the end of a task is recorded as the
    /// reference records it: a `queue-operation` enqueue of its notification ([`TaskRegistry::finish`]).
    /// The session log and the roots it is written under with no link followed ([`crate::nofollow`]).
    log: Mutex<Option<(Vec<PathBuf>, PathBuf)>>,
}

/// What a Workflow run (task type `local_workflow`, WF-1) leaves for TaskOutput and its notification,
/// as Claude Code 2.1.235 shows them (`probes/claude-code/workflow-*.toml`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkflowEnd {
    /// The script's return value as JSON text: the notification's `<result>` (a completed run that
    /// returned something).
    pub result: Option<String>,
    /// The error, for a failed run: the summary reads `Dynamic workflow "…" failed: <error>`.
    pub error: Option<String>,
    /// TaskOutput's `<output>` of a completed run: the JSON progress report (failed and stopped runs
    /// show none, as measured).
    pub report: Option<String>,
    /// The notification's elements after `<result>`, tags included, in order (`<diagnostics>` or
    /// `<recovery>`, then `<usage>`).
    pub blocks: Vec<String>,
}

/// Reads a conversation's unread mailbox messages (MSG-1) as the text to put before its next request;
/// `None` when nothing is new. Installed by the Agent tool (`agent_tool`).
pub struct InboxReader(pub Box<dyn Fn() -> Option<String> + Send + Sync>);

impl std::fmt::Debug for InboxReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InboxReader")
    }
}

impl TaskRegistry {
    fn sender(&self) -> watch::Sender<u64> {
        let mut g = self.changed.lock().unwrap_or_else(|p| p.into_inner());
        g.get_or_insert_with(|| watch::channel(0).0).clone()
    }

    /// Subscribes to changes (a task ended).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.sender().subscribe()
    }

    /// Registers a started task; `stop` ends it when TaskStop (or the session's end) asks.
    pub fn add(&self, task: Task, stop: tokio::sync::oneshot::Sender<()>) {
        let id = task.id.clone();
        self.tasks.lock().unwrap_or_else(|p| p.into_inner()).push(task);
        self.stops.lock().unwrap_or_else(|p| p.into_inner()).push((id, stop));
    }

    /// A new id: `b` and eight digits, in order of issue within a session (each issued once, also to
    /// background calls of one turn that run side by side).
    pub fn next_id(&self) -> String {
        format!("b{:08}", self.issued.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1)
    }

    /// Registers a started background sub-agent (task type `local_agent`, AGENT-1): `task.command` holds
    /// its description, `task.output_file` its transcript.
    pub fn add_agent(&self, task: Task, stop: tokio::sync::oneshot::Sender<()>) {
        self.agents.lock().unwrap_or_else(|p| p.into_inner()).insert(task.id.clone(), None);
        self.add(task, stop);
    }

    /// Records a sub-agent's final text (before [`TaskRegistry::finish`]).
    pub fn set_agent_result(&self, id: &str, text: String) {
        if let Some(r) = self.agents.lock().unwrap_or_else(|p| p.into_inner()).get_mut(id) {
            *r = Some(text);
        }
    }

    /// Records a finished sub-agent's `<usage>` element, tags included (before [`TaskRegistry::finish`]).
    pub fn set_agent_usage(&self, id: &str, usage: String) {
        self.agent_usage.lock().unwrap_or_else(|p| p.into_inner()).insert(id.to_string(), usage);
    }

    /// Registers a started Workflow run (task type `local_workflow`, WF-1): `task.command` and
    /// `task.description` hold its `meta.description`.
    pub fn add_workflow(&self, task: Task, stop: tokio::sync::oneshot::Sender<()>) {
        self.workflows.lock().unwrap_or_else(|p| p.into_inner()).insert(task.id.clone(), None);
        self.add(task, stop);
    }

    /// Records what a Workflow run left (before [`TaskRegistry::finish`]).
    pub fn set_workflow_end(&self, id: &str, end: WorkflowEnd) {
        if let Some(r) = self.workflows.lock().unwrap_or_else(|p| p.into_inner()).get_mut(id) {
            *r = Some(end);
        }
    }

    /// `Some(what it left, None while it runs)` when `id` is a Workflow run.
    pub fn workflow_end(&self, id: &str) -> Option<Option<WorkflowEnd>> {
        self.workflows.lock().unwrap_or_else(|p| p.into_inner()).get(id).cloned()
    }

    /// `local_workflow` for a Workflow run, `local_agent` for a sub-agent, `local_bash` for a command.
    pub fn task_type(&self, id: &str) -> &'static str {
        if self.workflow_end(id).is_some() {
            "local_workflow"
        } else if self.agent_result(id).is_some() {
            "local_agent"
        } else {
            "local_bash"
        }
    }

    /// `Some(final text or None)` when `id` is a sub-agent.
    pub fn agent_result(&self, id: &str) -> Option<Option<String>> {
        self.agents.lock().unwrap_or_else(|p| p.into_inner()).get(id).cloned()
    }

    /// Installs the conversation's mailbox reader unless one is there (MSG-1).
    pub fn set_inbox_if_absent(&self, make: impl FnOnce() -> InboxReader) {
        let mut g = self.inbox.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some(make());
        }
    }

    /// The task's process has exited (reaped): its end is recorded in a moment ([`TaskRegistry::finish`]).
    pub fn exited(&self, id: &str) {
        self.exiting.lock().unwrap_or_else(|p| p.into_inner()).insert(id.to_string());
    }

    /// Waits (at most `ms`) until every task whose process has exited has its end recorded, so that
    /// the next request carries the notification of a command that is gone — as the reference's does
    /// (`probes/bash/task-forgotten.toml`: without this a command seen gone by a later call could still
    /// be running for the loop, about 1 run in 50).
    pub async fn settle(&self, ms: u64) {
        let mut rx = self.subscribe();
        let until = tokio::time::Instant::now() + std::time::Duration::from_millis(ms);
        while !self.exiting.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
            if tokio::time::timeout_at(until, rx.changed()).await.is_err() {
                return;
            }
        }
    }

    /// Sets the session log the ends of tasks are recorded in, unless one is set ([`TaskRegistry::finish`]).
    pub fn set_log_if_absent(&self, roots: &[PathBuf], path: PathBuf) {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert((roots.to_vec(), path));
    }

    /// Records the end of a task. One that is to be notified (not stopped) is also recorded in the
    /// session log, as the reference records a notification it queues: a line
    /// `{"type":"queue-operation","operation":"enqueue","content":"<task-notification>…"}` (Claude Code
    /// 2.1.235 and 2.1.333 write it the moment the notification is queued, so a probe can wait for it:
    /// `probes/claude-code/bash-background.toml`). A log that cannot be written changes nothing else.
    pub fn finish(&self, id: &str, status: Status, exit_code: Option<i32>) {
        self.exiting.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
        let mut queued = None;
        if let Some(t) = self.tasks.lock().unwrap_or_else(|p| p.into_inner()).iter_mut().find(|t| t.id == id) {
            if t.status == Status::Running {
                t.status = status;
                t.exit_code = exit_code;
                t.notified |= status == Status::Killed;
                queued = (!t.notified).then(|| t.clone());
            }
        }
        if let Some(t) = queued {
            self.log_queued(&t);
        }
        self.sender().send_modify(|n| *n += 1);
    }

    /// Appends the queue-operation line of an ended task's notification to the session log, if one is set.
    fn log_queued(&self, t: &Task) {
        let Some((roots, path)) = self.log.lock().unwrap_or_else(|p| p.into_inner()).clone() else { return };
        // the reference's fields; a command's output stays in the file
        let content = self.result_notification(t).unwrap_or_else(|| command_notification(t, None));
        let line = serde_json::json!({"type": "queue-operation", "operation": "enqueue", "content": content})
            .to_string()
            + "\n";
        let _ = crate::nofollow::append(&roots, &path, line.as_bytes());
    }

    /// Forgets a background command for TaskOutput and TaskStop (its notification, if still due, is
    /// delivered all the same): Claude Code 2.1.235 answers `No task found with ID: …` for a command
    /// TaskStop ended, for one whose end TaskOutput already returned, and for one whose end notification
    /// reached the model (also done by the drain; `probes/bash/task-forgotten.toml` on both subjects).
    /// Sub-agents and workflow runs stay known.
    pub fn retire(&self, id: &str) {
        if self.task_type(id) == "local_bash" {
            self.retired.lock().unwrap_or_else(|p| p.into_inner()).insert(id.to_string());
        }
    }

    /// The task, unless it was retired ([`TaskRegistry::retire`]): what TaskOutput and TaskStop see.
    pub fn known(&self, id: &str) -> Option<Task> {
        if self.retired.lock().unwrap_or_else(|p| p.into_inner()).contains(id) {
            return None;
        }
        self.get(id)
    }

    /// A snapshot of the task.
    pub fn get(&self, id: &str) -> Option<Task> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner()).iter().find(|t| t.id == id).cloned()
    }

    /// Tasks still running.
    pub fn running(&self) -> usize {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner()).iter().filter(|t| t.status == Status::Running).count()
    }

    /// Asks a running task to stop (its runner kills the process group and reports `Killed`).
    pub fn stop(&self, id: &str) -> bool {
        let mut stops = self.stops.lock().unwrap_or_else(|p| p.into_inner());
        match stops.iter().position(|(i, _)| i == id) {
            Some(k) => stops.swap_remove(k).1.send(()).is_ok(),
            None => false,
        }
    }

    /// Stops every running task (end of the session: nothing outlives it).
    pub fn stop_all(&self) {
        let all: Vec<_> = self.stops.lock().unwrap_or_else(|p| p.into_inner()).drain(..).collect();
        for (_, s) in all {
            let _ = s.send(());
        }
    }

    /// Waits until `id` is no longer running, at most `ms`.
    pub async fn wait(&self, id: &str, ms: u64) -> Option<Task> {
        let mut rx = self.subscribe();
        let until = tokio::time::Instant::now() + std::time::Duration::from_millis(ms);
        loop {
            let t = self.get(id)?;
            if t.status != Status::Running {
                return Some(t);
            }
            if tokio::time::timeout_at(until, rx.changed()).await.is_err() {
                return self.get(id);
            }
        }
    }

    /// Waits until no task runs, at most `ms`.
    pub async fn wait_idle(&self, ms: u64) {
        let until = tokio::time::Instant::now() + std::time::Duration::from_millis(ms);
        let mut rx = self.subscribe();
        while self.running() > 0 {
            if tokio::time::timeout_at(until, rx.changed()).await.is_err() {
                return;
            }
        }
    }

    /// Waits until some running task ends (at most `ms`); true when one did.
    pub async fn wait_any(&self, ms: u64) -> bool {
        let mut rx = self.subscribe();
        let before = self.running();
        if before == 0 {
            return false;
        }
        let until = tokio::time::Instant::now() + std::time::Duration::from_millis(ms);
        loop {
            if self.running() < before {
                return true;
            }
            if tokio::time::timeout_at(until, rx.changed()).await.is_err() {
                return false;
            }
        }
    }

    /// BG-1: the finished tasks not yet delivered, as one `<background-results>` block (each output cut to
    /// [`BACKGROUND_RESULT_CHARS`]; a sub-agent's final text as `<result>`), marked delivered, followed by
    /// the unread mailbox messages (MSG-1). None when there is nothing new.
    pub fn drain_notifications(&self) -> Option<String> {
        let tasks_block = self.drain_tasks();
        let inbox = self.inbox.lock().unwrap_or_else(|p| p.into_inner()).as_ref().and_then(|r| (r.0)());
        match (tasks_block, inbox) {
            (Some(t), Some(i)) => Some(format!("{t}\n\n{i}")),
            (t, i) => t.or(i),
        }
    }

    fn drain_tasks(&self) -> Option<String> {
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        let mut parts = Vec::new();
        for t in tasks.iter_mut().filter(|t| t.status != Status::Running && !t.notified) {
            t.notified = true;
            if let Some(n) = self.result_notification(t) {
                parts.push(n);
                continue;
            }
            // a command whose end reached the model is forgotten, as the reference forgets it
            // (`probes/bash/task-forgotten.toml`)
            self.retired.lock().unwrap_or_else(|p| p.into_inner()).insert(t.id.clone());
            let output = read_output(t);
            let total = output.chars().count();
            let mut shown: String = output.chars().take(BACKGROUND_RESULT_CHARS).collect();
            if total > BACKGROUND_RESULT_CHARS {
                shown.push_str(&format!("\n… [{total} chars in all; the whole output is in the output file]"));
            }
            parts.push(command_notification(t, Some(shown.trim_end_matches('\n'))));
        }
        (!parts.is_empty()).then(|| format!("<background-results>\n{}\n</background-results>", parts.join("\n")))
    }

    /// The notification of a workflow run or a sub-agent that ended (None for a command): what
    /// [`TaskRegistry::drain_tasks`] delivers and [`TaskRegistry::log_queued`] records.
    fn result_notification(&self, t: &Task) -> Option<String> {
        if let Some(end) = self.workflow_end(&t.id) {
            return Some(workflow_notification(t, &end.unwrap_or_default()));
        }
        let result = self.agent_result(&t.id)?;
        let usage = self.agent_usage.lock().unwrap_or_else(|p| p.into_inner()).get(&t.id).cloned();
        Some(agent_notification(t, result.as_deref().unwrap_or(""), usage.as_deref()))
    }
}

/// A command's notification: the reference's `<task-notification>` fields, with its output (as delivered
/// to the model) or without (as queued in the session log, the output staying in the file).
fn command_notification(t: &Task, output: Option<&str>) -> String {
    format!(
        "{}\n{}</task-notification>",
        notification_head(t, &summary(t)),
        output.map(|o| format!("<output>\n{o}\n</output>\n")).unwrap_or_default(),
    )
}

/// The fields every `<task-notification>` opens with, through its `<summary>` (no line break after).
fn notification_head(t: &Task, summary: &str) -> String {
    format!(
        "<task-notification>\n<task-id>{}</task-id>\n<tool-use-id>{}</tool-use-id>\n<output-file>{}</output-file>\n<status>{}</status>\n<summary>{summary}</summary>",
        t.id,
        t.tool_use_id,
        t.output_file.display(),
        t.status.word(),
    )
}

/// A sub-agent's or workflow run's final text as its `<result>` shows it: cut to
/// [`BACKGROUND_RESULT_CHARS`] (BG-1), the count of all its characters after the cut.
fn shown_result(result: &str) -> String {
    let total = result.chars().count();
    let mut shown: String = result.chars().take(BACKGROUND_RESULT_CHARS).collect();
    if total > BACKGROUND_RESULT_CHARS {
        shown.push_str(&format!("\n… [{total} chars in all]"));
    }
    shown
}

/// A finished sub-agent's notification: the reference's `<task-notification>` fields, its final text
/// as `<result>` (cut to [`BACKGROUND_RESULT_CHARS`], BG-1), then its `<usage>` element when it
/// completed (the reference's: `<subagent_tokens>`, `<tool_uses>`, `<duration_ms>`,
/// `probes/claude-code/agent-background.toml`).
fn agent_notification(t: &Task, result: &str, usage: Option<&str>) -> String {
    let summary = match t.status {
        Status::Completed => format!("Agent \"{}\" finished", t.description),
        Status::Killed => format!("Agent \"{}\" was stopped", t.description),
        _ => format!("Agent \"{}\" failed", t.description),
    };
    format!(
        "{}\n<result>{}</result>\n{}</task-notification>",
        notification_head(t, &summary),
        shown_result(result),
        usage.filter(|_| t.status == Status::Completed).map(|u| format!("{u}\n")).unwrap_or_default(),
    )
}

/// Escapes text for an element of a notification (`&`, `<`, `>`; the reference sends a stack trace's
/// `<anonymous>` as `&lt;anonymous&gt;`).
fn xml_text(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A finished Workflow run's notification (WF-1): the reference's fields and summary (`Dynamic workflow
/// "…" completed` / `failed: …`), the return value as `<result>` (cut to [`BACKGROUND_RESULT_CHARS`],
/// BG-1), then the run's own blocks.
fn workflow_notification(t: &Task, end: &WorkflowEnd) -> String {
    let summary = match t.status {
        Status::Completed => format!("Dynamic workflow \"{}\" completed", t.description),
        Status::Killed => format!("Dynamic workflow \"{}\" was stopped", t.description),
        _ => format!(
            "Dynamic workflow \"{}\" failed: {}",
            t.description,
            xml_text(end.error.as_deref().unwrap_or("unknown error"))
        ),
    };
    let mut out = notification_head(t, &summary);
    if let (Status::Completed, Some(result)) = (t.status, &end.result) {
        out.push_str(&format!("\n<result>{}</result>", shown_result(result)));
    }
    for b in &end.blocks {
        out.push('\n');
        out.push_str(b);
    }
    out.push_str("\n</task-notification>");
    out
}

fn summary(t: &Task) -> String {
    match (t.status, t.exit_code) {
        (Status::Completed, _) => format!("Background command \"{}\" completed (exit code 0)", t.description),
        (Status::Failed, Some(c)) => format!("Background command \"{}\" failed with exit code {c}", t.description),
        (Status::Failed, None) => format!("Background command \"{}\" failed", t.description),
        (Status::Killed, _) => format!("Background command \"{}\" was stopped", t.description),
        (Status::Running, _) => format!("Background command \"{}\" is running", t.description),
    }
}

/// The task's output file as text: empty when it is gone (removed by a command: nothing is left to
/// show), the failure in its place when it is there but cannot be read (a notification has no error
/// channel, and an empty output would pass for a silent command).
fn read_output(t: &Task) -> String {
    match std::fs::read(&t.output_file) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => format!("[the output file could not be read: {e}]"),
    }
}

/// The output the reference shows for an ended task: the file, then `[exited with code N]`, 0 included
/// (`started\n<cwd>/sub\n\n[exited with code 0]`: `probes/claude-code/bash-background.toml`, a command
/// that ended while TaskOutput waited for it). (A scratch run on 2.1.235 once showed a command that had
/// ended just before the call, its end not yet notified, without the line: a window of a few
/// milliseconds no probe can hold — once the notification is out the reference has forgotten the task,
/// `probes/bash/task-forgotten.toml` — so the built-in runtime always adds it.)
pub fn shown_output(t: &Task) -> String {
    let text = read_output(t);
    match t.exit_code {
        Some(c) => format!("{}\n\n[exited with code {c}]", text.trim_end_matches('\n')),
        None => text.trim_end_matches('\n').to_string(),
    }
}

/// The shell state of a session: the Bash cwd (persists across foreground calls) and the tasks.
#[derive(Debug, Default)]
pub struct ShellState {
    /// The shell's cwd (None: the session's cwd).
    pub cwd: Mutex<Option<PathBuf>>,
    /// Background tasks.
    pub tasks: TaskRegistry,
    /// Commands run so far (numbers temp files).
    pub runs: std::sync::atomic::AtomicU64,
}

/// Shared handle.
pub type Shell = Arc<ShellState>;

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, dir: &std::path::Path, out: &str) -> Task {
        let output_file = dir.join(format!("{id}.output"));
        std::fs::write(&output_file, out).unwrap_or_else(|e| panic!("{e}"));
        Task {
            id: id.into(),
            command: "c".into(),
            description: "d".into(),
            tool_use_id: "toolu_1".into(),
            output_file,
            status: Status::Running,
            exit_code: None,
            notified: false,
        }
    }

    #[test]
    fn an_output_file_removed_is_empty_and_one_unreadable_says_why() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut t = task("b1", d.path(), "out\n");
        t.exit_code = Some(0);
        assert_eq!(shown_output(&t), "out\n\n[exited with code 0]");
        std::fs::remove_file(&t.output_file).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(shown_output(&t), "\n\n[exited with code 0]", "removed: nothing to show");
        std::fs::create_dir(&t.output_file).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            shown_output(&t),
            "[the output file could not be read: Is a directory (os error 21)]\n\n[exited with code 0]"
        );
    }

    #[test]
    fn workflow_runs_are_local_workflow_tasks() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let r = TaskRegistry::default();
        let (a, _ra) = tokio::sync::oneshot::channel();
        let (b, _rb) = tokio::sync::oneshot::channel();
        let (c, _rc) = tokio::sync::oneshot::channel();
        r.add_workflow(task("w1", d.path(), ""), a);
        r.add_workflow(task("w2", d.path(), ""), b);
        r.add_workflow(task("w3", d.path(), ""), c);
        assert_eq!(r.task_type("w1"), "local_workflow");
        r.set_workflow_end(
            "w1",
            WorkflowEnd {
                result: Some("{\"n\":1}".into()),
                blocks: vec!["<usage>u</usage>".into()],
                ..WorkflowEnd::default()
            },
        );
        r.finish("w1", Status::Completed, None);
        r.set_workflow_end("w2", WorkflowEnd { error: Some("bad <x>".into()), ..WorkflowEnd::default() });
        r.finish("w2", Status::Failed, None);
        r.finish("w3", Status::Killed, None);
        let n = r.drain_notifications().unwrap_or_default();
        assert!(n.contains("<summary>Dynamic workflow \"d\" completed</summary>\n<result>{\"n\":1}</result>\n<usage>u</usage>\n</task-notification>"), "{n}");
        assert!(
            n.contains("<summary>Dynamic workflow \"d\" failed: bad &lt;x&gt;</summary>\n</task-notification>"),
            "{n}"
        );
        assert!(!n.contains("w3"), "a stopped run is not notified");
    }

    #[test]
    fn drained_once_cut_to_500_chars_stopped_ones_not_at_all() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let r = TaskRegistry::default();
        assert_eq!((r.next_id(), r.next_id()), ("b00000001".to_string(), "b00000002".to_string()), "issued once each");
        let (a, _ra) = tokio::sync::oneshot::channel();
        let (b, _rb) = tokio::sync::oneshot::channel();
        r.add(task("b1", d.path(), &"x".repeat(2_000)), a);
        r.add(task("b2", d.path(), "bye\n"), b);
        assert_eq!(r.drain_notifications(), None, "nothing ended yet");
        r.finish("b1", Status::Failed, Some(4));
        r.finish("b2", Status::Killed, None);
        let n = r.drain_notifications().unwrap_or_default();
        assert!(n.starts_with("<background-results>\n<task-notification>\n<task-id>b1</task-id>"), "{n}");
        assert!(n.contains(&format!("<output>\n{}\n… [2000 chars in all;", "x".repeat(500))), "{n}");
        assert!(!n.contains(&"x".repeat(501)));
        assert!(n.contains("failed with exit code 4"));
        assert!(!n.contains("b2"), "stopped by TaskStop: the model knows");
        assert_eq!(r.drain_notifications(), None, "delivered once");
        assert_eq!(
            r.get("b1").map(|t| shown_output(&t)).unwrap_or_default().lines().last(),
            Some("[exited with code 4]")
        );
    }

    #[test]
    fn an_ended_task_to_be_notified_is_recorded_in_the_session_log_as_the_reference_queues_it() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log = d.path().join("projects/slug/session.jsonl");
        let r = TaskRegistry::default();
        let (a, _ra) = tokio::sync::oneshot::channel();
        let (b, _rb) = tokio::sync::oneshot::channel();
        r.add(task("b1", d.path(), "OUT-LINE\n"), a);
        r.add(Task { tool_use_id: "toolu_2".into(), ..task("b2", d.path(), "") }, b);
        r.finish("b2", Status::Killed, None);
        assert!(!log.exists(), "no log set yet, and a stopped task is not queued");
        r.set_log_if_absent(&[], log.clone());
        r.set_log_if_absent(&[], d.path().join("other.jsonl"));
        r.finish("b2", Status::Completed, Some(0));
        assert!(!log.exists(), "an end is recorded once, and a stopped task is never queued");
        r.finish("b1", Status::Completed, Some(0));
        r.finish("b1", Status::Completed, Some(0));
        let text = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<serde_json::Value> =
            text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
        assert_eq!(lines.len(), 1, "{text}");
        assert_eq!(lines[0]["type"], "queue-operation");
        assert_eq!(lines[0]["operation"], "enqueue");
        let content = lines[0]["content"].as_str().unwrap_or_default();
        assert!(
            content.starts_with("<task-notification>\n<task-id>b1</task-id>\n<tool-use-id>toolu_1</tool-use-id>\n"),
            "{content}"
        );
        assert!(content.ends_with("<status>completed</status>\n<summary>Background command \"d\" completed (exit code 0)</summary>\n</task-notification>"), "{content}");
        assert!(!content.contains("OUT-LINE"), "the output stays in the file, as the reference's: {content}");
        assert!(r.drain_notifications().is_some_and(|n| n.contains("<task-id>b1</task-id>")), "still delivered");
    }
}
