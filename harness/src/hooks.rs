//! PreToolUse hooks of the settings, in Claude Code's settings.json shape:
//! `hooks.PreToolUse = [{ matcher = "Edit|Write", hooks = [{ type = "command", command = "…" }] }]`.
//! The command runs with `bash -c` in the session cwd, gets the call as JSON on stdin
//! (`session_id, cwd, hook_event_name, tool_name, tool_input`), and decides:
//! exit 2 → deny, stderr is the reason; exit 0 with JSON `hookSpecificOutput.permissionDecision`
//! (`allow | deny | ask`, with `permissionDecisionReason`) and/or `updatedInput` (rewrites the input);
//! any other exit → a non-blocking error, the call goes on.

use crate::tools::ToolContext;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// How long a hook command may run.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// One matcher group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookGroup {
    /// Tool names separated by `|`; empty or `*` = every tool.
    #[serde(default)]
    pub matcher: String,
    /// Commands, run in order.
    pub hooks: Vec<HookCommand>,
}

/// One command hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookCommand {
    /// Always `command`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Shell command.
    pub command: String,
    /// Seconds (default 60).
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// The `hooks` table of the settings (event name → groups).
pub type HookSettings = BTreeMap<String, Vec<HookGroup>>;

/// What the hooks decided.
#[derive(Debug, Clone, PartialEq)]
pub enum HookOutcome {
    /// Go on (possibly with a rewritten input, possibly pre-allowed).
    Continue {
        /// Replacement input.
        input: Option<Value>,
        /// A hook said `allow` (skips an ask, never a deny rule).
        allowed: bool,
        /// A hook said `ask`.
        ask: bool,
    },
    /// Denied by the hook command.
    Deny {
        /// The command that denied.
        command: String,
        /// Its reason.
        reason: String,
    },
}

fn group_matches(matcher: &str, tool: &str) -> bool {
    matcher.is_empty() || matcher == "*" || matcher.split('|').any(|m| m.trim() == tool)
}

/// Runs the PreToolUse hooks that match `tool`.
pub async fn pre_tool_use(settings: &HookSettings, tool: &str, input: &Value, ctx: &ToolContext) -> HookOutcome {
    let mut current = input.clone();
    let mut rewritten = false;
    let mut allowed = false;
    let mut ask = false;
    for group in settings.get("PreToolUse").into_iter().flatten().filter(|g| group_matches(&g.matcher, tool)) {
        for h in &group.hooks {
            let payload = json!({
                "session_id": ctx.session_id, "cwd": ctx.cwd, "hook_event_name": "PreToolUse",
                "tool_name": tool, "tool_input": current,
            });
            let (code, stdout, stderr) =
                run(&h.command, &payload, ctx, h.timeout.map(Duration::from_secs).unwrap_or(HOOK_TIMEOUT)).await;
            if code == Some(2) {
                return HookOutcome::Deny { command: h.command.clone(), reason: stderr.trim().to_string() };
            }
            if code != Some(0) {
                continue;
            }
            let Ok(out) = serde_json::from_str::<Value>(stdout.trim()) else {
                continue;
            };
            let spec = out.get("hookSpecificOutput").cloned().unwrap_or_default();
            if let Some(new) = spec.get("updatedInput").filter(|v| v.is_object()) {
                current = new.clone();
                rewritten = true;
            }
            match spec.get("permissionDecision").and_then(Value::as_str) {
                Some("deny") => {
                    let reason =
                        spec.get("permissionDecisionReason").and_then(Value::as_str).unwrap_or("denied by hook");
                    return HookOutcome::Deny { command: h.command.clone(), reason: reason.to_string() };
                }
                Some("allow") => allowed = true,
                Some("ask") => ask = true,
                _ => {}
            }
        }
    }
    HookOutcome::Continue { input: rewritten.then_some(current), allowed, ask }
}

async fn run(command: &str, payload: &Value, ctx: &ToolContext, timeout: Duration) -> (Option<i32>, String, String) {
    let child = tokio::process::Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(&ctx.cwd)
        .env("HOME", &ctx.home)
        .env("CLAUDE_PROJECT_DIR", &ctx.cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let Ok(mut child) = child else {
        return (None, String::new(), "cannot start bash".into());
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(payload.to_string().as_bytes()).await;
    }
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(Ok(out)) => (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ),
        Ok(Err(e)) => (None, String::new(), e.to_string()),
        Err(_) => (None, String::new(), format!("hook timed out after {}s", timeout.as_secs())),
    }
}
