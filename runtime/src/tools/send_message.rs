//! SendMessage (MSG-1): a message to another agent of the session, written to the recipient's JSONL
//! mailbox (`<home>/.claude/teams/<team>/inboxes/<name>.jsonl`, one `{"from","to","summary","message"}`
//! object a line). Delivery is not execution: nothing runs when a message is written; the recipient's
//! runtime hands it the unread lines before its next request (see `agent_tool`'s module doc).
//!
//! Measured on Claude Code 2.1.235 (`probes/claude-code/send-message*.toml`, `agent-message.toml`) and
//! copied: the schema and description byte for byte; results are JSON texts, not errors:
//! `{"success":false,"message":"No agent named 'x' is reachable.\nCheck the spelling, or use the agent ID
//! from a background agent's spawn result."}` for an unknown recipient, the "main addresses you" text when
//! the main conversation writes to `main`, `Message queued for delivery to x at its next tool round.` for
//! a running agent; a multi-line `to` is an input error.
//!
//! Deliberate differences: the reference (2.1.235, with or without its agent-teams flag) refuses `*`
//! (`broadcast (to: "*") is no longer supported`) and keeps messages in memory (no file on disk); the
//! built-in runtime follows MSG-1: `*` from the main conversation writes to every agent of the session
//! (main leads every team), from a sub-agent to the other members of its team and to `main`; every
//! message lands in a JSONL mailbox. The reference's `pin.ref` (a
//! random short id) is left out. A finished agent is not resumed: the message stays in its mailbox and
//! the result says so.

use super::agent_tool::{mailbox, Member, MAIN_NAME};
use crate::context::ToolContext;
use crate::profile::Switch;
use crate::tool::{ToolError, ToolOutput, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};

/// Longest `summary` (MSG-1; the reference's schema: `maxLength` 200).
pub const MAX_SUMMARY_CHARS: usize = 200;
/// Longest `to` (the reference's schema: `^[\s\S]{0,300}$`).
pub const MAX_TO_CHARS: usize = 300;
/// The broadcast address (MSG-1).
pub const BROADCAST: &str = "*";

/// The SendMessage tool.
#[derive(Debug, Default)]
pub struct SendMessage;

#[derive(Debug, Deserialize)]
pub struct Args {
    to: String,
    #[serde(default)]
    summary: Option<String>,
    message: String,
}

const DESCRIPTION: &str = "# SendMessage\n\nSend a message to another agent.\n\n```json\n{\"to\": \"researcher\", \"summary\": \"assign task 1\", \"message\": \"start on task #1\"}\n```\n\n| `to` | |\n|---|---|\n| `\"researcher\"` | Teammate by name |\n| `\"main\"` | The main conversation (background subagents only) |\n\nYour plain text output is NOT visible to other agents — to communicate, you MUST call this tool. Messages from teammates are delivered automatically; you don't check an inbox. Refer to agents by name — names keep working after an agent completes (a send resumes it from its transcript). Use the raw `agentId` (format `a...-...`) from its spawn result only when the agent has no name, or when a newer agent took the name (latest wins). When relaying, don't quote the original — it's already rendered to the user.";

impl TypedTool for SendMessage {
    const NAME: &'static str = "SendMessage";
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = Args;

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "to": {
                    "description": "Recipient: teammate name",
                    "type": "string",
                    "allOf": [{"pattern": "^[^\\n\\r]*$"}, {"pattern": "^[\\s\\S]{0,300}$"}]
                },
                "summary": {
                    "description": "A 5-10 word summary shown as a one-line preview in the UI. Defaults to the first line of a plain-text message; longer summaries are truncated to 200 characters rather than rejected.",
                    "type": "string",
                    "maxLength": MAX_SUMMARY_CHARS
                },
                "message": {"description": "Plain text message content", "type": "string"}
            },
            "required": ["to", "message"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        send(args, ctx)
    }
}

/// `{"success":…,"message":…}` as the reference writes it (keys in this order, compact).
fn reply(success: bool, message: &str, extra: Option<(&str, Value)>) -> ToolOutput {
    let mut v = json!({"success": success, "message": message});
    if let Some((k, x)) = extra {
        v[k] = x;
    }
    ToolOutput::Text(v.to_string())
}

fn send(args: Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    // the reference's schema refuses it: zod's regex issue (measured on 2.1.235,
    // `probes/claude-code/send-message.toml`)
    if args.to.contains(['\n', '\r']) {
        return Err(ToolError::Validation(crate::validation::issues_error(&[json!({
            "origin": "string",
            "code": "invalid_format",
            "format": "regex",
            "pattern": r"/^[^\n\r]*$/u",
            "path": ["to"],
            "message": "must be a single-line recipient name or address",
        })])));
    }
    if args.to.chars().count() > MAX_TO_CHARS {
        return Err(ToolError::Validation(format!("to must be at most {MAX_TO_CHARS} characters")));
    }
    let agents = ctx.session.state::<crate::tools::agent_tool::Agents>();
    let me = &agents.me;
    let summary = args
        .summary
        .clone()
        .unwrap_or_else(|| args.message.lines().next().unwrap_or("").to_string())
        .chars()
        .take(MAX_SUMMARY_CHARS)
        .collect::<String>();
    let from = me.address();
    let team = me.team();
    if args.to == BROADCAST {
        let mut names: Vec<(String, String)> = Vec::new();
        // the main conversation leads every team; an agent reaches its own team and main
        let reached = |m: &&Member| m.who.id != me.id && (me.id.is_none() || m.who.team() == team);
        for m in agents.roster().iter().filter(reached) {
            let a = m.who.address();
            if !names.iter().any(|(n, _)| *n == a) {
                names.push((a, m.who.team()));
            }
        }
        if me.id.is_some() {
            names.push((MAIN_NAME.to_string(), super::agent_tool::DEFAULT_TEAM.to_string()));
        }
        if names.is_empty() {
            return Ok(reply(false, &format!("No teammates in team '{team}' to broadcast to."), None));
        }
        for (to, t) in &names {
            append(ctx, t, to, &from, &summary, &args.message)?;
        }
        let list: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
        return Ok(reply(
            true,
            &format!("Message broadcast to {} recipient(s): {}", list.len(), list.join(", ")),
            Some(("recipients", json!(list))),
        ));
    }
    if args.to == MAIN_NAME {
        if me.id.is_none() {
            return Ok(reply(
                false,
                "You are the main conversation — \"main\" addresses you. Send to a named agent instead.",
                None,
            ));
        }
        append(ctx, super::agent_tool::DEFAULT_TEAM, MAIN_NAME, &from, &summary, &args.message)?;
        return Ok(reply(true, "Message queued for delivery to main at its next tool round.", None));
    }
    let Some(Member { who, running }) = agents.find(&args.to) else {
        let hint = if ctx.profile().has(&UNREACHABLE_NAMES_LIST_AGENTS) {
            "Use ListAgents to see everyone you can message."
        } else {
            "Check the spelling, or use the agent ID from a background agent's spawn result."
        };
        return Ok(reply(false, &format!("No agent named '{}' is reachable.\n{hint}", args.to), None));
    };
    if who.id == me.id {
        return Ok(reply(false, "That address is you. Send to another agent instead.", None));
    }
    append(ctx, &who.team(), &who.address(), &from, &summary, &args.message)?;
    // the reference's pin also has a `ref`: six hex digits whose meaning was not measured
    // (`probes/claude-code/agent-message.toml`); here they are derived from the agent id
    let pin = json!({"id": who.id, "name": who.name, "ref": pin_ref(who.id.as_deref().unwrap_or_default())});
    if running {
        let wait = if ctx.profile().has(&QUEUED_SAYS_WAIT) {
            " If it finishes first, it is resumed with the message and notifies again, so wait for that notification before resending."
        } else {
            ""
        };
        Ok(reply(
            true,
            &format!("Message queued for delivery to {} at its next tool round.{wait}", args.to),
            Some(("pin", pin)),
        ))
    } else {
        Ok(reply(
            true,
            &format!(
                "{} has finished; the message was left in its mailbox. This runtime does not resume finished agents: launch a new Agent to act on it.",
                args.to
            ),
            Some(("pin", pin)),
        ))
    }
}

/// From Claude Code 2.1.248 the answer for an unknown recipient points to ListAgents.
pub const UNREACHABLE_NAMES_LIST_AGENTS: Switch = Switch {
    name: "SendMessage: an unknown recipient's answer points to ListAgents",
    since: "2.1.248",
    probe: "claude-code.send-message",
};

/// From Claude Code 2.1.299 a message queued for a running agent says to wait for its notification.
pub const QUEUED_SAYS_WAIT: Switch = Switch {
    name: "SendMessage: a message queued for a running agent says to wait for its notification",
    since: "2.1.299",
    probe: "agent.message-running",
};

/// A pin's `ref`: six hex digits of a hash of the agent id (FNV-1a).
fn pin_ref(id: &str) -> String {
    let h = id.bytes().fold(0x811c9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    format!("{:06x}", h & 0x00ff_ffff)
}

/// Appends one line to the mailbox of `to` in `team`.
fn append(ctx: &ToolContext, team: &str, to: &str, from: &str, summary: &str, message: &str) -> Result<(), ToolError> {
    let path = mailbox(&ctx.home, team, to);
    let line = json!({"from": from, "to": to, "summary": summary, "message": message}).to_string() + "\n";
    crate::nofollow::append(&ctx.roots, &path, line.as_bytes())
        .map_err(|e| ToolError::Runtime(format!("cannot write the mailbox {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EstimateTokens;
    use std::sync::Arc;

    #[test]
    fn unknown_recipient_main_and_broadcast_alone() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ctx = ToolContext::for_sandbox(d.path(), Arc::new(EstimateTokens)).unwrap_or_else(|e| panic!("{e}"));
        let text = |to: &str| match send(Args { to: to.into(), summary: None, message: "hi".into() }, &ctx) {
            Ok(ToolOutput::Text(t)) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(text("x"), "{\"success\":false,\"message\":\"No agent named 'x' is reachable.\\nCheck the spelling, or use the agent ID from a background agent's spawn result.\"}");
        assert!(text("main").starts_with("{\"success\":false,\"message\":\"You are the main conversation"));
        assert_eq!(text("*"), "{\"success\":false,\"message\":\"No teammates in team 'default' to broadcast to.\"}");
        assert!(matches!(
            send(Args { to: "a\nb".into(), summary: None, message: "x".into() }, &ctx),
            Err(ToolError::Validation(_))
        ));
    }

    /// The unknown recipient's hint before and from UNREACHABLE_NAMES_LIST_AGENTS (claude-code.send-message
    /// on 2.1.247 / 2.1.248), the queued text before and from QUEUED_SAYS_WAIT (agent.message-running on
    /// 2.1.296 / 2.1.299).
    #[test]
    fn texts_by_release() {
        let text = |version: &str, to: &str| {
            let (_d, ctx) = ToolContext::for_test_at(version);
            let who = super::super::agent_tool::Identity {
                depth: 1,
                id: Some("a0000000000000001".into()),
                name: Some("researcher".into()),
                team: None,
            };
            ctx.session.state::<super::super::agent_tool::Agents>().enroll(Member { who, running: true });
            match send(Args { to: to.into(), summary: None, message: "hi".into() }, &ctx) {
                Ok(ToolOutput::Text(t)) => t,
                other => panic!("{other:?}"),
            }
        };
        let unknown =
            |hint: &str| format!("{{\"success\":false,\"message\":\"No agent named 'x' is reachable.\\n{hint}\"}}");
        assert_eq!(
            text("2.1.247", "x"),
            unknown("Check the spelling, or use the agent ID from a background agent's spawn result.")
        );
        assert_eq!(text("2.1.248", "x"), unknown("Use ListAgents to see everyone you can message."));
        let queued = "Message queued for delivery to researcher at its next tool round.";
        assert!(text("2.1.296", "researcher").contains(&format!("\"message\":\"{queued}\",\"pin\"")));
        assert!(text("2.1.299", "researcher").contains(&format!("\"message\":\"{queued} If it finishes first, it is resumed with the message and notifies again, so wait for that notification before resending.\",\"pin\"")));
    }
}
