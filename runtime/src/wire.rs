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
    /// The token counts the response reported (`message_start`'s, updated by `message_delta`'s).
    pub usage: Usage,
    /// The token counts of `message_start` alone (the reference's progress tracker counts these: it
    /// sees each block's assistant message before the `message_delta`).
    pub start_usage: Usage,
}

/// A response's token counts, as the API reports them (absent fields are 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens not read from or written to the cache.
    #[serde(default)]
    pub input_tokens: u64,
    /// Generated tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens written to the cache.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    /// Prompt tokens read from the cache.
    #[serde(default)]
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// The prompt's tokens: uncached, cache writes, cache reads.
    pub fn prompt(&self) -> u64 {
        self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
    }

    /// Every token the response counted: the prompt and the output.
    pub fn total(&self) -> u64 {
        self.prompt() + self.output_tokens
    }

    /// Takes the fields `v` (a `usage` object) carries; the others stay.
    pub fn update(&mut self, v: &Value) {
        let set = |key: &str, field: &mut u64| {
            if let Some(n) = v.get(key).and_then(Value::as_u64) {
                *field = n;
            }
        };
        set("input_tokens", &mut self.input_tokens);
        set("output_tokens", &mut self.output_tokens);
        set("cache_creation_input_tokens", &mut self.cache_creation_input_tokens);
        set("cache_read_input_tokens", &mut self.cache_read_input_tokens);
    }
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
