//! What a tool is: the [`Tool`] trait, the two error channels ([`ToolError`]), what a successful call
//! returns ([`ToolOutput`]), what permission rules match a call against ([`PermissionSubject`], defined
//! with the rules in [`crate::permissions`]), and [`parse_args`], the one mapping of a call's JSON input
//! onto a tool's serde `Args`.

use crate::context::ToolContext;
pub use crate::permissions::PermissionSubject;
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Default `maxResultSizeChars` of a tool: over it the result is persisted to a file and the model gets
/// the path and a preview (PIPE-5: "most others 100,000").
pub const DEFAULT_MAX_RESULT_SIZE_CHARS: usize = 100_000;

/// The two error channels of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The input was refused before anything ran (validation of a file's state, of the parameters):
    /// becomes an `is_error` result wrapped in `<tool_use_error>…</tool_use_error>`, like the reference.
    #[error("{0}")]
    Validation(String),
    /// The tool ran and failed: an `is_error` result with the text as is (not wrapped).
    #[error("{0}")]
    Runtime(String),
}

/// A call's input as the tool's serde `Args`; serde's message as a [`ToolError::Validation`] when it
/// does not fit. The pipeline has checked the input against the tool's schema before (PIPE-1), so what
/// gets here is what that schema subset does not say (a negative number for an unsigned field, an item
/// of the wrong type inside an array, …).
pub fn parse_args<T: DeserializeOwned>(input: Value) -> Result<T, ToolError> {
    parse_args_worded(input, "")
}

/// [`parse_args`] for a tool whose reference puts its own words before the message: `prefix` comes
/// first (the Task* family's `InputValidationError: `, LSP's `Invalid input: `). The one mapping of
/// serde's errors onto [`ToolError`].
pub fn parse_args_worded<T: DeserializeOwned>(input: Value, prefix: &str) -> Result<T, ToolError> {
    serde_json::from_value(input).map_err(|e| ToolError::Validation(format!("{prefix}{e}")))
}

/// What a successful call returns: text, or content blocks (an image, a PDF document).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// A text result.
    Text(String),
    /// Content blocks (`image`, `document`, `text`).
    Blocks(Vec<Value>),
    /// A text result plus the structured record the reference keeps beside it (its `toolUseResult`):
    /// the text goes to the model, the record to the session log (`<session dir>/<session id>.jsonl`).
    Data {
        /// What the model gets.
        text: String,
        /// The structured record.
        data: Value,
    },
}

/// A tool of the runtime.
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &'static str;
    /// The description sent with the schema. A function of the tool alone (no session state: the
    /// registry makes it once per pool; what changes with the session is visibility and shaping).
    fn description(&self) -> String;
    /// JSON Schema of the input (draft-07 object); like the description, the tool's alone.
    fn input_schema(&self) -> Value;
    /// Read-only for this input (PIPE-4; default false).
    fn is_read_only(&self, _input: &Value) -> bool {
        false
    }
    /// May run in parallel with other concurrency-safe calls of the same turn (PIPE-4; default false).
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }
    /// Destroys data for this input (PIPE-4; default false).
    fn is_destructive(&self, _input: &Value) -> bool {
        false
    }
    /// Whether the tool is left out of `tools[]` until ToolSearch loads it, when tool search is on
    /// (TS-1): `Some` where the tool decides, `None` (the default) where the session's tool-search
    /// policy decides by name.
    fn defer_loading(&self) -> Option<bool> {
        None
    }
    /// Shown to the model in the next request (default true): the plan-mode pair swaps with the mode
    /// (PLAN-1), LSP waits for a configured server (LSP-3).
    fn is_visible(&self, _ctx: &ToolContext) -> bool {
        true
    }
    /// Callable now (default true); a call to a tool that is not is answered like a call to a tool the
    /// session does not have (LSP before its server was offered: LSP-3).
    fn is_available(&self, _ctx: &ToolContext) -> bool {
        true
    }
    /// The pipeline checks the input against [`Tool::input_schema`] before the call (PIPE-1; default
    /// true). MCP tools leave that to their server, as the reference does (MCP-1).
    fn validates_input(&self) -> bool {
        true
    }
    /// Result budget (PIPE-5); `None` = unlimited (the tool limits itself, like Read).
    fn max_result_size_chars(&self) -> Option<usize> {
        Some(DEFAULT_MAX_RESULT_SIZE_CHARS)
    }
    /// The name (without `.txt`) a result over the budget is persisted under; `None`: the tool_use id.
    fn persisted_name(&self, _ctx: &ToolContext) -> Option<String> {
        None
    }
    /// What a persisted result's file holds (PIPE-5) for the call `id` whose shown text is `text`:
    /// default, the text itself (the Bash tool: its output as the command wrote it, trailing newlines
    /// kept, as the reference writes the file).
    fn persisted_text(&self, _ctx: &ToolContext, _id: &str, text: &str) -> String {
        text.to_string()
    }
    /// The reference's input checks that come before its permission check (its `validateInput`), in its
    /// order: their refusal (a message the pipeline wraps as an input error) is what a call gets even
    /// when a permission rule would deny it too. Default: none.
    fn check_before_permissions(&self, _input: &Value, _ctx: &ToolContext) -> Option<String> {
        None
    }
    /// What permission rules of this tool match against.
    fn permission_subject(&self, _input: &Value, _ctx: &ToolContext) -> PermissionSubject {
        PermissionSubject::None
    }
    /// Runs the call; the input has passed schema validation, hooks and permissions.
    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}
