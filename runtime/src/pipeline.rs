//! The control pipeline every call passes (PIPE-1): lookup → schema validation → PreToolUse hooks →
//! permission rules → sandbox confinement → execution → result budget (persist over
//! `maxResultSizeChars`, PIPE-5) → result mapping. A refusal before execution has no side effect; every
//! call ends in exactly one result (PIPE-3), an error included. Calls of one assistant turn that are
//! concurrency-safe run in parallel, the others one by one, results in call order (PIPE-4).

use crate::context::ToolContext;
use crate::fs;
use crate::hooks::{pre_tool_use, HookOutcome};
use crate::permissions::{Decision, DEFAULT_MODE_ASK};
use crate::profile::Switch;
use crate::registry::Registry;
use crate::settings::{AskAnswer, HookSettings, Settings};
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
    /// What [`Extension::shape_tools`] depends on besides the visible pool, as a number that changes
    /// whenever its shaping would: the loop reuses the last request's `tools` while
    /// [`Runtime::tools_key`] stays the same (a deep copy of every schema per turn was a third of a
    /// turn's cost, `benches/lab/benches/turn.rs`).
    fn tools_key(&self, _rt: &Runtime) -> u64 {
        0
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

/// From 2.1.293 a sub-agent's call of a tool its type takes away, or of Agent past the nesting cap, is
/// answered `… X is not among the tools available here. Continue with the tools you have.` (was: "X is
/// disabled for this session, in subagents as well as here."; the session's own disabled tools keep
/// that text). Measured by `agent.checks-shared` and `agent.nesting`; the timeline has no entry of its
/// own for it (the probes' other changes hide it), the committed goldens have it at 2.1.292 (old) →
/// 2.1.293 (new) (first placed at 2.1.295 when no cell between 2.1.285 and 2.1.295 had the probes).
pub const SUBAGENT_NOT_HERE_NOTICE: Switch = Switch {
    name: "a sub-agent's missing tool is not among the tools available here",
    since: "2.1.293",
    probe: "agent.nesting",
};

/// The words after the tool's name of [`SUBAGENT_NOT_HERE_NOTICE`]'s text.
pub const NOT_HERE: &str = "is not among the tools available here. Continue with the tools you have.";

/// A result over its budget that could not be written to its file (PIPE-5): the call's error.
#[derive(Debug, thiserror::Error)]
#[error("cannot persist the large result: {0}")]
struct PersistError(std::io::Error);

/// The runtime of a session: its tool pool, rules, hooks, extensions and context.
#[derive(Clone)]
pub struct Runtime {
    /// The pool the model sees (bare-denied tools removed, PIPE-6).
    pub registry: Registry,
    hooks: HookSettings,
    ask_answer: AskAnswer,
    /// The extensions of the session, in the order they act.
    pub extensions: Vec<Arc<dyn Extension>>,
    /// Tools whose absence the reference explains as "disabled for this session" (PIPE-3).
    pub disabled_notice: Vec<&'static str>,
    /// Tools a sub-agent's type (or the nesting cap) takes away, explained from 2.1.293 as "not among
    /// the tools available here" ([`SUBAGENT_NOT_HERE_NOTICE`]).
    pub not_here_notice: Vec<&'static str>,
    /// Tools of the pool a bare deny rule removed (PIPE-6).
    hidden: Vec<&'static str>,
    /// The context every call gets.
    pub ctx: ToolContext,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("tools", &self.registry).finish()
    }
}

impl Runtime {
    /// A runtime over `registry` with the hooks of `settings` and the permission rules of the session
    /// (`ctx.session`: parsed once, when the session was made); tools a bare deny rule names are removed.
    pub fn new(mut registry: Registry, settings: &Settings, ask_answer: AskAnswer, ctx: ToolContext) -> Runtime {
        let rules = ctx.session.rules();
        let hidden = registry.names().into_iter().filter(|n| rules.hides(n)).collect();
        registry.retain(|name| !rules.hides(name));
        Runtime {
            registry,
            hooks: settings.hooks.clone(),
            ask_answer,
            extensions: Vec::new(),
            disabled_notice: Vec::new(),
            not_here_notice: Vec::new(),
            hidden,
            ctx,
        }
    }

    /// The runtime with these extensions and these "disabled for this session" tools.
    pub fn with_extensions(
        mut self,
        extensions: Vec<Arc<dyn Extension>>,
        disabled_notice: Vec<&'static str>,
    ) -> Runtime {
        self.extensions = extensions;
        self.disabled_notice = disabled_notice;
        self
    }

    /// The runtime with these "not among the tools available here" tools ([`SUBAGENT_NOT_HERE_NOTICE`]).
    pub fn with_not_here(mut self, not_here: Vec<&'static str>) -> Runtime {
        self.not_here_notice = not_here;
        self
    }

    /// Whether a tool of the pool is shown to the model now ([`Tool::is_visible`]).
    pub fn is_visible(&self, name: &str) -> bool {
        self.registry.get(name).is_some_and(|t| t.is_visible(&self.ctx))
    }

    /// The `tools` array of the next request: the pool as the session's current state shows it.
    pub fn api_tools(&self) -> Vec<Value> {
        let tools: Vec<Value> = (self.registry.api_tools().iter())
            .filter(|t| t["name"].as_str().is_none_or(|n| self.is_visible(n)))
            .cloned()
            .collect();
        self.extensions.iter().fold(tools, |tools, e| e.shape_tools(self, tools))
    }

    /// What [`Runtime::api_tools`] depends on: which tools are visible, and the extensions' keys
    /// ([`Extension::tools_key`]). Equal keys, equal arrays.
    pub fn tools_key(&self) -> Vec<u64> {
        let names = self.registry.names();
        let mut key: Vec<u64> = names.iter().map(|n| u64::from(self.is_visible(n))).collect();
        key.extend(self.extensions.iter().map(|e| e.tools_key(self)));
        key
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
            crate::fs::ReadBatch::next(&self.ctx);
            let batch = futures_util::future::join_all(calls[i..j].iter().map(|c| self.run_call(c))).await;
            out.extend(batch);
            i = j;
        }
        out
    }

    /// A validation text of `tool` as the session's release words it ([`crate::validation::as_released`]).
    fn as_released(&self, tool: &dyn Tool, text: &str) -> String {
        crate::validation::as_released(text, self.ctx.profile(), &tool.input_schema())
    }

    /// One call through the whole pipeline; its result goes into the session log ([`Runtime::log_result`]).
    pub async fn run_call(&self, call: &ToolCall) -> ToolResult {
        let mut record = None;
        let result = self.call_through(call, &mut record).await;
        self.log_result(&call.name, &result, record.as_ref());
        result
    }

    /// The pipeline of one call: the result, and in `record` the tool's structured record where it
    /// made one.
    async fn call_through(&self, call: &ToolCall, record: &mut Option<Value>) -> ToolResult {
        let id = call.id.as_str();
        // a call to a tool that is not callable yet (LSP-3) is a call to a tool the session does not have
        let Some(tool) = self.registry.get(&call.name).filter(|t| t.is_available(&self.ctx)) else {
            return ToolResult::error(id, wrap(&self.no_such_tool(&call.name)));
        };
        let invalid = match tool.validates_input() {
            true => crate::schema::validate(tool.name(), &tool.validation_schema(self.ctx.profile()), &call.input),
            false => None, // MCP-1: the server checks its own input
        };
        if let Some(msg) = invalid {
            let mut msg = self.as_released(tool.as_ref(), &msg);
            for e in &self.extensions {
                e.on_invalid_input(self, tool.as_ref(), &mut msg);
            }
            return ToolResult::error(id, wrap(&msg));
        }
        let hook_env = self.ctx.hook_env();
        let (input, hook_allowed, hook_ask) = match pre_tool_use(&self.hooks, tool.name(), &call.input, &hook_env).await
        {
            HookOutcome::Deny { message } => return ToolResult::error(id, message),
            HookOutcome::Continue { input: Some(new), allowed, ask } => {
                if let Some(msg) =
                    crate::schema::validate(tool.name(), &tool.validation_schema(self.ctx.profile()), &new)
                {
                    let msg = self.as_released(tool.as_ref(), &msg);
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
            return ToolResult::error(id, wrap(&self.as_released(tool.as_ref(), &m)));
        }
        let subject = tool.permission_subject(&input, &self.ctx);
        let decision =
            self.ctx.session.rules().decide(tool.name(), &subject, tool.is_read_only(&input), &self.ctx.anchors());
        let ask_source = match tool.refine_decision(&subject, decision, &self.ctx) {
            Decision::Deny(rule) => {
                return match tool.denied(&subject, &rule, &self.ctx) {
                    Some(ToolError::Validation(m)) => ToolResult::error(id, wrap(&m)),
                    Some(ToolError::Runtime(m)) => ToolResult::error(id, m),
                    None => ToolResult::error(id, self.denied_text(tool.name(), &subject, &rule)),
                };
            }
            // a hook's allow does not skip an ask rule: Claude Code 2.1.235 still asks for the (rewritten)
            // call (`probes/pipeline/hook-rewrites-input.toml` on both subjects); it skips only the ask of
            // `defaultMode = default`
            Decision::Ask(rule) if !hook_allowed || rule != DEFAULT_MODE_ASK => Some(format!("the rule {rule}")),
            _ if hook_ask => Some("a PreToolUse hook".to_string()),
            _ => None,
        };
        if ask_source.is_some() && self.ask_answer == AskAnswer::Deny {
            return ToolResult::error(id, unanswered_ask_text(tool.name(), &subject));
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
            Err(ToolError::Validation(m)) => return ToolResult::error(id, wrap(&self.as_released(tool.as_ref(), &m))),
            // an error is never persisted: past 10,000 chars the reference keeps its first and last 5,000
            Err(ToolError::Runtime(m)) => return ToolResult::error(id, shorten_error(&m)),
        };
        // a result with nothing in it (a blank text, no blocks, only blank text blocks) is said to be
        // empty, as Claude Code 2.1.235 says it for every tool: `(<tool> completed with no output)`
        // (measured by harness/tests/fidelity.rs: a Read of a notebook with no cells)
        let empty = format!("({} completed with no output)", tool.name());
        let text = match output {
            ToolOutput::Data { text, data } => {
                *record = Some(data);
                text
            }
            ToolOutput::Text(t) => t,
            ToolOutput::Blocks(b) if blank_blocks(&b) => empty.clone(),
            ToolOutput::Blocks(b) => {
                return ToolResult { tool_use_id: id.to_string(), content: Value::Array(b), is_error: false }
            }
        };
        let text = if text.trim().is_empty() { &empty } else { &text };
        let max = tool.max_result_size_chars();
        // named only when it is persisted (the Bash tool's name is a fresh shell id)
        let name = max.filter(|m| text.chars().count() > *m).and_then(|_| tool.persisted_name(&self.ctx));
        let file = name.as_ref().map(|_| tool.persisted_text(&self.ctx, id, text));
        match self.within_budget(name.as_deref().unwrap_or(id), max, text, file.as_deref()) {
            Ok(text) => ToolResult { tool_use_id: id.to_string(), content: Value::String(text), is_error: false },
            Err(e) => ToolResult::error(id, e.to_string()),
        }
    }

    /// The text of a call the deny rule `rule` refuses, for a tool that does not word it its own way
    /// ([`Tool::denied`]: the file tools'). A command's is the reference's, naming the command (or the pipe
    /// part that was denied, [`crate::permissions::Rules::denied_part`]) and not the rule: `Permission to
    /// use Bash with command touch ran && git push has been denied.`
    /// (`probes/claude-code/bash-permissions.toml`, `probes/bash/deny-bypass.toml` on both subjects). The
    /// other tools' name the rule.
    fn denied_text(&self, tool: &str, subject: &PermissionSubject, rule: &str) -> String {
        match subject {
            PermissionSubject::Command(c) => {
                let shown = self.ctx.session.rules().denied_part(tool, c, &self.ctx.anchors());
                format!("Permission to use {tool} with command {shown} has been denied.")
            }
            _ => format!("Permission to use {tool} has been denied by the rule {rule} in settings.permissions.deny."),
        }
    }

    /// PIPE-3: the text of a call to a tool not in the pool. For the tools of [`Runtime::disabled_notice`]
    /// and a tool of the pool a bare deny rule hid (PIPE-6: `deny = ["Write"]` → `… Write is disabled for
    /// this session, in subagents as well as here.`, measured on 2.1.235 by
    /// `probes/pipeline/deny-hides-tool.toml`) the reference adds that the tool is disabled for the
    /// session; any other name (a switched-off Task* tool, ToolSearch with tool search off, an unknown or
    /// MCP name) is just not available.
    /// From 2.1.293 a tool a sub-agent's type takes away (an Explore child's Edit) and Agent past the
    /// nesting cap are [`NOT_HERE`] instead ([`Runtime::not_here_notice`], [`SUBAGENT_NOT_HERE_NOTICE`]).
    pub(crate) fn no_such_tool(&self, name: &str) -> String {
        if self.not_here_notice.contains(&name) {
            format!("Error: No such tool available: {name}. {name} {NOT_HERE}")
        } else if self.disabled_notice.contains(&name) || self.hidden.contains(&name) {
            format!("Error: No such tool available: {name}. {name} is disabled for this session, in subagents as well as here.")
        } else {
            format!("Error: No such tool available: {name}")
        }
    }

    /// PIPE-5: the text as is when it fits the tool's budget, else persisted (as `<name>.txt`) and
    /// replaced by the `<persisted-output>` block (an error when it cannot be persisted).
    fn within_budget(
        &self,
        id: &str,
        max: Option<usize>,
        text: &str,
        file: Option<&str>,
    ) -> Result<String, PersistError> {
        match max {
            // a text of at most `max` bytes has at most `max` chars: counted only when it could be over
            Some(max) if text.len() > max && text.chars().count() > max => self.persist(id, text, file),
            _ => Ok(text.to_string()),
        }
    }

    /// Appends a call's result to the session log (`<project dir>/<session id>.jsonl`), as the
    /// reference's session transcript holds every result: one line per call, `{"type":"tool_result",
    /// "tool_use_id","tool"`, the tool's structured record where it made one (`toolUseResult`, as the
    /// reference keeps it beside the result), then `message`: the user message with the `tool_result`
    /// block the model got — refusals and errors too, so a probe can wait for a refused call there
    /// (`probes/claude-code/workflow-texts.toml`). A log that cannot be written is no reason to fail the
    /// call: the model's result does not depend on it.
    fn log_result(&self, tool: &str, result: &ToolResult, record: Option<&Value>) {
        let mut line = json!({"type": "tool_result", "tool_use_id": result.tool_use_id, "tool": tool});
        if let Some(data) = record {
            line["toolUseResult"] = data.clone();
        }
        line["message"] = json!({"role": "user", "content": [result.to_block()]});
        let line = line.to_string() + "\n";
        let _ = crate::nofollow::append(&self.ctx.roots, &self.ctx.session_log(), line.as_bytes());
    }

    /// PIPE-5: writes the whole result under the session dir and returns the `<persisted-output>` block
    /// the model gets instead: the path, the size, and a preview.
    fn persist(&self, id: &str, text: &str, file: Option<&str>) -> Result<String, PersistError> {
        let dir = self.ctx.session_dir().join("tool-results");
        let path = dir.join(format!("{id}.txt"));
        // a link a command planted at the path (or on the way) is refused, never written through
        crate::nofollow::write(&self.ctx.roots, &path, file.unwrap_or(text).as_bytes()).map_err(PersistError)?;
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

/// The text of a call whose permission ask nobody granted (the probe's `ask = "deny"`, the default:
/// nobody is there to click), as Claude Code 2.1.235 answers it in a `-p` run: `Claude requested
/// permissions to write to <path>, but you haven't granted it yet.` for a file write, `… to use Bash, …`
/// (`… to use WebFetch, …`) otherwise — measured by `probes/pipeline/refusals-have-no-side-effect.toml`,
/// a scratch run of `probes/bash/compound-permissions.toml` and `probes/claude-code/web-fetch.toml`. (The
/// reference's `The user doesn't want to proceed …` is what a user's "no" gets: AskUserQuestion and
/// ExitPlanMode keep it.)
fn unanswered_ask_text(tool: &str, subject: &PermissionSubject) -> String {
    match subject {
        PermissionSubject::WritePath(p) => {
            format!("Claude requested permissions to write to {}, but you haven't granted it yet.", p.display())
        }
        _ => format!("Claude requested permissions to use {tool}, but you haven't granted it yet."),
    }
}

/// How much of an error the model gets, in UTF-16 units, as the reference counts ([`shorten_error`]).
pub const ERROR_MAX_CHARS: usize = 10_000;

/// An error as Claude Code 2.1.235 passes it on: up to [`ERROR_MAX_CHARS`] whole, else its first and last
/// 5,000 with `\n\n... [K characters truncated] ...\n\n` between (K what was left out), never persisted —
/// measured on a failing Bash command's long output (`probes/bash/output-budget.toml`: 13,904 chars →
/// `[3904 characters truncated]`).
pub fn shorten_error(text: &str) -> String {
    let units = text.encode_utf16().count();
    if units <= ERROR_MAX_CHARS {
        return text.to_string();
    }
    let half = ERROR_MAX_CHARS / 2;
    let mut head = 0;
    let mut n = 0;
    for (i, c) in text.char_indices() {
        if n + c.len_utf16() > half {
            head = i;
            break;
        }
        n += c.len_utf16();
    }
    let mut tail = text.len();
    let mut m = 0;
    for (i, c) in text.char_indices().rev() {
        if m + c.len_utf16() > half {
            break;
        }
        m += c.len_utf16();
        tail = i;
    }
    format!("{}\n\n... [{} characters truncated] ...\n\n{}", &text[..head], units - n - m, &text[tail..])
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

    /// The core names no tool: what is one tool's (Grep's search root, the file tools' refusal texts) is
    /// that tool's, through [`Tool::refine_decision`] and [`Tool::denied`].
    #[test]
    fn the_pipeline_names_no_tool() {
        let source = include_str!("pipeline.rs");
        let code: String = (source[..source.find("#[cfg(test)]").unwrap_or(source.len())].lines())
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect();
        let mut names = crate::builtin::registry().names();
        names.extend(["LS", "MultiEdit", "NotebookRead"]);
        for name in names {
            assert!(!code.contains(&format!("\"{name}\"")), "the pipeline names the tool {name}");
        }
    }

    /// A tool that words its deny refusal its own way, or leaves it to the pipeline.
    struct Guarded(&'static str, bool);

    impl Tool for Guarded {
        fn name(&self) -> &'static str {
            self.0
        }
        fn description(&self) -> String {
            String::new()
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object"})
        }
        fn permission_subject(&self, _input: &Value, ctx: &ToolContext) -> PermissionSubject {
            PermissionSubject::ReadPath(ctx.cwd.join("secret/k"))
        }
        fn denied(&self, subject: &PermissionSubject, rule: &str, _ctx: &ToolContext) -> Option<ToolError> {
            let PermissionSubject::ReadPath(p) = subject else { return None };
            self.1.then(|| ToolError::Validation(format!("{} is off limits ({rule})", p.display())))
        }
        fn call<'a>(&'a self, _: Value, _: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            Box::pin(async { Ok(ToolOutput::Text("ran".into())) })
        }
    }

    #[test]
    fn a_deny_refusal_is_worded_by_its_tool_else_by_the_pipeline() {
        use crate::settings::PermissionSettings;
        let settings = Settings {
            permissions: PermissionSettings {
                deny: vec!["Own(secret/**)".into(), "Plain(secret/**)".into()],
                ..PermissionSettings::default()
            },
            ..Settings::default()
        };
        let (_d, mut ctx) = ToolContext::for_test();
        let session = crate::session::Session::new(settings.clone(), AskAnswer::default(), None);
        ctx.session = Arc::new(session.unwrap_or_else(|e| panic!("{e}")));
        let pool = Registry::from_tools(vec![Arc::new(Guarded("Own", true)), Arc::new(Guarded("Plain", false))]);
        let rt = Runtime::new(pool, &settings, AskAnswer::default(), ctx.clone());
        let call = |name: &str| ToolCall { id: "toolu_1".into(), name: name.into(), input: json!({}) };
        let exec = tokio::runtime::Builder::new_current_thread().build().unwrap_or_else(|e| panic!("{e}"));
        let own = exec.block_on(rt.run_call(&call("Own")));
        let want = format!(
            "<tool_use_error>{} is off limits (Own(secret/**))</tool_use_error>",
            ctx.cwd.join("secret/k").display()
        );
        assert_eq!((own.content, own.is_error), (json!(want), true));
        let plain = exec.block_on(rt.run_call(&call("Plain")));
        let want = "Permission to use Plain has been denied by the rule Plain(secret/**) in settings.permissions.deny.";
        assert_eq!((plain.content, plain.is_error), (json!(want), true));
    }

    #[test]
    fn long_errors_keep_their_ends() {
        let text = format!("Exit code 3\n{}", "a".repeat(13_892));
        let short = shorten_error(&text);
        assert_eq!(short.len(), 10_039);
        assert!(short.starts_with("Exit code 3\naaa"));
        assert!(short.contains("\n\n... [3904 characters truncated] ...\n\n"));
        assert_eq!(shorten_error("short"), "short");
        let exact = "b".repeat(ERROR_MAX_CHARS);
        assert_eq!(shorten_error(&exact), exact);
    }

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
