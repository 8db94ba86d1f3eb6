//! Messages API wire types: the response message, its content blocks, usage, the SSE stream events,
//! and the error body — the shapes the real API sends, as serde types.
//!
//! Requests are kept as [`serde_json::Value`] where clients differ (every client sends extra fields:
//! `metadata`, `thinking`, `context_management`, …) and are read through the typed views of
//! [`MessagesRequest`]. Responses are typed, because the stub writes them and must write them exactly.
//!
//! The event builders (`ev_*`) are the vocabulary tests speak: `ev_message_start(&msg)`, `ev_text_delta(0, "hi")`.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// `usage` of a message, with the cache fields the real API always sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Tokens written to the prompt cache.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    /// Tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

/// One content block of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// Extended thinking, with the signature the client must send back unchanged.
    Thinking {
        /// The thinking text.
        thinking: String,
        /// Opaque signature.
        signature: String,
    },
    /// A tool call.
    ToolUse {
        /// `toolu_…` id the client answers with a tool_result.
        id: String,
        /// Tool name.
        name: String,
        /// Tool input (a JSON object).
        input: Value,
    },
    /// A server tool call the API ran itself (`web_search`): the client gets it with its result and
    /// answers nothing.
    ServerToolUse {
        /// `srvtoolu_…` id the result block names.
        id: String,
        /// Server tool name (`web_search`).
        name: String,
        /// Its input (`{"query": …}`).
        input: Value,
    },
    /// The result of a `web_search` server tool call: a list of `web_search_result` blocks, or an
    /// error object (`{"type": "web_search_tool_result_error", "error_code": …}`).
    WebSearchToolResult {
        /// The `srvtoolu_…` id it answers.
        tool_use_id: String,
        /// The results (or the error object).
        content: Value,
    },
}

impl ContentBlock {
    /// The block as `content_block_start` announces it: empty text / thinking, `input: {}`.
    pub fn start_shape(&self) -> Value {
        match self {
            ContentBlock::Text { .. } => json!({"type": "text", "text": ""}),
            ContentBlock::Thinking { .. } => {
                json!({"type": "thinking", "thinking": "", "signature": ""})
            }
            ContentBlock::ToolUse { id, name, .. } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": {}})
            }
            ContentBlock::ServerToolUse { id, name, .. } => {
                json!({"type": "server_tool_use", "id": id, "name": name, "input": {}})
            }
            // the API sends a result block whole in its content_block_start, with no delta
            ContentBlock::WebSearchToolResult { tool_use_id, content } => {
                json!({"type": "web_search_tool_result", "tool_use_id": tool_use_id, "content": content})
            }
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The turn is over.
    EndTurn,
    /// The turn asks for tool results.
    ToolUse,
    /// `max_tokens` reached.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
}

/// A complete assistant message: the non-streaming response body, and what a client reassembles from
/// the SSE events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `msg_…` id.
    pub id: String,
    /// Always `"message"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Always `"assistant"`.
    pub role: String,
    /// The model named in the request.
    pub model: String,
    /// The blocks in order.
    pub content: Vec<ContentBlock>,
    /// Why it stopped (`null` in `message_start`).
    pub stop_reason: Option<StopReason>,
    /// The matched stop sequence, if any.
    pub stop_sequence: Option<String>,
    /// Token counts.
    pub usage: Usage,
}

impl Message {
    /// The `message_start` form of this message: no content, no stop reason, output_tokens as the API
    /// reports at the start (1).
    pub fn start_shape(&self) -> Message {
        Message {
            content: Vec::new(),
            stop_reason: None,
            stop_sequence: None,
            usage: Usage { output_tokens: 1, ..self.usage },
            ..self.clone()
        }
    }
}

/// One server-sent event: its `event:` name and its `data:` JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SseEvent {
    /// The `event:` line.
    pub event: String,
    /// The `data:` payload, parsed.
    pub data: Value,
}

impl SseEvent {
    /// The event as bytes on the wire: `event: NAME\ndata: JSON\n\n`.
    pub fn to_wire(&self) -> String {
        format!("event: {}\ndata: {}\n\n", self.event, self.data)
    }

    fn new(event: &str, data: Value) -> SseEvent {
        SseEvent { event: event.to_string(), data }
    }
}

/// `message_start`.
pub fn ev_message_start(message: &Message) -> SseEvent {
    SseEvent::new("message_start", json!({"type": "message_start", "message": message.start_shape()}))
}

/// `content_block_start` for `block` at `index`.
pub fn ev_block_start(index: usize, block: &ContentBlock) -> SseEvent {
    SseEvent::new(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": block.start_shape()}),
    )
}

/// `ping`.
pub fn ev_ping() -> SseEvent {
    SseEvent::new("ping", json!({"type": "ping"}))
}

fn ev_delta(index: usize, delta: Value) -> SseEvent {
    SseEvent::new("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": delta}))
}

/// `content_block_delta` with a `text_delta`.
pub fn ev_text_delta(index: usize, text: &str) -> SseEvent {
    ev_delta(index, json!({"type": "text_delta", "text": text}))
}

/// `content_block_delta` with an `input_json_delta`.
pub fn ev_input_json_delta(index: usize, partial_json: &str) -> SseEvent {
    ev_delta(index, json!({"type": "input_json_delta", "partial_json": partial_json}))
}

/// `content_block_delta` with a `thinking_delta`.
pub fn ev_thinking_delta(index: usize, thinking: &str) -> SseEvent {
    ev_delta(index, json!({"type": "thinking_delta", "thinking": thinking}))
}

/// `content_block_delta` with a `signature_delta`.
pub fn ev_signature_delta(index: usize, signature: &str) -> SseEvent {
    ev_delta(index, json!({"type": "signature_delta", "signature": signature}))
}

/// `content_block_stop`.
pub fn ev_block_stop(index: usize) -> SseEvent {
    SseEvent::new("content_block_stop", json!({"type": "content_block_stop", "index": index}))
}

/// `message_delta` carrying the stop reason and the final usage.
pub fn ev_message_delta(message: &Message) -> SseEvent {
    SseEvent::new(
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": {"stop_reason": message.stop_reason, "stop_sequence": message.stop_sequence},
            "usage": {"output_tokens": message.usage.output_tokens},
        }),
    )
}

/// `message_stop`.
pub fn ev_message_stop() -> SseEvent {
    SseEvent::new("message_stop", json!({"type": "message_stop"}))
}

/// An `error` event (e.g. `overloaded_error` mid-stream).
pub fn ev_error(error_type: &str, message: &str) -> SseEvent {
    SseEvent::new("error", error_body(error_type, message))
}

/// The Anthropic error body: `{"type":"error","error":{"type":…,"message":…}}` (the server adds the
/// `request_id` beside `error` when it answers with it).
pub fn error_body(error_type: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": error_type, "message": message}})
}

/// The SSE events that stream `message`: message_start, then per block content_block_start (a ping
/// after the first), its deltas, content_block_stop; message_delta; message_stop. Text, thinking and
/// tool input are cut into several deltas at deterministic places ([`pieces`]); a tool_use block opens
/// with an empty `input_json_delta` as the real API's do, so a client must concatenate to get the input.
pub fn stream_events(message: &Message) -> Vec<SseEvent> {
    let mut out = vec![ev_message_start(message)];
    for (i, block) in message.content.iter().enumerate() {
        out.push(ev_block_start(i, block));
        if i == 0 {
            out.push(ev_ping());
        }
        match block {
            ContentBlock::Text { text } => out.extend(pieces(text).into_iter().map(|p| ev_text_delta(i, p))),
            ContentBlock::Thinking { thinking, signature } => {
                out.extend(pieces(thinking).into_iter().map(|p| ev_thinking_delta(i, p)));
                out.push(ev_signature_delta(i, signature));
            }
            ContentBlock::ToolUse { input, .. } | ContentBlock::ServerToolUse { input, .. } => {
                let json = input.to_string();
                out.push(ev_input_json_delta(i, ""));
                out.extend(pieces(&json).into_iter().map(|p| ev_input_json_delta(i, p)));
            }
            ContentBlock::WebSearchToolResult { .. } => {}
        }
        out.push(ev_block_stop(i));
    }
    if message.content.is_empty() {
        out.push(ev_ping());
    }
    out.push(ev_message_delta(message));
    out.push(ev_message_stop());
    out
}

/// Cuts `s` into pieces of about a third of its length (1 to 32 bytes), at char boundaries; at least
/// one piece, and at least two whenever `s` has two characters or more.
pub fn pieces(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return vec![s];
    }
    let target = s.len().div_ceil(3).clamp(1, 32);
    let mut out = Vec::new();
    let mut start = 0;
    while start < s.len() {
        let mut end = (start + target).min(s.len());
        while !s.is_char_boundary(end) {
            end += 1;
        }
        out.push(&s[start..end]);
        start = end;
    }
    if out.len() == 1 {
        if let Some((i, _)) = s.char_indices().nth(1) {
            return vec![&s[..i], &s[i..]];
        }
    }
    out
}

/// Typed views of a `/v1/messages` request body, which stays a [`Value`] so nothing a client sent is
/// lost from the record.
#[derive(Debug, Clone)]
pub struct MessagesRequest<'a> {
    body: &'a Value,
}

impl<'a> MessagesRequest<'a> {
    /// Checks the fields the real API requires (`model`, `max_tokens`, `messages`) and their types.
    pub fn parse(body: &'a Value) -> Result<MessagesRequest<'a>, String> {
        Self::parse_after(body, 0)
    }

    /// [`MessagesRequest::parse`] of a body whose first `kept` messages are those of a body that passed
    /// it (a message's checks are its own): the others are checked.
    pub fn parse_after(body: &'a Value, kept: usize) -> Result<MessagesRequest<'a>, String> {
        let obj = body.as_object().ok_or("request body must be a JSON object")?;
        match obj.get("model") {
            Some(Value::String(_)) => {}
            Some(_) => return Err("model: Input should be a valid string".into()),
            None => return Err("model: Field required".into()),
        }
        match obj.get("max_tokens") {
            // its lower bound is a strict rule (crate::validate)
            Some(v) if v.as_i64().is_some() || v.as_u64().is_some() => {}
            Some(_) => return Err("max_tokens: Input should be a valid integer".into()),
            None => return Err("max_tokens: Field required".into()),
        }
        let messages = match obj.get("messages") {
            Some(Value::Array(m)) => m,
            Some(_) => return Err("messages: Input should be a valid list".into()),
            None => return Err("messages: Field required".into()),
        };
        for (i, m) in messages.iter().enumerate().skip(kept) {
            match m.get("role").and_then(Value::as_str) {
                // "system" messages are what Claude Code sends for system reminders with recent models
                Some("user" | "assistant" | "system") => {}
                Some(other) => {
                    return Err(format!(
                        "messages.{i}.role: Input should be 'user', 'assistant' or 'system' (got {other:?})"
                    ))
                }
                None => return Err(format!("messages.{i}.role: Field required")),
            }
            match m.get("content") {
                Some(Value::String(_) | Value::Array(_)) => {}
                Some(_) => return Err(format!("messages.{i}.content: Input should be a valid string or list")),
                None => return Err(format!("messages.{i}.content: Field required")),
            }
        }
        if let Some(tools) = obj.get("tools") {
            if !tools.is_array() {
                return Err("tools: Input should be a valid list".into());
            }
        }
        Ok(MessagesRequest { body })
    }

    /// The whole body.
    pub fn body(&self) -> &'a Value {
        self.body
    }

    /// `model`.
    pub fn model(&self) -> &'a str {
        self.body.get("model").and_then(Value::as_str).unwrap_or_default()
    }

    /// `stream` (default false).
    pub fn stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool).unwrap_or(false)
    }

    /// `messages`.
    pub fn messages(&self) -> &'a [Value] {
        self.body.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
    }

    /// Server tools sent (`tools[]` entries with a `type` other than `custom`, e.g.
    /// `{"type": "web_search_20250305", "name": "web_search", …}`): the API runs them itself.
    pub fn server_tools(&self) -> Vec<&'a Value> {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .map(|t| t.iter().filter(|t| is_server_tool(t)).collect())
            .unwrap_or_default()
    }

    /// Names of the client tools sent (`tools[].name` of the tools the client runs: no `type`, or
    /// `type: "custom"`).
    pub fn client_tool_names(&self) -> Vec<&'a str> {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter().filter(|t| !is_server_tool(t)).filter_map(|t| t.get("name").and_then(Value::as_str)).collect()
            })
            .unwrap_or_default()
    }

    /// The text of the last user message (string content, or its text blocks joined with `\n`).
    pub fn last_user_text(&self) -> String {
        self.messages()
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .map(content_text)
            .unwrap_or_default()
    }

    /// Names of the tools sent (`tools[].name`).
    pub fn tool_names(&self) -> Vec<&'a str> {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .map(|t| t.iter().filter_map(|t| t.get("name").and_then(Value::as_str)).collect())
            .unwrap_or_default()
    }

    /// The system prompt as one string (blocks joined with `\n`).
    pub fn system_text(&self) -> String {
        match self.body.get("system") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(blocks)) => {
                blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
            }
            _ => String::new(),
        }
    }

    /// The text of the first user message (string content, or its text blocks joined with `\n`).
    pub fn first_user_text(&self) -> String {
        self.messages()
            .iter()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .map(content_text)
            .unwrap_or_default()
    }
}

/// The text of a message's content: the string itself, or its `text` blocks joined with `\n`.
pub fn content_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// True for a server tool definition: a `type` other than `custom` (`web_search_20250305`, …).
pub fn is_server_tool(tool: &Value) -> bool {
    tool.get("type").and_then(Value::as_str).is_some_and(|t| t != "custom")
}

/// The content blocks of a message (empty for string content).
pub fn content_blocks(message: &Value) -> &[Value] {
    message.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_use_starts_with_empty_input() {
        let b = ContentBlock::ToolUse { id: "toolu_x_1".into(), name: "Read".into(), input: json!({"a": 1}) };
        assert_eq!(b.start_shape(), json!({"type": "tool_use", "id": "toolu_x_1", "name": "Read", "input": {}}));
    }

    #[test]
    fn missing_fields_are_named_like_the_api() {
        assert_eq!(MessagesRequest::parse(&json!({})).err().as_deref(), Some("model: Field required"));
        let body = json!({"model": "m", "max_tokens": 1, "messages": [{"role": "bot", "content": ""}]});
        let e = MessagesRequest::parse(&body).err().unwrap_or_default();
        assert!(e.starts_with("messages.0.role"), "{e}");
    }

    #[test]
    fn pieces_cover_the_text_at_char_boundaries() {
        for s in ["", "a", "ab", "{\"é\":\"ü€\"}", &"x".repeat(200)] {
            let p = pieces(s);
            assert_eq!(p.concat(), s);
            assert!(p.len() >= 2 || s.chars().count() < 2, "{s:?} -> {p:?}");
        }
    }

    #[test]
    fn server_tools_are_told_from_client_tools() {
        let body = json!({"model": "m", "max_tokens": 1, "messages": [], "tools": [
            {"name": "Read", "input_schema": {}},
            {"type": "custom", "name": "Mine", "input_schema": {}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 8},
        ]});
        let r = MessagesRequest::parse(&body).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.client_tool_names(), vec!["Read", "Mine"]);
        assert_eq!(r.server_tools().len(), 1);
        assert_eq!(r.tool_names().len(), 3);
        let b = ContentBlock::WebSearchToolResult { tool_use_id: "srvtoolu_1".into(), content: json!([]) };
        assert_eq!(
            b.start_shape(),
            json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []})
        );
    }

    #[test]
    fn wire_form_of_an_event() {
        assert_eq!(ev_ping().to_wire(), "event: ping\ndata: {\"type\":\"ping\"}\n\n");
    }
}
