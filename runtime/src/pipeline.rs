//! The control pipeline every call passes (PIPE-1): lookup → schema validation → PreToolUse hooks →
//! permission rules → sandbox confinement → execution → result budget (persist over
//! `maxResultSizeChars`, PIPE-5) → result mapping. A refusal before execution has no side effect; every
//! call ends in exactly one result (PIPE-3), an error included. Calls of one assistant turn that are
//! concurrency-safe run in parallel, the others one by one, results in call order (PIPE-4).

use crate::context::ToolContext;
use crate::fs;
use crate::hooks::{pre_tool_use, HookOutcome};
use crate::permissions::{Decision, RuleError, Rules};
use crate::registry::Registry;
use crate::settings::{AskAnswer, HookSettings, Settings, REJECTED};
use crate::tool::{PermissionSubject, Tool, ToolError, ToolOutput};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::sync::Arc;

/// Characters of a persisted result shown to the model as a preview (PIPE-5).
pub const PERSIST_PREVIEW_CHARS: usize = 2_000;

/// A tool call from an assistant message.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// `toolu_…`.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Input.
    pub input: Value,
}

/// The result block answering a call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The call's id.
    pub tool_use_id: String,
    /// A string, or content blocks.
    pub content: Value,
    /// Error result.
    pub is_error: bool,
}

impl ToolResult {
    /// The `tool_result` block as sent: successful results carry no `is_error` key, like the reference's.
    pub fn to_block(&self) -> Value {
        let mut b = json!({"type": "tool_result", "tool_use_id": self.tool_use_id, "content": self.content});
        if self.is_error {
            b["is_error"] = json!(true);
        }
        b
    }

    fn error(id: &str, text: String) -> ToolResult {
        ToolResult { tool_use_id: id.to_string(), content: Value::String(text), is_error: true }
    }
}

fn wrap(text: &str) -> String {
    format!("<tool_use_error>{text}</tool_use_error>")
}

/// A part of the session that takes part in the pipeline and the agent loop without the core naming it
/// (tool search, plan mode, skills, cron, …): every method has a default that does nothing, and the
/// composition root ([`crate::builtin`]) installs the extensions a session has, in order.
pub trait Extension: Send + Sync {
    /// Reshapes the next request's `tools` array (TS-1: deferred tools left out until loaded).
    fn shape_tools(&self, _rt: &Runtime, tools: Vec<Value>) -> Vec<Value> {
        tools
    }
    /// Adds to the message of a call whose input failed the schema (TS-1: how to load a deferred tool).
    fn on_invalid_input(&self, _rt: &Runtime, _tool: &dyn Tool, _message: &mut String) {}
    /// Refuses a call after its hooks and before its permissions, with the result text (PLAN-1).
    fn refuse(&self, _ctx: &ToolContext, _tool: &dyn Tool, _input: &Value) -> Option<String> {
        None
    }
    /// Text blocks for the next request, given the conversation so far (SKILL-1's listing, TS-1's
    /// announcement); also where time passes per request (CRON-2's virtual clock).
    fn before_request(&self, _rt: &Runtime, _messages: &[Value]) -> Vec<String> {
        Vec::new()
    }
    /// When the model has ended its turn and nothing runs in the background: a prompt that starts
    /// another turn (CRON-2: a job due while the session is idle).
    fn on_idle<'a>(&'a self, _rt: &'a Runtime) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { None })
    }
}

/// The runtime of a session: its tool pool, rules, hooks, extensions and context.
#[derive(Clone)]
pub struct Runtime {
    /// The pool the model sees (bare-denied tools removed, PIPE-6).
    pub registry: Registry,
    rules: Rules,
    hooks: HookSettings,
    ask_answer: AskAnswer,
    /// The extensions of the session, in the order they act.
    pub extensions: Vec<Arc<dyn Extension>>,
    /// Tools whose absence the reference explains as "disabled for this session" (PIPE-3).
    pub disabled_notice: &'static [&'static str],
    /// The context every call gets.
    pub ctx: ToolContext,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("tools", &self.registry).finish()
    }
}

impl Runtime {
    /// A runtime over `registry` with `settings`; tools a bare deny rule names are removed. Fails when
    /// the settings' permission rules do not parse.
    pub fn new(
        mut registry: Registry,
        settings: &Settings,
        ask_answer: AskAnswer,
        ctx: ToolContext,
    ) -> Result<Runtime, RuleError> {
        let rules = Rules::from_settings(&settings.permissions)?;
        registry.retain(|name| !rules.hides(name));
        Ok(Runtime {
            registry,
            rules,
            hooks: settings.hooks.clone(),
            ask_answer,
            extensions: Vec::new(),
            disabled_notice: &[],
            ctx,
        })
    }

    /// The runtime with these extensions and these "disabled for this session" tools.
    pub fn with_extensions(
        mut self,
        extensions: Vec<Arc<dyn Extension>>,
        disabled_notice: &'static [&'static str],
    ) -> Runtime {
        self.extensions = extensions;
        self.disabled_notice = disabled_notice;
        self
    }

    /// Whether a tool of the pool is shown to the model now ([`Tool::is_visible`]).
    pub fn is_visible(&self, name: &str) -> bool {
        self.registry.get(name).is_some_and(|t| t.is_visible(&self.ctx))
    }

    /// The `tools` array of the next request: the pool as the session's current state shows it.
    pub fn api_tools(&self) -> Vec<Value> {
        let mut tools = self.registry.api_tools();
        tools.retain(|t| t["name"].as_str().is_none_or(|n| self.is_visible(n)));
        self.extensions.iter().fold(tools, |tools, e| e.shape_tools(self, tools))
    }

    /// Runs the calls of one assistant turn (PIPE-4): each maximal run of consecutive concurrency-safe
    /// calls in parallel, every other call alone, results in call order.
    pub async fn run_turn(&self, calls: &[ToolCall]) -> Vec<ToolResult> {
        let mut out = Vec::with_capacity(calls.len());
        let mut i = 0;
        while i < calls.len() {
            let safe = |c: &ToolCall| self.registry.get(&c.name).is_some_and(|t| t.is_concurrency_safe(&c.input));
            let mut j = i + 1;
            if safe(&calls[i]) {
                while j < calls.len() && safe(&calls[j]) {
                    j += 1;
                }
            }
            let batch = futures_util::future::join_all(calls[i..j].iter().map(|c| self.run_call(c))).await;
            out.extend(batch);
            i = j;
        }
        out
    }

    /// One call through the whole pipeline.
    pub async fn run_call(&self, call: &ToolCall) -> ToolResult {
        let id = call.id.as_str();
        // a call to a tool that is not callable yet (LSP-3) is a call to a tool the session does not have
        let Some(tool) = self.registry.get(&call.name).filter(|t| t.is_available(&self.ctx)) else {
            return ToolResult::error(id, wrap(&self.no_such_tool(&call.name)));
        };
        let invalid = match tool.validates_input() {
            true => crate::schema::validate(tool.name(), &tool.input_schema(), &call.input),
            false => None, // MCP-1: the server checks its own input
        };
        if let Some(mut msg) = invalid {
            for e in &self.extensions {
                e.on_invalid_input(self, tool.as_ref(), &mut msg);
            }
            return ToolResult::error(id, wrap(&msg));
        }
        let hook_env = self.ctx.hook_env();
        let (input, hook_allowed, hook_ask) = match pre_tool_use(&self.hooks, tool.name(), &call.input, &hook_env).await
        {
            HookOutcome::Deny { command, reason } => {
                return ToolResult::error(
                    id,
                    format!("PreToolUse:{} hook `{command}` denied this tool use: {reason}", tool.name()),
                );
            }
            HookOutcome::Continue { input: Some(new), allowed, ask } => {
                if let Some(msg) = crate::schema::validate(tool.name(), &tool.input_schema(), &new) {
                    return ToolResult::error(
                        id,
                        wrap(&format!("{msg}\n(after the PreToolUse hook rewrote the input)")),
                    );
                }
                (new, allowed, ask)
            }
            HookOutcome::Continue { input: None, allowed, ask } => (call.input.clone(), allowed, ask),
        };
        if let Some(msg) = self.extensions.iter().find_map(|e| e.refuse(&self.ctx, tool.as_ref(), &input)) {
            return ToolResult::error(id, msg);
        }
        if let Some(m) = tool.check_before_permissions(&input, &self.ctx) {
            return ToolResult::error(id, wrap(&m));
        }
        let subject = tool.permission_subject(&input, &self.ctx);
        let mut decision = self.rules.decide(tool.name(), &subject, tool.is_read_only(&input), &self.ctx.anchors());
        // the reference refuses a Grep of a directory that a `dir/**` deny rule covers (measured by
        // harness/tests/fidelity.rs: `Read(secret/**)` refuses a Grep with path `secret`)
        if let (Decision::Allow(_) | Decision::Ask(_), PermissionSubject::ReadPath(p)) = (&decision, &subject) {
            if tool.name() == "Grep" && p.is_dir() {
                let inside = PermissionSubject::ReadPath(p.join("x"));
                if let Decision::Deny(r) = self.rules.decide(tool.name(), &inside, true, &self.ctx.anchors()) {
                    if r.ends_with("/**)") {
                        decision = Decision::Deny(r);
                    }
                }
            }
        }
        let ask_source = match decision {
            Decision::Deny(rule) => {
                let at = self.ctx.anchors();
                let (as_given, read_covered) = match &subject {
                    PermissionSubject::ReadPath(p) => (self.rules.denies_as_given(tool.name(), p, &at), false),
                    PermissionSubject::WritePath(p) => (
                        self.rules.denies_as_given(tool.name(), p, &at),
                        matches!(
                            self.rules.decide("Read", &PermissionSubject::ReadPath(p.clone()), true, &at),
                            Decision::Deny(_)
                        ),
                    ),
                    _ => (false, false),
                };
                return ToolResult::error(id, denied_text(tool.name(), &subject, &rule, as_given, read_covered));
            }
            Decision::Ask(rule) if !hook_allowed => Some(format!("the rule {rule}")),
            _ if hook_ask => Some("a PreToolUse hook".to_string()),
            _ => None,
        };
        if ask_source.is_some() && self.ask_answer == AskAnswer::Deny {
            return ToolResult::error(id, REJECTED.to_string());
        }
        match fs::confine_subject(&self.ctx, &subject) {
            Ok(()) => {}
            Err(ToolError::Validation(m)) => return ToolResult::error(id, wrap(&m)),
            Err(ToolError::Runtime(m)) => return ToolResult::error(id, m),
        }
        let mut ctx = self.ctx.clone();
        ctx.call_id = Some(id.to_string());
        let output = match tool.call(input, &ctx).await {
            Ok(o) => o,
            Err(ToolError::Validation(m)) => return ToolResult::error(id, wrap(&m)),
            // PIPE-5 holds for errors too: a failing command's long output is persisted like any other
            Err(ToolError::Runtime(m)) => {
                let m = self.within_budget(id, tool.max_result_size_chars(), &m).unwrap_or_else(|e| e);
                return ToolResult::error(id, m);
            }
        };
        // a result with nothing in it (a blank text, no blocks, only blank text blocks) is said to be
        // empty, as Claude Code 2.1.235 says it for every tool: `(<tool> completed with no output)`
        // (measured by harness/tests/fidelity.rs: a Read of a notebook with no cells)
        let empty = format!("({} completed with no output)", tool.name());
        let text = match &output {
            ToolOutput::Data { text, data } => {
                self.log_structured(id, tool.name(), data);
                text
            }
            ToolOutput::Text(t) => t,
            ToolOutput::Blocks(b) if blank_blocks(b) => &empty,
            ToolOutput::Blocks(b) => {
                return ToolResult { tool_use_id: id.to_string(), content: Value::Array(b.clone()), is_error: false }
            }
        };
        let text = if text.trim().is_empty() { &empty } else { text };
        match self.within_budget(id, tool.max_result_size_chars(), text) {
            Ok(text) => ToolResult { tool_use_id: id.to_string(), content: Value::String(text), is_error: false },
            Err(e) => ToolResult::error(id, e),
        }
    }

    /// PIPE-3: the text of a call to a tool not in the pool. For the tools of [`Runtime::disabled_notice`]
    /// the reference adds that the tool is disabled for the session; any other name (a switched-off
    /// Task* tool, ToolSearch with tool search off, an unknown or MCP name, a tool a deny rule hid:
    /// PIPE-6) is just not available.
    fn no_such_tool(&self, name: &str) -> String {
        if self.disabled_notice.contains(&name) && !self.rules.hides(name) {
            format!("Error: No such tool available: {name}. {name} is disabled for this session, in subagents as well as here.")
        } else {
            format!("Error: No such tool available: {name}")
        }
    }

    /// PIPE-5: the text as is when it fits the tool's budget, else persisted and replaced by the
    /// `<persisted-output>` block (an error when it cannot be persisted).
    fn within_budget(&self, id: &str, max: Option<usize>, text: &str) -> Result<String, String> {
        match max {
            Some(max) if text.chars().count() > max => self.persist(id, text),
            _ => Ok(text.to_string()),
        }
    }

    /// Appends a tool's structured record to the session log, as the reference keeps `toolUseResult`
    /// beside each result in its session transcript (`<project dir>/<session id>.jsonl`). A log that cannot be written is no reason to fail
    /// the call: the model's result does not depend on it.
    fn log_structured(&self, id: &str, tool: &str, data: &Value) {
        use std::io::Write;
        let dir = self.ctx.project_dir();
        let line =
            json!({"type": "tool_result", "tool_use_id": id, "tool": tool, "toolUseResult": data}).to_string() + "\n";
        let _ = std::fs::create_dir_all(&dir).and_then(|_| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(format!("{}.jsonl", self.ctx.session_id)))?
                .write_all(line.as_bytes())
        });
    }

    /// PIPE-5: writes the whole result under the session dir and returns the `<persisted-output>` block
    /// the model gets instead: the path, the size, and a preview.
    fn persist(&self, id: &str, text: &str) -> Result<String, String> {
        let dir = self.ctx.session_dir().join("tool-results");
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot persist the large result: {e}"))?;
        let path = dir.join(format!("{id}.txt"));
        std::fs::write(&path, text).map_err(|e| format!("cannot persist the large result: {e}"))?;
        Ok(format!(
            "<persisted-output>\nOutput too large ({}). Full output saved to: {}\n\nPreview (first {}):\n{}\n...\n</persisted-output>",
            // the size as the reference takes it: the text's length in UTF-16 units
            fs::format_size(text.encode_utf16().count() as u64),
            path.display(),
            fs::format_size(PERSIST_PREVIEW_CHARS as u64),
            preview(text),
        ))
    }
}

/// No blocks, or only text blocks with blank texts.
fn blank_blocks(blocks: &[Value]) -> bool {
    blocks.iter().all(|b| b["type"] == "text" && b["text"].as_str().is_none_or(|t| t.trim().is_empty()))
}

/// The text of a call a deny rule refuses. The file tools' are Claude Code 2.1.235's (measured by
/// `harness/tests/fidelity.rs` and `probes/claude-code/deny-through-symlinks.toml`): input errors for
/// Read, Edit and Write when a rule of their own family covers the path as given (`as_given`), or, for
/// Edit and Write, a Read rule covers it as given or where it leads; a Read denied only where its path
/// leads (a symlink, `/proc/self/root/…`) is the permission check's plain error naming the path as
/// given, as Grep's is; the other tools name the rule.
fn denied_text(tool: &str, subject: &PermissionSubject, rule: &str, as_given: bool, read_covered: bool) -> String {
    const IN_DENIED_DIR: &str = "File is in a directory that is denied by your permission settings.";
    let read_rule = rule.starts_with("Read(");
    match (tool, subject) {
        ("Read", PermissionSubject::ReadPath(_)) if as_given => wrap(IN_DENIED_DIR),
        ("Read", PermissionSubject::ReadPath(p)) => format!("Permission to read {} has been denied.", p.display()),
        ("Edit" | "Write", PermissionSubject::WritePath(_)) if as_given => wrap(IN_DENIED_DIR),
        ("Edit" | "Write", PermissionSubject::WritePath(_)) if read_rule || read_covered => wrap(&format!(
            "File is covered by a Read deny rule in your permission settings and cannot be {}.",
            if tool == "Edit" { "edited" } else { "written" }
        )),
        ("Grep" | "Glob", PermissionSubject::ReadPath(p)) => {
            format!("Permission to read {} has been denied.", p.display())
        }
        (_, PermissionSubject::Command(c)) => {
            format!("Permission to use {tool} with command {c} has been denied by the rule {rule} in settings.permissions.deny.")
        }
        _ => format!("Permission to use {tool} has been denied by the rule {rule} in settings.permissions.deny."),
    }
}

/// The preview of a persisted result as Claude Code 2.1.235 cuts it (measured by
/// `harness/tests/fidelity.rs`): the first 2,000 UTF-16 units, back to the last line end when that is
/// past the half, so no line is cut.
pub fn preview(text: &str) -> &str {
    let mut units = 0;
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        if units + c.len_utf16() > PERSIST_PREVIEW_CHARS {
            end = i;
            break;
        }
        units += c.len_utf16();
    }
    let head = &text[..end];
    match head.rfind('\n') {
        Some(n) if head[..n].encode_utf16().count() > PERSIST_PREVIEW_CHARS / 2 => &head[..n],
        _ => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_end_at_a_line_end_past_the_half() {
        let text = "x".repeat(1990) + "\n" + &"y".repeat(100);
        assert_eq!(preview(&text), "x".repeat(1990));
        let one_line = "z".repeat(5000);
        assert_eq!(preview(&one_line).len(), PERSIST_PREVIEW_CHARS);
        let early = "a\n".to_string() + &"b".repeat(5000);
        assert_eq!(preview(&early).len(), PERSIST_PREVIEW_CHARS, "a line end before the half is not used");
    }
}
