//! The Messages API as the built-in subject's client reads it: the assistant message a response carries
//! and its content blocks. These are the client's own types — the subject must not judge itself with the
//! oracle's (stub-messages') code — written from the API's documented shapes: a block serialises as the
//! API sends it (`{"type": "tool_use", "id", "name", "input"}`), so the assistant turn goes back into the
//! conversation as it came.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// A tool call the client answers with one `tool_result`.
    ToolUse {
        /// `toolu_…` id.
        id: String,
        /// Tool name.
        name: String,
        /// Tool input (a JSON object).
        input: Value,
    },
    /// A server tool call the API ran itself (`web_search`): the client answers nothing.
    ServerToolUse {
        /// `srvtoolu_…` id.
        id: String,
        /// Server tool name.
        name: String,
        /// Its input.
        input: Value,
    },
    /// The result of a `web_search` server tool call: `web_search_result` blocks, or an error object.
    WebSearchToolResult {
        /// The `srvtoolu_…` id it answers.
        tool_use_id: String,
        /// The results (or the error object).
        content: Value,
    },
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
    /// The server paused a long turn (server tools).
    PauseTurn,
    /// The model refused.
    Refusal,
}

/// A complete assistant message, reassembled from a stream.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Message {
    /// `msg_…` id.
    pub id: String,
    /// The model that answered.
    pub model: String,
    /// The blocks in order.
    pub content: Vec<ContentBlock>,
    /// Why it stopped.
    pub stop_reason: Option<StopReason>,
}

impl Message {
    /// The first text block (what a side request answers).
    pub fn text(&self) -> Option<&str> {
        self.content.iter().find_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
    }
}
