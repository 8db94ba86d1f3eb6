//! Server-sent events: an incremental decoder of the `text/event-stream` bytes a Messages API stream
//! sends, the reassembly of a [`Message`] from its events, and the conformance checker that says whether
//! an event sequence is one a real client can rely on.
//!
//! The decoder follows the SSE spec's line rules (`event:`, `data:` possibly repeated, blank line
//! dispatches, `:` comments ignored, CR / LF / CRLF line ends). Everything here is used on both sides:
//! the stub's own output is checked by it (proptest), and the built-in subject's client parses with it.
//!
//! ```
//! use stub_messages::sse::SseDecoder;
//! let mut d = SseDecoder::default();
//! let events = d.feed(b"event: ping\ndata: {\"type\":\"ping\"}\n\n").unwrap();
//! assert_eq!(events[0].event, "ping");
//! ```

use crate::wire::{ContentBlock, Message, SseEvent, StopReason};
use serde_json::Value;

/// An event whose `data:` is not JSON, or a stream that ends inside an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("SSE: {0}")]
pub struct SseError(pub String);

/// Incremental SSE decoder: feed it bytes as they arrive, get complete events back.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
}

impl SseDecoder {
    /// Feeds bytes; returns the events completed by them.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(pos) = self.buf.iter().position(|&b| b == b'\n' || b == b'\r') {
            // A CR at the very end may be the first half of a CRLF: wait for more bytes.
            if self.buf[pos] == b'\r' && pos + 1 == self.buf.len() {
                break;
            }
            let skip = if self.buf[pos] == b'\r' && self.buf.get(pos + 1) == Some(&b'\n') { 2 } else { 1 };
            let line: Vec<u8> = self.buf.drain(..pos + skip).take(pos).collect();
            let line = String::from_utf8(line).map_err(|_| SseError("a line is not UTF-8".into()))?;
            if let Some(ev) = self.line(&line)? {
                out.push(ev);
            }
        }
        Ok(out)
    }

    /// Ends the stream: an event left without its blank line is an error (a cut stream).
    pub fn finish(&mut self) -> Result<(), SseError> {
        if !self.buf.is_empty() || self.event.is_some() || !self.data.is_empty() {
            return Err(SseError("stream ended in the middle of an event".into()));
        }
        Ok(())
    }

    fn line(&mut self, line: &str) -> Result<Option<SseEvent>, SseError> {
        if line.is_empty() {
            if self.data.is_empty() {
                self.event = None;
                return Ok(None);
            }
            let data = self.data.join("\n");
            self.data.clear();
            let event = self.event.take().unwrap_or_else(|| "message".into());
            let data: Value = serde_json::from_str(&data)
                .map_err(|e| SseError(format!("data of event {event:?} is not JSON: {e}")))?;
            return Ok(Some(SseEvent { event, data }));
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => self.data.push(value.to_string()),
            _ => {}
        }
        Ok(None)
    }
}

/// Decodes a whole stream.
pub fn decode_all(bytes: &[u8]) -> Result<Vec<SseEvent>, SseError> {
    let mut d = SseDecoder::default();
    let events = d.feed(bytes)?;
    d.finish()?;
    Ok(events)
}

/// What a stream amounted to: the message a client reassembles, an error event if one came, and every
/// rule of the event grammar it broke.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamReport {
    /// The reassembled message (present once `message_start` was seen).
    pub message: Option<Message>,
    /// The `error` event's `error` object, if the stream carried one.
    pub error: Option<Value>,
    /// True when `message_stop` arrived.
    pub complete: bool,
    /// Broken rules, in the order found; empty for a conforming stream.
    pub violations: Vec<String>,
}

#[derive(Debug)]
struct OpenBlock {
    index: usize,
    kind: String,
    text: String,
    signature: String,
    json: String,
}

/// Reassembles and checks an event sequence: one `message_start` first; block indices contiguous from 0;
/// start → deltas → stop nesting with one block open at a time; delta types that fit their block;
/// `input_json_delta` pieces that concatenate to a JSON object; `message_delta` after the last block and
/// before `message_stop`; nothing after `message_stop` or an `error`.
pub fn check_stream(events: &[SseEvent]) -> StreamReport {
    let mut c = StreamCheck::default();
    for (i, ev) in events.iter().enumerate() {
        c.event(i, ev);
    }
    if !c.ended {
        c.r.violations.push("stream ended without message_stop or error".into());
    }
    c.r
}

/// [`check_stream`]'s state between two events.
#[derive(Default)]
struct StreamCheck {
    r: StreamReport,
    /// The block between its start and its stop.
    open: Option<OpenBlock>,
    /// The index the next block must have.
    next_index: usize,
    saw_delta: bool,
    /// After `message_stop` or an `error`: nothing more may come.
    ended: bool,
}

impl StreamCheck {
    /// Event `i`: its framing (its data's type, the first event), then what its kind requires.
    fn event(&mut self, i: usize, ev: &SseEvent) {
        let v = &mut self.r.violations;
        if self.ended {
            v.push(format!("event {i} ({}) after the end of the stream", ev.event));
            return;
        }
        let data_type = ev.data.get("type").and_then(Value::as_str).unwrap_or_default();
        if data_type != ev.event {
            v.push(format!("event {i}: `event: {}` carries data of type {data_type:?}", ev.event));
        }
        if i == 0 && ev.event != "message_start" && ev.event != "error" {
            v.push(format!("event 0 is {}, not message_start", ev.event));
        }
        match ev.event.as_str() {
            "message_start" => self.message_start(i, ev),
            "ping" => {}
            "content_block_start" => self.block_start(i, ev),
            "content_block_delta" => self.block_delta(i, ev),
            "content_block_stop" => self.block_stop(i, ev),
            "message_delta" => self.message_delta(i, ev),
            "message_stop" => {
                if !self.saw_delta {
                    v.push(format!("event {i}: message_stop before any message_delta"));
                }
                self.r.complete = true;
                self.ended = true;
            }
            "error" => {
                self.r.error = ev.data.get("error").cloned();
                self.ended = true;
            }
            other => v.push(format!("event {i}: unknown event {other:?}")),
        }
    }

    /// One `message_start`, its message without content.
    fn message_start(&mut self, i: usize, ev: &SseEvent) {
        let v = &mut self.r.violations;
        if self.r.message.is_some() {
            v.push(format!("event {i}: a second message_start"));
            return;
        }
        match serde_json::from_value::<Message>(ev.data.get("message").cloned().unwrap_or_default()) {
            Ok(m) => {
                if !m.content.is_empty() {
                    v.push("message_start carries content".into());
                }
                self.r.message = Some(m);
            }
            Err(e) => v.push(format!("event {i}: message_start.message does not parse: {e}")),
        }
    }

    /// A block opens: the next index, none open, a known type (a tool's input starts as `{}`); the
    /// message gets the block, empty.
    fn block_start(&mut self, i: usize, ev: &SseEvent) {
        let v = &mut self.r.violations;
        let index = ev.data.get("index").and_then(Value::as_u64).map(|x| x as usize);
        if let Some(b) = &self.open {
            v.push(format!("event {i}: block {index:?} starts while block {} is open", b.index));
        }
        if index != Some(self.next_index) {
            v.push(format!("event {i}: block index {index:?}, expected {}", self.next_index));
        }
        self.next_index += 1;
        let cb = ev.data.get("content_block").cloned().unwrap_or_default();
        let kind = cb.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
        if !matches!(kind.as_str(), "text" | "thinking" | "tool_use" | "server_tool_use" | "web_search_tool_result") {
            v.push(format!("event {i}: unknown content block type {kind:?}"));
        }
        if matches!(kind.as_str(), "tool_use" | "server_tool_use") && cb.get("input") != Some(&serde_json::json!({})) {
            v.push(format!("event {i}: {kind} block starts with input other than {{}}"));
        }
        if let Some(m) = &mut self.r.message {
            m.content.push(match kind.as_str() {
                "tool_use" => ContentBlock::ToolUse {
                    id: str_of(&cb, "id"),
                    name: str_of(&cb, "name"),
                    input: Value::Object(Default::default()),
                },
                "server_tool_use" => ContentBlock::ServerToolUse {
                    id: str_of(&cb, "id"),
                    name: str_of(&cb, "name"),
                    input: Value::Object(Default::default()),
                },
                "web_search_tool_result" => ContentBlock::WebSearchToolResult {
                    tool_use_id: str_of(&cb, "tool_use_id"),
                    content: cb.get("content").cloned().unwrap_or(Value::Null),
                },
                "thinking" => ContentBlock::Thinking { thinking: String::new(), signature: String::new() },
                _ => ContentBlock::Text { text: String::new() },
            });
        } else {
            v.push(format!("event {i}: content_block_start before message_start"));
        }
        self.open = Some(OpenBlock {
            index: index.unwrap_or(usize::MAX),
            kind,
            text: String::new(),
            signature: String::new(),
            json: String::new(),
        });
    }

    /// A delta of the open block, of a type that fits it: its piece kept.
    fn block_delta(&mut self, i: usize, ev: &SseEvent) {
        let v = &mut self.r.violations;
        let index = ev.data.get("index").and_then(Value::as_u64).map(|x| x as usize);
        let delta = ev.data.get("delta").cloned().unwrap_or_default();
        let dtype = delta.get("type").and_then(Value::as_str).unwrap_or_default();
        let Some(b) = self.open.as_mut().filter(|b| Some(b.index) == index) else {
            v.push(format!("event {i}: delta for block {index:?}, which is not open"));
            return;
        };
        match (b.kind.as_str(), dtype) {
            ("text", "text_delta") => b.text.push_str(&str_of(&delta, "text")),
            ("tool_use" | "server_tool_use", "input_json_delta") => b.json.push_str(&str_of(&delta, "partial_json")),
            ("thinking", "thinking_delta") => b.text.push_str(&str_of(&delta, "thinking")),
            ("thinking", "signature_delta") => b.signature.push_str(&str_of(&delta, "signature")),
            (k, d) => v.push(format!("event {i}: {d} inside a {k} block")),
        }
    }

    /// The open block stops: the message's block gets its pieces (a tool's input: the JSON pieces
    /// joined, an object).
    fn block_stop(&mut self, i: usize, ev: &SseEvent) {
        let v = &mut self.r.violations;
        let index = ev.data.get("index").and_then(Value::as_u64).map(|x| x as usize);
        let Some(b) = self.open.take().filter(|b| Some(b.index) == index) else {
            v.push(format!("event {i}: stop for block {index:?}, which is not open"));
            return;
        };
        let block = self.r.message.as_mut().and_then(|m| m.content.last_mut());
        match block {
            Some(ContentBlock::Text { text }) => *text = b.text,
            Some(ContentBlock::Thinking { thinking, signature }) => {
                *thinking = b.text;
                *signature = b.signature;
            }
            Some(ContentBlock::ToolUse { input, .. } | ContentBlock::ServerToolUse { input, .. }) => {
                let src = if b.json.is_empty() { "{}" } else { b.json.as_str() };
                match serde_json::from_str::<Value>(src) {
                    Ok(j) if j.is_object() => *input = j,
                    Ok(_) => v.push(format!("event {i}: tool_use input of block {} is not an object", b.index)),
                    Err(e) => {
                        v.push(format!("event {i}: input_json_delta pieces of block {} do not parse: {e}", b.index))
                    }
                }
            }
            Some(ContentBlock::WebSearchToolResult { .. }) | None => {}
        }
    }

    /// One `message_delta`, after the last block, with a stop reason: the message's end and usage.
    fn message_delta(&mut self, i: usize, ev: &SseEvent) {
        let v = &mut self.r.violations;
        if let Some(b) = &self.open {
            v.push(format!("event {i}: message_delta while block {} is open", b.index));
        }
        if self.saw_delta {
            v.push(format!("event {i}: a second message_delta"));
        }
        self.saw_delta = true;
        let d = ev.data.get("delta").cloned().unwrap_or_default();
        if let Some(m) = &mut self.r.message {
            m.stop_reason = d.get("stop_reason").cloned().and_then(|s| serde_json::from_value::<StopReason>(s).ok());
            m.stop_sequence = d.get("stop_sequence").and_then(Value::as_str).map(str::to_string);
            if let Some(n) = ev.data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                m.usage.output_tokens = n;
            }
        }
        if d.get("stop_reason").is_none_or(Value::is_null) {
            v.push(format!("event {i}: message_delta without stop_reason"));
        }
    }
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_split_across_feeds_and_comments() {
        let mut d = SseDecoder::default();
        assert!(d.feed(b": hi\r").unwrap_or_default().is_empty());
        assert!(d.feed(b"\nevent: ping\r\ndata: {\"type\":").unwrap_or_default().is_empty());
        let evs = d.feed(b"\"ping\"}\r\n\r\n").unwrap_or_default();
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0].data["type"], "ping");
        assert!(d.finish().is_ok());
    }

    #[test]
    fn cut_stream_is_an_error() {
        assert!(decode_all(b"event: ping\ndata: {}").is_err());
    }

    #[test]
    fn checker_finds_a_gap_in_block_indices() {
        let evs = decode_all(
            b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        )
        .unwrap_or_default();
        let r = check_stream(&evs);
        assert!(r.violations.iter().any(|v| v.contains("expected 0")), "{:?}", r.violations);
        assert!(r.violations.iter().any(|v| v.contains("without message_stop")));
    }
}
