//! PreToolUse hooks of the settings, in Claude Code's settings.json shape:
//! `hooks.PreToolUse = [{ matcher = "Edit|Write", hooks = [{ type = "command", command = "…" }] }]`.
//! The command runs with `/bin/sh -c` (as the reference runs them) in the session cwd, gets the call as JSON on stdin
//! (`session_id, cwd, hook_event_name, tool_name, tool_input`), and decides:
//! exit 2 → deny, stderr is the reason; exit 0 with JSON `hookSpecificOutput.permissionDecision`
//! (`allow | deny | ask`, with `permissionDecisionReason`) and/or `updatedInput` (rewrites the input);
//! any other exit → a non-blocking error, the call goes on. Hooks of other events (TaskCompleted) run
//! through [`event_blocking_errors`]: an exit 2 blocks what the event announces.

use crate::settings::HookSettings;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// How long a hook command may run.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a hook command runs, as plain data: the session's id, its cwd (also `CLAUDE_PROJECT_DIR`) and
/// HOME.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEnv {
    /// The session id (in the payload).
    pub session_id: String,
    /// The cwd the command runs in.
    pub cwd: PathBuf,
    /// HOME of the command.
    pub home: PathBuf,
    /// The lab's confinement of hook commands ([`crate::confine`]; `None`: unconfined).
    pub confine: Option<crate::confine::Confinement>,
    /// The release the session behaves as (how a decision is worded).
    pub profile: crate::profile::Profile,
}

/// From Claude Code 2.1.281 a hook's JSON deny reaches the model as `PreToolUse:<tool> hook error:
/// <reason>` (the reason alone before).
pub const JSON_DENY_PREFIXED: crate::profile::Switch = crate::profile::Switch {
    name: "hooks: a JSON deny's reason comes as a PreToolUse hook error",
    since: "2.1.281",
    probe: "pipeline.hook-decisions",
};

/// The text of a hook's JSON deny at the session's release ([`JSON_DENY_PREFIXED`]).
fn json_deny_text(tool: &str, reason: &str, profile: crate::profile::Profile) -> String {
    if profile.has(&JSON_DENY_PREFIXED) {
        format!("PreToolUse:{tool} hook error: {reason}")
    } else {
        reason.to_string()
    }
}

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
        /// The refusal the model gets (names the hook and its reason).
        message: String,
    },
}

fn group_matches(matcher: &str, tool: &str) -> bool {
    matcher.is_empty() || matcher == "*" || matcher.split('|').any(|m| m.trim() == tool)
}

/// Runs the PreToolUse hooks that match `tool`.
pub async fn pre_tool_use(settings: &HookSettings, tool: &str, input: &Value, env: &HookEnv) -> HookOutcome {
    let mut current = input.clone();
    let mut rewritten = false;
    let mut allowed = false;
    let mut ask = false;
    for group in settings.get("PreToolUse").into_iter().flatten().filter(|g| group_matches(&g.matcher, tool)) {
        for h in &group.hooks {
            let payload = json!({
                "session_id": env.session_id, "cwd": env.cwd, "hook_event_name": "PreToolUse",
                "tool_name": tool, "tool_input": current,
            });
            let (code, stdout, stderr) =
                run(&h.command, &payload, env, h.timeout.map(Duration::from_secs).unwrap_or(HOOK_TIMEOUT)).await;
            if code == Some(2) {
                // the reference's words for a blocking exit (measured on 2.1.235 by
                // `probes/pipeline/refusals-have-no-side-effect.toml`): `PreToolUse:Write hook error:
                // [<command>]: <stderr>`, the stderr as written (its last line end kept)
                return HookOutcome::Deny {
                    message: format!("PreToolUse:{tool} hook error: {}", blocking_text(&h.command, &stderr)),
                };
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
                    // the reason alone, as the reference passes it on (`probes/pipeline/hook-decisions.toml`)
                    return HookOutcome::Deny { message: json_deny_text(tool, reason, env.profile) };
                }
                Some("allow") => allowed = true,
                Some("ask") => ask = true,
                _ => {}
            }
        }
    }
    HookOutcome::Continue { input: rewritten.then_some(current), allowed, ask }
}

/// The text of a command hook's blocking exit (2), as the reference words it: `[<command>]: <stderr>`
/// (`No stderr output` when it wrote none).
fn blocking_text(command: &str, stderr: &str) -> String {
    format!("[{command}]: {}", if stderr.is_empty() { "No stderr output" } else { stderr })
}

/// Runs the command hooks of an event that is not about a tool call (`TaskCompleted`, …): every group
/// of `settings.hooks.<event>` runs (these events have no matcher), each command with `/bin/sh -c` in the
/// session cwd and the JSON `{session_id, cwd, hook_event_name, …fields}` plus a newline on stdin.
/// Returns the blocking errors (`[<command>]: <stderr>`), one per command that exited 2; every other
/// exit is a non-blocking error and is not shown. An exit 2 with empty stdout whose stderr says the
/// script is missing (`no such file`, `can't open`) is non-blocking too, as on the reference.
pub async fn event_blocking_errors(settings: &HookSettings, event: &str, fields: Value, env: &HookEnv) -> Vec<String> {
    let mut payload = json!({ "session_id": env.session_id, "cwd": env.cwd, "hook_event_name": event });
    if let (Some(p), Value::Object(extra)) = (payload.as_object_mut(), fields) {
        p.extend(extra);
    }
    // the reference ends this JSON with a newline (measured: probes/claude-code/tasks-completed-hook.toml)
    let stdin = format!("{payload}\n");
    let missing_script = |stderr: &str| {
        let l = stderr.to_ascii_lowercase();
        l.contains("no such file") || l.contains("can't open")
    };
    let mut out = Vec::new();
    for group in settings.get(event).into_iter().flatten() {
        for h in &group.hooks {
            let timeout = h.timeout.map(Duration::from_secs).unwrap_or(HOOK_TIMEOUT);
            let (code, stdout, stderr) = run_with_stdin(&h.command, stdin.as_bytes(), env, timeout).await;
            if code == Some(2) && !(stdout.trim().is_empty() && missing_script(&stderr)) {
                out.push(blocking_text(&h.command, &stderr));
            }
        }
    }
    out
}

async fn run(command: &str, payload: &Value, env: &HookEnv, timeout: Duration) -> (Option<i32>, String, String) {
    run_with_stdin(command, payload.to_string().as_bytes(), env, timeout).await
}

/// Runs a hook command with `stdin` as its input: (exit code, stdout, stderr).
async fn run_with_stdin(
    command: &str,
    stdin_bytes: &[u8],
    env: &HookEnv,
    timeout: Duration,
) -> (Option<i32>, String, String) {
    // `/bin/sh -c`, as the reference runs hook commands: a bash-ism fails there with dash's
    // `/bin/sh: 1: Syntax error: redirection unexpected` (`probes/pipeline/refusals-have-no-side-effect.toml`
    // on 2.1.235)
    // the lab's passed variables, HOME and the project: nothing else of the lab's environment
    let vars = crate::confine::with_env(
        crate::confine::passed_env(),
        [("HOME", env.home.as_os_str()), ("CLAUDE_PROJECT_DIR", env.cwd.as_os_str())],
    );
    let child = crate::confine::command(env.confine.as_ref(), "/bin/sh", ["-c", command], &env.cwd, &vars)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn();
    let Ok(mut child) = child else {
        return (None, String::new(), "cannot start /bin/sh".into());
    };
    // the hook's group goes when this call ends, however it ends (its timeout included)
    let _group = crate::process::Group::led_by(child.id());
    // written beside the wait, not before it: a hook that never reads its stdin (and a payload larger
    // than the pipe) must not hold the call past its timeout
    let writer = child.stdin.take().map(|mut stdin| {
        let bytes = stdin_bytes.to_vec();
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
        })
    });
    let waited = tokio::time::timeout(timeout, child.wait_with_output()).await;
    if let Some(w) = writer {
        w.abort();
    }
    match waited {
        Ok(Ok(out)) => (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ),
        Ok(Err(e)) => (None, String::new(), e.to_string()),
        Err(_) => (None, String::new(), format!("hook timed out after {}s", timeout.as_secs())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    /// A JSON deny's text before and from JSON_DENY_PREFIXED (pipeline.hook-decisions on 2.1.280 /
    /// 2.1.281).
    #[test]
    fn json_deny_by_release() {
        let at = |v: &str| Profile::at(v).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(json_deny_text("Write", "policy says no", at("2.1.280")), "policy says no");
        assert_eq!(
            json_deny_text("Write", "policy says no", at("2.1.281")),
            "PreToolUse:Write hook error: policy says no"
        );
    }
}
