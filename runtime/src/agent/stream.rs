//! Reassembly of a streamed response (the API's SSE event grammar) into a [`Message`], checking the
//! grammar as it goes: `message_start` first; blocks started, filled by deltas that fit their type and
//! stopped one at a time with contiguous indices from 0; tool input pieces (`input_json_delta`) that
//! concatenate to a JSON object; one `message_delta` with a `stop_reason` after the last block; then
//! `message_stop`. An `error` event ends the stream with the API's error object. The events themselves
//! come from the SSE parser of eventsource-stream.

use crate::wire::{ContentBlock, Message, StopReason};
use serde_json::Value;

/// How a stream ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    /// `message_stop`: the whole message.
    Complete(Message),
    /// An `error` event: the API's error object (`{"type": "overloaded_error", "message": …}`).
    Error(Value),
    /// The stream broke the grammar (or stopped before `message_stop`): what was wrong.
    Broken(Vec<String>),
}

#[derive(Debug)]
struct Open {
    index: usize,
    text: String,
    signature: String,
    json: String,
}

/// Folds events into the message they carry.
#[derive(Debug, Default)]
pub struct Assembler {
    message: Option<Message>,
    open: Option<Open>,
    next_index: usize,
    saw_delta: bool,
    stopped: bool,
    error: Option<Value>,
    wrong: Vec<String>,
    events: usize,
}

fn str_at(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

impl Assembler {
    /// Takes one event: its `event:` name and its `data:` text.
    pub fn event(&mut self, name: &str, data: &str) {
        let i = self.events;
        self.events += 1;
        if self.stopped || self.error.is_some() {
            self.wrong.push(format!("event {i} ({name}) after the end of the stream"));
            return;
        }
        let data: Value = match serde_json::from_str(data) {
            Ok(v) => v,
            Err(e) => {
                self.wrong.push(format!("event {i} ({name}): data is not JSON: {e}"));
                return;
            }
        };
        if data.get("type").and_then(Value::as_str) != Some(name) {
            self.wrong.push(format!("event {i}: `event: {name}` carries data of another type"));
        }
        if i == 0 && name != "message_start" && name != "error" {
            self.wrong.push(format!("event 0 is {name}, not message_start"));
        }
        match name {
            "message_start" => self.message_start(i, &data),
            "ping" => {}
            "content_block_start" => self.block_start(i, &data),
            "content_block_delta" => self.block_delta(i, &data),
            "content_block_stop" => self.block_stop(i, &data),
            "message_delta" => self.message_delta(i, &data),
            "message_stop" => {
                if !self.saw_delta {
                    self.wrong.push(format!("event {i}: message_stop before any message_delta"));
                }
                self.stopped = true;
            }
            "error" => self.error = Some(data.get("error").cloned().unwrap_or(Value::Null)),
            other => self.wrong.push(format!("event {i}: unknown event {other:?}")),
        }
    }

    fn message_start(&mut self, i: usize, data: &Value) {
        if self.message.is_some() {
            self.wrong.push(format!("event {i}: a second message_start"));
            return;
        }
        let m = data.get("message").cloned().unwrap_or_default();
        if m.get("type").and_then(Value::as_str) != Some("message")
            || m.get("role").and_then(Value::as_str) != Some("assistant")
        {
            self.wrong.push(format!("event {i}: message_start does not carry an assistant message"));
        }
        if m.get("content").and_then(Value::as_array).is_some_and(|c| !c.is_empty()) {
            self.wrong.push("message_start carries content".into());
        }
        let mut message = Message { id: str_at(&m, "id"), model: str_at(&m, "model"), ..Message::default() };
        if let Some(u) = m.get("usage") {
            message.usage.update(u);
            message.start_usage = message.usage;
        }
        self.message = Some(message);
    }

    fn block_start(&mut self, i: usize, data: &Value) {
        let index = data.get("index").and_then(Value::as_u64).map(|x| x as usize);
        if let Some(b) = &self.open {
            self.wrong.push(format!("event {i}: block {index:?} starts while block {} is open", b.index));
        }
        if index != Some(self.next_index) {
            self.wrong.push(format!("event {i}: block index {index:?}, expected {}", self.next_index));
        }
        self.next_index += 1;
        let cb = data.get("content_block").cloned().unwrap_or_default();
        let kind = cb.get("type").and_then(Value::as_str).unwrap_or_default();
        let empty_input = || Value::Object(Default::default());
        let block = match kind {
            "text" => ContentBlock::Text { text: String::new() },
            "thinking" => ContentBlock::Thinking { thinking: String::new(), signature: String::new() },
            "tool_use" => {
                ContentBlock::ToolUse { id: str_at(&cb, "id"), name: str_at(&cb, "name"), input: empty_input() }
            }
            "server_tool_use" => {
                ContentBlock::ServerToolUse { id: str_at(&cb, "id"), name: str_at(&cb, "name"), input: empty_input() }
            }
            // a server tool's result comes whole in its start event
            "web_search_tool_result" => ContentBlock::WebSearchToolResult {
                tool_use_id: str_at(&cb, "tool_use_id"),
                content: cb.get("content").cloned().unwrap_or(Value::Null),
            },
            other => {
                self.wrong.push(format!("event {i}: unknown content block type {other:?}"));
                ContentBlock::Text { text: String::new() }
            }
        };
        if matches!(kind, "tool_use" | "server_tool_use") && cb.get("input") != Some(&empty_input()) {
            self.wrong.push(format!("event {i}: {kind} block starts with input other than {{}}"));
        }
        match &mut self.message {
            Some(m) => m.content.push(block),
            None => self.wrong.push(format!("event {i}: content_block_start before message_start")),
        }
        self.open = Some(Open {
            index: index.unwrap_or(usize::MAX),
            text: String::new(),
            signature: String::new(),
            json: String::new(),
        });
    }

    fn block_delta(&mut self, i: usize, data: &Value) {
        let index = data.get("index").and_then(Value::as_u64).map(|x| x as usize);
        let delta = data.get("delta").cloned().unwrap_or_default();
        let dtype = delta.get("type").and_then(Value::as_str).unwrap_or_default();
        let kind = self.message.as_ref().and_then(|m| m.content.last()).map(block_kind).unwrap_or("none");
        let Some(b) = self.open.as_mut().filter(|b| Some(b.index) == index) else {
            self.wrong.push(format!("event {i}: delta for block {index:?}, which is not open"));
            return;
        };
        match (kind, dtype) {
            ("text", "text_delta") => b.text.push_str(&str_at(&delta, "text")),
            ("tool_use" | "server_tool_use", "input_json_delta") => b.json.push_str(&str_at(&delta, "partial_json")),
            ("thinking", "thinking_delta") => b.text.push_str(&str_at(&delta, "thinking")),
            ("thinking", "signature_delta") => b.signature.push_str(&str_at(&delta, "signature")),
            (k, d) => self.wrong.push(format!("event {i}: {d} inside a {k} block")),
        }
    }

    fn block_stop(&mut self, i: usize, data: &Value) {
        let index = data.get("index").and_then(Value::as_u64).map(|x| x as usize);
        let Some(b) = self.open.take().filter(|b| Some(b.index) == index) else {
            self.wrong.push(format!("event {i}: stop for block {index:?}, which is not open"));
            return;
        };
        match self.message.as_mut().and_then(|m| m.content.last_mut()) {
            Some(ContentBlock::Text { text }) => *text = b.text,
            Some(ContentBlock::Thinking { thinking, signature }) => {
                *thinking = b.text;
                *signature = b.signature;
            }
            Some(ContentBlock::ToolUse { input, .. } | ContentBlock::ServerToolUse { input, .. }) => {
                let src = if b.json.is_empty() { "{}" } else { b.json.as_str() };
                match serde_json::from_str::<Value>(src) {
                    Ok(j) if j.is_object() => *input = j,
                    Ok(_) => self.wrong.push(format!("event {i}: tool input of block {} is not an object", b.index)),
                    Err(e) => {
                        self.wrong.push(format!("event {i}: tool input pieces of block {} do not parse: {e}", b.index))
                    }
                }
            }
            Some(ContentBlock::WebSearchToolResult { .. }) | None => {}
        }
    }

    fn message_delta(&mut self, i: usize, data: &Value) {
        if let Some(b) = &self.open {
            self.wrong.push(format!("event {i}: message_delta while block {} is open", b.index));
        }
        if self.saw_delta {
            self.wrong.push(format!("event {i}: a second message_delta"));
        }
        self.saw_delta = true;
        let d = data.get("delta").cloned().unwrap_or_default();
        if d.get("stop_reason").is_none_or(Value::is_null) {
            self.wrong.push(format!("event {i}: message_delta without stop_reason"));
        }
        if let Some(m) = &mut self.message {
            m.stop_reason = d.get("stop_reason").cloned().and_then(|s| serde_json::from_value::<StopReason>(s).ok());
            // the delta's usage is cumulative: its fields replace message_start's
            if let Some(u) = data.get("usage") {
                m.usage.update(u);
            }
        }
    }

    /// The end of the stream: the message, the error event, or what broke.
    pub fn finish(mut self) -> Ended {
        if let Some(e) = self.error {
            return Ended::Error(e);
        }
        if !self.stopped {
            self.wrong.push("stream ended without message_stop or error".into());
        }
        match self.message {
            Some(m) if self.wrong.is_empty() => Ended::Complete(m),
            None if self.wrong.is_empty() => Ended::Broken(vec!["the stream carried no message".into()]),
            _ => Ended::Broken(self.wrong),
        }
    }
}

fn block_kind(b: &ContentBlock) -> &'static str {
    match b {
        ContentBlock::Text { .. } => "text",
        ContentBlock::Thinking { .. } => "thinking",
        ContentBlock::ToolUse { .. } => "tool_use",
        ContentBlock::ServerToolUse { .. } => "server_tool_use",
        ContentBlock::WebSearchToolResult { .. } => "web_search_tool_result",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: &str = r#"{"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","model":"x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}"#;

    fn fold(events: &[(&str, &str)]) -> Ended {
        let mut a = Assembler::default();
        for (n, d) in events {
            a.event(n, d);
        }
        a.finish()
    }

    #[test]
    fn a_tool_call_in_pieces_is_reassembled() {
        let end = fold(&[
            ("message_start", START),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"Read","input":{}}}"#,
            ),
            ("ping", r#"{"type":"ping"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\":"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"/f\"}"}}"#,
            ),
            ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ]);
        let Ended::Complete(m) = end else { panic!("{end:?}") };
        assert_eq!(m.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(
            m.content,
            [ContentBlock::ToolUse {
                id: "t1".into(),
                name: "Read".into(),
                input: serde_json::json!({"file_path": "/f"})
            }]
        );
        // the block goes back into the conversation as the API sent it
        assert_eq!(
            serde_json::to_string(&m.content[0]).unwrap_or_default(),
            r#"{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/f"}}"#
        );
    }

    #[test]
    fn an_error_event_and_a_broken_grammar_are_told_apart() {
        let err = fold(&[
            ("message_start", START),
            ("error", r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
        ]);
        assert_eq!(err, Ended::Error(serde_json::json!({"type": "overloaded_error", "message": "Overloaded"})));
        let Ended::Broken(why) = fold(&[
            ("message_start", START),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            ),
        ]) else {
            panic!("not broken")
        };
        assert!(why.iter().any(|w| w.contains("expected 0")), "{why:?}");
        assert!(why.iter().any(|w| w.contains("without message_stop")), "{why:?}");
        let Ended::Broken(why) = fold(&[("content_block_delta", "{")]) else { panic!("not broken") };
        assert!(why[0].contains("not JSON"), "{why:?}");
    }
}
