//! A typed read view of the content blocks the stub recorded (requests' messages, responses' content),
//! for the transcript's renderer: each block read once into what it is, borrowing the record. A block of
//! a type the lab does not know (`server_tool_use`, `redacted_thinking`, a type a newer API adds) is kept
//! raw ([`Block::Other`]) and shown as its JSON; a block that is not what its type says (a `tool_use`
//! without an id, a `text` whose text is no string, content that is neither a string nor blocks) is an
//! error ([`Malformed`]) that the renderer reports with the record's place — never a golden line with
//! an empty or `?` field standing in for what was not there.
//!
//! The stub's strict validation refuses such requests before they are recorded as turns (a 400), so a
//! malformed block in a turn means the record itself is damaged, or the stub's validation has a hole.

use serde_json::Value;

/// A content block, read.
#[derive(Debug, Clone, PartialEq)]
pub enum Block<'v> {
    /// `text`.
    Text(&'v str),
    /// `thinking`.
    Thinking(&'v str),
    /// `tool_use`.
    ToolUse {
        /// Its id.
        id: &'v str,
        /// The tool.
        name: &'v str,
        /// Its input.
        input: &'v Value,
    },
    /// `tool_result`.
    ToolResult(ToolResult<'v>),
    /// A block of another type, as recorded.
    Other(&'v Value),
}

/// A `tool_result` block, read.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult<'v> {
    /// The call it answers.
    pub tool_use_id: &'v str,
    /// `is_error` (absent: false).
    pub is_error: bool,
    /// Its content.
    pub content: Content<'v>,
}

/// A tool_result's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Content<'v> {
    /// A string.
    Text(&'v str),
    /// Blocks.
    Parts(Vec<Part<'v>>),
    /// None (the API takes a result without content).
    Empty,
}

/// One block of a tool_result's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Part<'v> {
    /// `text`.
    Text(&'v str),
    /// `tool_reference` (ToolSearch's answer, TS-1): the tool's name.
    ToolReference(&'v str),
    /// An image, a document…: its type, and its source's media type and data where it has them.
    Media {
        /// `image`, `document`.
        kind: &'v str,
        /// `source.media_type`.
        media_type: Option<&'v str>,
        /// `source.data` (base64).
        data: Option<&'v str>,
    },
}

/// A block that is not what its type says: what is wrong with it (the caller says where it is).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(pub String);

fn string<'v>(v: &'v Value, key: &str, what: &str) -> Result<&'v str, Malformed> {
    match v.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(Malformed(format!("{what}'s {key} is {}, not a string", kind_of(other)))),
        None => Err(Malformed(format!("{what} without {key}"))),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl<'v> Block<'v> {
    /// Reads a content block.
    pub fn read(v: &'v Value) -> Result<Block<'v>, Malformed> {
        let ty = string(v, "type", "a content block")?;
        Ok(match ty {
            "text" => Block::Text(string(v, "text", "a text block")?),
            "thinking" => Block::Thinking(string(v, "thinking", "a thinking block")?),
            "tool_use" => Block::ToolUse {
                id: string(v, "id", "a tool_use block")?,
                name: string(v, "name", "a tool_use block")?,
                input: v.get("input").ok_or_else(|| Malformed("a tool_use block without input".into()))?,
            },
            "tool_result" => Block::ToolResult(ToolResult::read(v)?),
            _ => Block::Other(v),
        })
    }
}

impl<'v> ToolResult<'v> {
    /// Reads a `tool_result` block.
    pub fn read(v: &'v Value) -> Result<ToolResult<'v>, Malformed> {
        let tool_use_id = string(v, "tool_use_id", "a tool_result block")?;
        let is_error = match v.get("is_error") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(Malformed(format!("a tool_result block's is_error is {}, not a boolean", kind_of(other))))
            }
        };
        let content = match v.get("content") {
            None | Some(Value::Null) => Content::Empty,
            Some(Value::String(s)) => Content::Text(s),
            Some(Value::Array(parts)) => Content::Parts(parts.iter().map(Part::read).collect::<Result<_, _>>()?),
            Some(other) => {
                return Err(Malformed(format!(
                    "a tool_result block's content is {}, neither a string nor blocks",
                    kind_of(other)
                )))
            }
        };
        Ok(ToolResult { tool_use_id, is_error, content })
    }
}

impl<'v> Part<'v> {
    /// Reads one block of a tool_result's content.
    pub fn read(v: &'v Value) -> Result<Part<'v>, Malformed> {
        let kind = string(v, "type", "a block of a tool_result's content")?;
        Ok(match kind {
            "text" => Part::Text(string(v, "text", "a text block of a tool_result")?),
            "tool_reference" => Part::ToolReference(string(v, "tool_name", "a tool_reference block")?),
            _ => Part::Media {
                kind,
                media_type: v.pointer("/source/media_type").and_then(Value::as_str),
                data: v.pointer("/source/data").and_then(Value::as_str),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_read_into_what_they_are_and_unknown_ones_stay_raw() {
        let v = json!({"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}});
        assert_eq!(Block::read(&v), Ok(Block::ToolUse { id: "t1", name: "Read", input: &v["input"] }));
        let v = json!({"type": "tool_result", "tool_use_id": "t1", "is_error": true, "content": [
            {"type": "text", "text": "one"}, {"type": "tool_reference", "tool_name": "Grep"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]});
        let Ok(Block::ToolResult(r)) = Block::read(&v) else { panic!("{v}") };
        assert!(r.is_error && r.tool_use_id == "t1");
        let media = Part::Media { kind: "image", media_type: Some("image/png"), data: Some("AAAA") };
        assert_eq!(r.content, Content::Parts(vec![Part::Text("one"), Part::ToolReference("Grep"), media]));
        let v = json!({"type": "tool_result", "tool_use_id": "t2"});
        assert_eq!(
            Block::read(&v).map(|b| matches!(b, Block::ToolResult(ToolResult { content: Content::Empty, .. }))),
            Ok(true)
        );
        let v = json!({"type": "redacted_thinking", "data": "x"});
        assert_eq!(Block::read(&v), Ok(Block::Other(&v)));
    }

    #[test]
    fn a_block_that_is_not_what_its_type_says_is_an_error_saying_what() {
        let bad = |v: Value| Block::read(&v).map(|_| ()).unwrap_err().0;
        assert_eq!(bad(json!({"text": "x"})), "a content block without type");
        assert_eq!(bad(json!({"type": "tool_use", "name": "Read", "input": {}})), "a tool_use block without id");
        assert_eq!(bad(json!({"type": "tool_use", "id": "t", "name": "Read"})), "a tool_use block without input");
        assert_eq!(bad(json!({"type": "text", "text": 3})), "a text block's text is a number, not a string");
        assert_eq!(
            bad(json!({"type": "tool_result", "tool_use_id": "t", "content": {"a": 1}})),
            "a tool_result block's content is an object, neither a string nor blocks"
        );
        assert_eq!(
            bad(json!({"type": "tool_result", "tool_use_id": "t", "is_error": "yes"})),
            "a tool_result block's is_error is a string, not a boolean"
        );
        assert_eq!(
            bad(json!({"type": "tool_result", "tool_use_id": "t", "content": [{"text": "x"}]})),
            "a block of a tool_result's content without type"
        );
    }
}
