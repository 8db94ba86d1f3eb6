//! The request rules of the real Messages API beyond the pairing rule ([`check_tool_pairing`],
//! always on): what the API refuses with HTTP 400 `invalid_request_error`, with the messages it gives.
//! `[stub] strict = false` turns these rules off for probes that want a lenient stub; pairing stays on.
//!
//! Each rule, its record kind (the [`crate::record::Violation`] kind) and its message, `I`/`K`/`J` being
//! the message, block and tool indices:
//!
//! | kind | message |
//! |---|---|
//! | `unknown_field` | `NAME: Extra inputs are not permitted` |
//! | `max_tokens` | `max_tokens: Input should be greater than or equal to 1` |
//! | `messages_empty` | `messages: at least one message is required` |
//! | `first_message_role` | `messages: first message must use the "user" role` |
//! | `empty_content` | `messages.I: all messages must have non-empty content except for the optional final assistant message` |
//! | `empty_text` | `messages: text content blocks must be non-empty` (whitespace only: `…must contain non-whitespace text`) |
//! | `block_shape` | `messages.I.content.K: Input should be a valid dictionary` / `…: Unable to extract tag using discriminator 'type'` |
//! | `unknown_block` | `messages.I.content.K: Input tag 'T' found using 'type' does not match any of the expected tags: 'text', …` |
//! | `block_field` | `messages.I.content.K.thinking.signature: Field required` (any required field of a block) |
//! | `block_role` | `` messages.I: `tool_use` blocks can only be in `assistant` messages `` (and `tool_result` … `user`) |
//! | `thinking_order` | `` messages.I.content.0: If an assistant message contains any thinking blocks, the first block must be `thinking` or `redacted_thinking`. Found `text`. `` |
//! | `thinking_signature` | `` messages.I.content.K: Invalid `signature` in `thinking` block `` (an empty signature) |
//! | `tool_use_id` | `messages.I.content.K.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'` |
//! | `duplicate_tool_use_id` | `` messages: `tool_use` ids must be unique `` |
//! | `tool_result_position` | `` messages.I: Did not find N `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks. `` |
//! | `tool_definition` | `tools.J.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`, `tools.J.custom.input_schema: Field required`, `tools.J.custom.NAME: Extra inputs are not permitted` |
//! | `duplicate_tool_name` | `tools: Tool names must be unique.` |
//! | `cache_control_limit` | `A maximum of 4 blocks with cache_control may be provided. Found N.` |
//!
//! The texts are the API's as real 400 answers quote them (SDK and client issue threads); the field-path
//! style (`messages.1.content.0.thinking.signature`) is the API's own, from its pydantic-style validation.
//!
//! Where the API is silent or its answer is not known, the stub decided:
//! - **`role: "system"` messages** are accepted anywhere in `messages` (Claude Code sends its system
//!   reminders so, the API's mid-conversation system messages); they are skipped when the first message is
//!   looked for and by the pairing rule, and they may carry only what a user message may.
//! - **Consecutive turns of one role** are accepted: the API combines them into one turn.
//! - **A final assistant message** (prefill) is accepted, and may be empty; the model-specific refusal of
//!   prefill by some models is not modelled.
//! - **Nested content** (inside `tool_result.content`, `system`) is only counted for `cache_control`; its
//!   blocks are not checked.
//! - **Server tools** (a `type` other than `custom`) are not checked field by field: their fields depend on
//!   the tool version. Their names count for uniqueness.
//! - **Thinking signatures** are opaque: only an empty one is refused (the API checks them
//!   cryptographically; the stub cannot). A thinking block's text may be empty (`display: "omitted"`).
//! - **Unknown fields** are refused at the top level and in client tool definitions only; the lists below
//!   name the fields of the API and its betas that real clients send.
//! - **`/v1/messages/count_tokens`** is checked for its required fields only (`model`, `messages`): the
//!   rules here judge `/v1/messages`, where the turns are played.
//! - **Rule order**: schema-like rules first (fields, types, block tags), then the semantic ones, the
//!   pairing rule before the position of the results (a missing result is named as missing), then
//!   `cache_control`; the first broken rule is the answer, as the API answers one error at a time.

use serde_json::Value;
use std::collections::BTreeSet;

/// A request the API would refuse: the record kind of the rule and the API's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The rule broken (the record's violation kind).
    pub kind: &'static str,
    /// The message of the 400 answer.
    pub message: String,
}

fn refuse<T>(kind: &'static str, message: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal { kind, message: message.into() })
}

/// The most blocks that may carry `cache_control` in one request (the API's limit of 4 breakpoints).
pub const MAX_CACHE_CONTROL_BLOCKS: usize = 4;

/// The pattern client tool names must match (the API's `^[a-zA-Z0-9_-]{1,64}$`): its longest name.
pub const MAX_TOOL_NAME_CHARS: usize = 64;

/// Top-level fields of a `/v1/messages` body: the API's documented parameters and those of its betas
/// that clients send (`context_management`, `output_format`, `mcp_servers`, `container`, …).
pub const REQUEST_FIELDS: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "system",
    "metadata",
    "stop_sequences",
    "stream",
    "temperature",
    "top_k",
    "top_p",
    "tools",
    "tool_choice",
    "thinking",
    "service_tier",
    "container",
    "mcp_servers",
    "context_management",
    "output_config",
    "output_format",
    "inference_geo",
    "speed",
    "cache_control",
];

/// Fields of a client tool definition (`type` absent or `"custom"`), betas included.
pub const CLIENT_TOOL_FIELDS: &[&str] = &[
    "type",
    "name",
    "description",
    "input_schema",
    "cache_control",
    "strict",
    "defer_loading",
    "input_examples",
    "allowed_callers",
    "eager_input_streaming",
];

/// Block types the API takes in message content (with its betas).
pub const BLOCK_TYPES: &[&str] = &[
    "text",
    "image",
    "document",
    "search_result",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
    "tool_search_tool_result",
    "mcp_tool_use",
    "mcp_tool_result",
    "container_upload",
];

/// Block types only the model writes: refused in user (and system) messages.
pub const ASSISTANT_ONLY_BLOCKS: &[&str] = &[
    "tool_use",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
    "tool_search_tool_result",
    "mcp_tool_use",
    "mcp_tool_result",
];

/// Block types only the client writes: refused in assistant messages.
pub const USER_ONLY_BLOCKS: &[&str] = &["tool_result"];

/// Required fields per block type, beside `type` (checked in this order).
const REQUIRED_BLOCK_FIELDS: &[(&str, &[&str])] = &[
    ("text", &["text"]),
    ("thinking", &["thinking", "signature"]),
    ("redacted_thinking", &["data"]),
    ("tool_use", &["id", "name", "input"]),
    ("tool_result", &["tool_use_id"]),
    ("server_tool_use", &["id", "name", "input"]),
    ("image", &["source"]),
    ("document", &["source"]),
];

fn role(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or_default()
}

fn is_id(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// True when `name` matches the API's client tool name pattern `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_tool_name(name: &str) -> bool {
    is_id(name) && name.chars().count() <= MAX_TOOL_NAME_CHARS
}

/// Checks a `/v1/messages` body (already through [`crate::wire::MessagesRequest::parse`]) against the
/// rules of the module doc and the pairing rule (`tool_pairing`, before the position of the results);
/// the first broken rule is the answer.
pub fn check_request(body: &Value) -> Result<(), Refusal> {
    check_request_after(body, None)
}

/// What the rules know of a request's messages up to the point they take up again (index `at`): the
/// `tool_use` ids and the `cache_control` blocks of the messages before it. The point is the message
/// before the last that is not a `system` one (the only one, when there is one), so that a client
/// rewriting its last message — Claude Code, and the built-in runtime from 2.1.314, move a cache mark off
/// it once the conversation goes on — still takes up there. A request whose messages begin with those of
/// a request already checked, up to and including that message, is checked from there on
/// ([`check_request_after`]): every rule gives the same answer for the earlier messages, whose
/// neighbours up to `at` are the same.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// Where the rules take up again (`None`: no message that is not a `system` one).
    pub at: Option<usize>,
    /// The `tool_use` ids of the messages before it.
    pub ids: BTreeSet<String>,
    /// The blocks carrying `cache_control` in the messages before it.
    pub cache_control: usize,
    /// Whether the messages passed every rule (`[stub] strict`), not the pairing rule alone.
    pub strict: bool,
}

impl Checked {
    /// Where the rules (every one when `strict`, else the pairing rule) take up again for messages that
    /// keep `kept` of the checked ones: `Some(last)` when they keep it (and all before it), and the
    /// checked ones passed those rules.
    pub fn resumes(&self, kept: usize, strict: bool) -> Option<usize> {
        self.at.filter(|l| *l < kept && (self.strict || !strict))
    }

    /// The state of `messages`, which passed the rules (`strict`: every one), from this one's (of a
    /// request whose first `kept` messages they keep; from scratch when [`Checked::resumes`] does not).
    pub fn after(self, messages: &[Value], kept: usize, strict: bool) -> Checked {
        let last = messages.iter().rposition(|m| role(m) != "system");
        let at = last.and_then(|l| messages[..l].iter().rposition(|m| role(m) != "system")).or(last);
        let (from, mut c) = match self.resumes(kept, false) {
            Some(l) if at.is_some_and(|a| a >= l) => (l, self),
            _ => (0, Checked::default()),
        };
        c.strict = strict;
        for m in messages.get(from..at.unwrap_or(0)).unwrap_or_default() {
            for b in crate::wire::content_blocks(m) {
                if b.get("type").and_then(Value::as_str) == Some("tool_use") {
                    if let Some(id) = b.get("id").and_then(Value::as_str) {
                        c.ids.insert(id.to_string());
                    }
                }
            }
            c.cache_control += count_cache_control(m);
        }
        c.at = at;
        c
    }
}

/// [`check_request`] of a body whose messages keep, up to and including its `at`, those of a request
/// that passed (`before`, when [`Checked::resumes`] says so; the caller knows): the messages from `at`
/// on are checked, with the ids and `cache_control` blocks of those before it. Same answer as
/// [`check_request`].
pub fn check_request_after(body: &Value, before: Option<&Checked>) -> Result<(), Refusal> {
    let Some(obj) = body.as_object() else {
        return refuse("invalid_request", "request body must be a JSON object");
    };
    if let Some(field) = obj.keys().find(|k| !REQUEST_FIELDS.contains(&k.as_str())) {
        return refuse("unknown_field", format!("{field}: Extra inputs are not permitted"));
    }
    match obj.get("max_tokens").and_then(Value::as_i64) {
        Some(n) if n >= 1 => {}
        _ => return refuse("max_tokens", "max_tokens: Input should be greater than or equal to 1"),
    }
    if let Some(tools) = obj.get("tools").and_then(Value::as_array) {
        check_tools(tools)?;
    }
    let messages = obj.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let empty = Checked::default();
    let (from, before) = match before.and_then(|b| b.at.map(|l| (l, b))) {
        Some((l, b)) if l < messages.len() => (l, b),
        _ => (0, &empty),
    };
    check_messages(messages, from, &before.ids)?;
    check_tool_pairing_from(messages, from).or_else(|message| refuse("tool_pairing", message))?;
    check_tool_results_first(messages, from)?;
    // every block but the messages', the earlier messages' as counted, the rest
    let n = obj
        .iter()
        .map(|(k, v)| match k.as_str() {
            "content" | "system" | "tools" => count_cache_control(v),
            "messages" if !v.is_array() => count_cache_control(v),
            _ => 0,
        })
        .sum::<usize>()
        + usize::from(obj.get("cache_control").is_some_and(|c| !c.is_null()))
        + before.cache_control
        + messages[from..].iter().map(count_cache_control).sum::<usize>();
    if n > MAX_CACHE_CONTROL_BLOCKS {
        return refuse(
            "cache_control_limit",
            format!("A maximum of {MAX_CACHE_CONTROL_BLOCKS} blocks with cache_control may be provided. Found {n}."),
        );
    }
    Ok(())
}

fn check_tools(tools: &[Value]) -> Result<(), Refusal> {
    let mut names = BTreeSet::new();
    for (j, t) in tools.iter().enumerate() {
        let Some(o) = t.as_object() else {
            return refuse("tool_definition", format!("tools.{j}: Input should be a valid dictionary"));
        };
        let server = crate::wire::is_server_tool(t);
        if !server {
            if let Some(field) = o.keys().find(|k| !CLIENT_TOOL_FIELDS.contains(&k.as_str())) {
                return refuse("tool_definition", format!("tools.{j}.custom.{field}: Extra inputs are not permitted"));
            }
            match o.get("name") {
                None => return refuse("tool_definition", format!("tools.{j}.custom.name: Field required")),
                Some(Value::String(n)) if is_tool_name(n) => {}
                Some(Value::String(_)) => {
                    return refuse(
                        "tool_definition",
                        format!("tools.{j}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,{MAX_TOOL_NAME_CHARS}}}$'"),
                    )
                }
                Some(_) => {
                    return refuse("tool_definition", format!("tools.{j}.custom.name: Input should be a valid string"))
                }
            }
            match o.get("input_schema") {
                None => return refuse("tool_definition", format!("tools.{j}.custom.input_schema: Field required")),
                Some(Value::Object(_)) => {}
                Some(_) => {
                    return refuse(
                        "tool_definition",
                        format!("tools.{j}.custom.input_schema: Input should be a valid dictionary"),
                    )
                }
            }
        }
        if let Some(name) = o.get("name").and_then(Value::as_str) {
            if !names.insert(name) {
                return refuse("duplicate_tool_name", "tools: Tool names must be unique.");
            }
        }
    }
    Ok(())
}

/// The rules of each message from `from` on (`ids`: the `tool_use` ids of those before it).
fn check_messages(messages: &[Value], from: usize, ids: &BTreeSet<String>) -> Result<(), Refusal> {
    if messages.is_empty() {
        return refuse("messages_empty", "messages: at least one message is required");
    }
    if messages.iter().find(|m| role(m) != "system").is_none_or(|m| role(m) != "user") {
        return refuse("first_message_role", "messages: first message must use the \"user\" role");
    }
    let last = messages.len() - 1;
    let mut tool_use_ids = Ids { before: ids, here: BTreeSet::new() };
    for (i, m) in messages.iter().enumerate().skip(from) {
        let r = role(m);
        let final_assistant = i == last && r == "assistant";
        match m.get("content") {
            Some(Value::String(s)) => {
                if s.is_empty() && !final_assistant {
                    return refuse("empty_content", empty_content(i));
                }
                if s.trim().is_empty() && !s.is_empty() && !final_assistant {
                    return refuse("empty_text", "messages: text content blocks must contain non-whitespace text");
                }
            }
            Some(Value::Array(blocks)) => {
                if blocks.is_empty() && !final_assistant {
                    return refuse("empty_content", empty_content(i));
                }
                for (k, b) in blocks.iter().enumerate() {
                    check_block(i, k, r, b, &mut tool_use_ids)?;
                }
                if r == "assistant" {
                    check_thinking_first(i, blocks)?;
                }
            }
            // the shape of `content` itself is checked by MessagesRequest::parse
            _ => {}
        }
    }
    Ok(())
}

/// `tool_use` ids seen: those of earlier messages and those met since.
struct Ids<'a> {
    before: &'a BTreeSet<String>,
    here: BTreeSet<String>,
}

impl Ids<'_> {
    /// False when `id` was seen.
    fn insert(&mut self, id: &str) -> bool {
        !self.before.contains(id) && self.here.insert(id.to_string())
    }
}

fn empty_content(i: usize) -> String {
    format!("messages.{i}: all messages must have non-empty content except for the optional final assistant message")
}

fn check_block(i: usize, k: usize, role: &str, b: &Value, ids: &mut Ids<'_>) -> Result<(), Refusal> {
    let Some(o) = b.as_object() else {
        return refuse("block_shape", format!("messages.{i}.content.{k}: Input should be a valid dictionary"));
    };
    let Some(ty) = o.get("type").and_then(Value::as_str) else {
        return refuse(
            "block_shape",
            format!("messages.{i}.content.{k}: Unable to extract tag using discriminator 'type'"),
        );
    };
    if !BLOCK_TYPES.contains(&ty) {
        let expected: Vec<String> = BLOCK_TYPES.iter().map(|t| format!("'{t}'")).collect();
        return refuse(
            "unknown_block",
            format!(
                "messages.{i}.content.{k}: Input tag '{ty}' found using 'type' does not match any of the expected tags: {}",
                expected.join(", ")
            ),
        );
    }
    if let Some((_, fields)) = REQUIRED_BLOCK_FIELDS.iter().find(|(t, _)| *t == ty) {
        if let Some(f) = fields.iter().find(|f| !o.contains_key(**f)) {
            return refuse("block_field", format!("messages.{i}.content.{k}.{ty}.{f}: Field required"));
        }
    }
    if role == "assistant" && USER_ONLY_BLOCKS.contains(&ty) {
        return refuse("block_role", format!("messages.{i}: `{ty}` blocks can only be in `user` messages"));
    }
    if role != "assistant" && ASSISTANT_ONLY_BLOCKS.contains(&ty) {
        return refuse("block_role", format!("messages.{i}: `{ty}` blocks can only be in `assistant` messages"));
    }
    match ty {
        "text" => match o.get("text") {
            Some(Value::String(t)) if t.is_empty() => {
                return refuse("empty_text", "messages: text content blocks must be non-empty");
            }
            Some(Value::String(t)) if t.trim().is_empty() => {
                return refuse("empty_text", "messages: text content blocks must contain non-whitespace text");
            }
            Some(Value::String(_)) => {}
            Some(_) => {
                return refuse(
                    "block_field",
                    format!("messages.{i}.content.{k}.text.text: Input should be a valid string"),
                )
            }
            None => {}
        },
        "thinking" if o.get("signature").and_then(Value::as_str).is_some_and(str::is_empty) => {
            return refuse(
                "thinking_signature",
                format!("messages.{i}.content.{k}: Invalid `signature` in `thinking` block"),
            );
        }
        "tool_use" => {
            let id = o.get("id").and_then(Value::as_str).unwrap_or_default();
            if !is_id(id) {
                return refuse(
                    "tool_use_id",
                    format!("messages.{i}.content.{k}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"),
                );
            }
            if !o.get("input").is_some_and(Value::is_object) {
                return refuse(
                    "block_field",
                    format!("messages.{i}.content.{k}.tool_use.input: Input should be a valid dictionary"),
                );
            }
            if !ids.insert(id) {
                return refuse("duplicate_tool_use_id", "messages: `tool_use` ids must be unique");
            }
        }
        _ => {}
    }
    Ok(())
}

fn is_thinking(b: &Value) -> bool {
    matches!(b.get("type").and_then(Value::as_str), Some("thinking" | "redacted_thinking"))
}

fn check_thinking_first(i: usize, blocks: &[Value]) -> Result<(), Refusal> {
    let Some(first) = blocks.first() else { return Ok(()) };
    if blocks.iter().any(is_thinking) && !is_thinking(first) {
        let found = first.get("type").and_then(Value::as_str).unwrap_or_default();
        return refuse(
            "thinking_order",
            format!(
                "messages.{i}.content.0: If an assistant message contains any thinking blocks, the first block must be `thinking` or `redacted_thinking`. Found `{found}`."
            ),
        );
    }
    Ok(())
}

/// After an assistant message with N tool_use blocks, the next user message (system messages skipped)
/// begins with N tool_result blocks. The pairing rule has already checked that the ids match. Assistant
/// messages from `from` on.
fn check_tool_results_first(messages: &[Value], from: usize) -> Result<(), Refusal> {
    for (i, m) in messages.iter().enumerate().skip(from) {
        if role(m) != "assistant" {
            continue;
        }
        let n = crate::wire::content_blocks(m)
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
            .count();
        if n == 0 {
            continue;
        }
        let Some((j, next)) = messages.iter().enumerate().skip(i + 1).find(|(_, m)| role(m) != "system") else {
            continue;
        };
        let blocks = crate::wire::content_blocks(next);
        let leading =
            blocks.iter().take_while(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")).count();
        if leading < n {
            return refuse(
                "tool_result_position",
                format!(
                    "messages.{j}: Did not find {n} `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks."
                ),
            );
        }
    }
    Ok(())
}

/// Blocks carrying `cache_control` anywhere in the request: system blocks, tools, message blocks and the
/// blocks nested in them (a `tool_result`'s content), and the top-level field.
pub fn count_cache_control(body: &Value) -> usize {
    fn walk(v: &Value) -> usize {
        match v {
            Value::Array(items) => items.iter().map(walk).sum(),
            Value::Object(o) => {
                let own = usize::from(o.get("cache_control").is_some_and(|c| !c.is_null()));
                let nested: usize =
                    ["content", "system", "tools", "messages"].iter().filter_map(|k| o.get(*k)).map(walk).sum();
                own + nested
            }
            _ => 0,
        }
    }
    walk(body)
}

/// The real API's pairing rule: each assistant message's tool_use ids are answered by exactly one
/// tool_result each in the next (user) message, and every tool_result answers a tool_use of the message
/// before it. The error texts follow the real API's.
pub fn check_tool_pairing(messages: &[Value]) -> Result<(), String> {
    check_tool_pairing_from(messages, 0)
}

/// [`check_tool_pairing`] of the messages from `from` on (their neighbours before it looked at as
/// needed): the same answer when the messages before `from` passed it beside the same message `from`.
pub fn check_tool_pairing_from(messages: &[Value], from: usize) -> Result<(), String> {
    use crate::wire::content_blocks;
    let ids_of = |m: &Value, ty: &str, key: &str| -> Vec<(usize, String)> {
        content_blocks(m)
            .iter()
            .enumerate()
            .filter(|(_, b)| b.get("type").and_then(Value::as_str) == Some(ty))
            .map(|(k, b)| (k, b.get(key).and_then(Value::as_str).unwrap_or_default().to_string()))
            .collect()
    };
    for (i, m) in messages.iter().enumerate().skip(from) {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        if role == "assistant" {
            let uses = ids_of(m, "tool_use", "id");
            // system messages (Claude Code's reminders) may stand between a tool_use and its results
            let Some(next) = messages[i + 1..].iter().find(|m| m.get("role").and_then(Value::as_str) != Some("system"))
            else {
                continue;
            };
            if uses.is_empty() {
                continue;
            }
            let results: Vec<String> = if next.get("role").and_then(Value::as_str) == Some("user") {
                ids_of(next, "tool_result", "tool_use_id").into_iter().map(|(_, id)| id).collect()
            } else {
                Vec::new()
            };
            let missing: Vec<&str> =
                uses.iter().map(|(_, id)| id.as_str()).filter(|id| !results.iter().any(|r| r == id)).collect();
            if !missing.is_empty() {
                return Err(format!(
                    "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    i + 1,
                    missing.join(", ")
                ));
            }
        } else {
            let results = ids_of(m, "tool_result", "tool_use_id");
            if results.is_empty() {
                continue;
            }
            let prev_msg = messages[..i].iter().rev().find(|m| m.get("role").and_then(Value::as_str) != Some("system"));
            let prev: Vec<String> = match prev_msg {
                Some(p) if p.get("role").and_then(Value::as_str) == Some("assistant") => {
                    ids_of(p, "tool_use", "id").into_iter().map(|(_, id)| id).collect()
                }
                _ => Vec::new(),
            };
            let mut seen = std::collections::BTreeSet::new();
            for (k, id) in &results {
                if !prev.contains(id) {
                    return Err(format!(
                        "messages.{i}.content.{k}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    ));
                }
                if !seen.insert(id.as_str()) {
                    return Err(format!(
                        "messages.{i}.content.{k}: each tool_use must have a single result. Found multiple `tool_result` blocks with id: {id}"
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(messages: Value) -> Value {
        json!({"model": "m", "max_tokens": 10, "messages": messages})
    }

    fn err(body: &Value) -> String {
        check_request(body).err().map(|r| format!("{}: {}", r.kind, r.message)).unwrap_or_default()
    }

    #[test]
    fn a_plain_conversation_passes() {
        let body = req(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "", "signature": "s"},
                {"type": "text", "text": "reading"},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}]},
            {"role": "system", "content": "reminder"},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": ""},
                {"type": "text", "text": "more"}]},
            {"role": "assistant", "content": ""},
        ]));
        assert_eq!(check_request(&body), Ok(()));
    }

    #[test]
    fn cache_control_is_counted_everywhere() {
        let cc = json!({"type": "ephemeral"});
        let body = json!({
            "system": [{"type": "text", "text": "s", "cache_control": cc}],
            "tools": [{"name": "A", "input_schema": {}, "cache_control": cc}],
            "messages": [{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "x", "content": [{"type": "text", "text": "t", "cache_control": cc}]},
                {"type": "text", "text": "t", "cache_control": cc}]}],
        });
        assert_eq!(count_cache_control(&body), 4);
    }

    #[test]
    fn tool_names_follow_the_pattern() {
        assert!(is_tool_name("mcp__server__tool-1") && is_tool_name(&"a".repeat(64)));
        assert!(!is_tool_name("") && !is_tool_name("a.b") && !is_tool_name(&"a".repeat(65)));
    }

    /// Every body below, checked after each prefix of its messages that passed (as the stub does for a
    /// request extending an earlier one: `crate::reuse`), gets the answer it gets checked whole; and the
    /// state carried from prefix to prefix is the state made from scratch.
    #[test]
    fn checking_from_an_earlier_request_gives_the_answer_of_checking_whole() {
        let cc = json!({"type": "ephemeral"});
        let user = |c: Value| json!({"role": "user", "content": c});
        let asst = |c: Value| json!({"role": "assistant", "content": c});
        let sys = |c: &str| json!({"role": "system", "content": c});
        let tu = |id: &str| json!({"type": "tool_use", "id": id, "name": "Read", "input": {}});
        let tr = |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": "r"});
        let text = |t: &str| json!({"type": "text", "text": t});
        let marked = |t: &str| json!({"type": "text", "text": t, "cache_control": cc});
        let conversations = [
            // plain turns, then an id used again far later
            json!([
                user(json!("hi")),
                asst(json!([tu("a")])),
                user(json!([tr("a")])),
                asst(json!([tu("b")])),
                user(json!([tr("b")])),
                asst(json!([tu("a")])),
                user(json!([tr("a")]))
            ]),
            // a prefill (empty final assistant) that is no longer final
            json!([user(json!("hi")), asst(json!([])), user(json!("go on"))]),
            json!([user(json!("hi")), asst(json!("")), user(json!("go on"))]),
            // system messages between a call and its results, and after the last
            json!([
                sys("r0"),
                user(json!("hi")),
                asst(json!([tu("a")])),
                sys("r1"),
                user(json!([tr("a")])),
                sys("r2"),
                asst(json!([tu("b")])),
                sys("r3"),
                user(json!([text("no result")]))
            ]),
            // a result answering a call two messages back, results after a text
            json!([user(json!("hi")), asst(json!([tu("a")])), user(json!([tr("a")])), user(json!([tr("a")]))]),
            json!([user(json!("hi")), asst(json!([tu("a"), tu("b")])), user(json!([tr("a"), text("x"), tr("b")]))]),
            // cache_control blocks adding up across the turns, and in the system prompt
            json!([
                user(json!([marked("1")])),
                asst(json!([marked("2")])),
                user(json!([marked("3")])),
                asst(json!([marked("4")])),
                user(json!([marked("5")]))
            ]),
            // the first message is an assistant one after system messages; thinking out of order late
            json!([sys("r"), asst(json!("x")), user(json!("hi"))]),
            json!([
                user(json!("hi")),
                asst(json!([tu("a")])),
                user(json!([tr("a")])),
                asst(json!([text("t"), {"type": "thinking", "thinking": "", "signature": "s"}]))
            ]),
        ];
        for messages in conversations {
            let all = messages.as_array().cloned().unwrap_or_default();
            for system in [json!([]), json!([marked("s")])] {
                let body = |m: &[Value]| json!({"model": "m", "max_tokens": 5, "system": system, "messages": m});
                let whole = check_request(&body(&all));
                let mut carried: Option<Checked> = None;
                for j in 1..=all.len() {
                    let prefix = &all[..j];
                    if check_request(&body(prefix)).is_err() {
                        carried = None;
                        continue;
                    }
                    let fresh = Checked::default().after(prefix, 0, true);
                    if let Some(c) = carried.take() {
                        assert_eq!(c.after(prefix, j - 1, true), fresh, "{messages} to {j}");
                    }
                    if fresh.resumes(j, true).is_some() {
                        assert_eq!(check_request_after(&body(&all), Some(&fresh)), whole, "{messages} after {j}");
                        let pairing = check_tool_pairing_from(&all, fresh.at.unwrap_or(0));
                        assert_eq!(pairing, check_tool_pairing(&all), "{messages} after {j}");
                    }
                    carried = Some(fresh);
                }
            }
        }
        // the last message rewritten (a cache mark moved off it): the rules still take up before it
        let sent = [user(json!("hi")), asst(json!([tu("a")])), user(json!([tr("a"), marked("m")]))];
        let state = Checked::default().after(&sent, 0, true);
        assert_eq!(state.resumes(2, true), Some(1), "kept up to the message before the rewritten one");
        let next = [user(json!("hi")), asst(json!([tu("a")])), user(json!([tr("a")])), asst(json!([tu("b")]))];
        let body = |m: &[Value]| json!({"model": "m", "max_tokens": 5, "messages": m});
        assert_eq!(check_request_after(&body(&next), Some(&state)), check_request(&body(&next)));
        assert_eq!(state.after(&next, 2, true), Checked::default().after(&next, 0, true));
    }

    #[test]
    fn the_first_rule_broken_is_the_answer() {
        let body = json!({"model": "m", "max_tokens": 0, "messages": [], "extra": 1});
        assert_eq!(err(&body), "unknown_field: extra: Extra inputs are not permitted");
    }
}
