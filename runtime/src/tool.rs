//! What a tool is: the [`TypedTool`] trait a tool module implements, the object-safe [`Tool`] trait the
//! pool stores and the pipeline calls (every [`TypedTool`] is one, through a blanket adapter), the two
//! error channels ([`ToolError`]), what a successful call returns ([`ToolOutput`]), what permission rules
//! match a call against ([`PermissionSubject`], defined with the rules in [`crate::permissions`]), and
//! [`parse_args`], the one mapping of a call's JSON input onto a tool's serde `Args`.
//!
//! A tool module holds its behaviour only: its name, flags and argument prefix are associated constants
//! of [`TypedTool`], its arguments a serde struct ([`TypedTool::Args`]) the adapter deserialises from
//! the input the pipeline has validated (its schema, then its hooks), and its call an `async fn` of those
//! arguments. The hooks that run before the call (the flags per input, the permission subject, the
//! checks before permissions) see the input as sent, as the permission rules match it; only the call
//! gets the typed arguments, so a refusal before the call reads exactly as it did before the arguments
//! were typed. The validation texts the model gets come from the schema step
//! ([`crate::schema::validate`], the reference's `InputValidationError`s), which runs first; serde's
//! message (what the schema subset does not say: a negative number for an unsigned field) is the one
//! [`parse_args_worded`] makes, with the tool's [`TypedTool::ARGS_ERROR_PREFIX`].
//!
//! ```
//! use probelab_runtime::context::ToolContext;
//! use probelab_runtime::tool::{Tool, ToolError, ToolOutput, TypedTool};
//! use serde_json::{json, Value};
//!
//! /// Says its text back.
//! struct Echo;
//!
//! #[derive(serde::Deserialize)]
//! struct Args {
//!     text: String,
//!     times: u8,
//! }
//!
//! impl TypedTool for Echo {
//!     const NAME: &'static str = "Echo";
//!     const DESCRIPTION: &'static str = "Says the text back.";
//!     const READ_ONLY: bool = true;
//!     const CONCURRENCY_SAFE: bool = true;
//!     type Args = Args;
//!
//!     fn input_schema(&self) -> Value {
//!         json!({"type": "object", "properties": {"text": {"type": "string"}, "times": {"type": "integer"}}})
//!     }
//!
//!     async fn call(&self, args: Args, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
//!         Ok(ToolOutput::Text(args.text.repeat(usize::from(args.times))))
//!     }
//! }
//!
//! // the pool stores it as a `dyn Tool`; the adapter deserialises the call's input into `Args`
//! let tool: std::sync::Arc<dyn Tool> = std::sync::Arc::new(Echo);
//! assert!(tool.name() == "Echo" && tool.is_read_only(&json!({})));
//! let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
//! let ctx = ToolContext::for_sandbox(dir.path(), std::sync::Arc::new(probelab_runtime::model::EstimateTokens));
//! let ctx = ctx.unwrap_or_else(|e| panic!("{e}"));
//! let rt = tokio::runtime::Builder::new_current_thread().build().unwrap_or_else(|e| panic!("{e}"));
//! let said = rt.block_on(tool.call(json!({"text": "hi", "times": 2}), &ctx));
//! assert_eq!(said, Ok(ToolOutput::Text("hihi".into())));
//! // what the schema let through and the struct does not take is serde's input error
//! let refused = rt.block_on(tool.call(json!({"text": "hi", "times": -1}), &ctx));
//! assert!(matches!(refused, Err(ToolError::Validation(m)) if m.starts_with("invalid value: integer `-1`")));
//! ```
//!
//! A built-in tool is then one line in the composition root ([`crate::builtin`]), `Arc::new(Echo)`.

use crate::context::ToolContext;
use crate::permissions::Decision;
pub use crate::permissions::PermissionSubject;
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;

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

/// The hooks [`Tool`] and [`TypedTool`] share, each with its default: stated once, expanded in both
/// traits (the adapter forwards them).
macro_rules! shared_hooks {
    () => {
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
        /// The rules' decision for `subject` as this tool takes it (default: as it is). Grep: a directory
        /// whose contents a `dir/**` deny rule covers is denied as a search root too.
        fn refine_decision(&self, _subject: &PermissionSubject, decision: Decision, _ctx: &ToolContext) -> Decision {
            decision
        }
        /// The refusal of a call the deny rule `rule` denied, when the tool words it its own way (the file
        /// tools, as the reference does); `None` (the default): the pipeline's text, which names the command
        /// of a [`PermissionSubject::Command`] and else the rule. A [`ToolError::Validation`] is wrapped as
        /// an input error, a [`ToolError::Runtime`] given as is.
        fn denied(&self, _subject: &PermissionSubject, _rule: &str, _ctx: &ToolContext) -> Option<ToolError> {
            None
        }
    };
}

/// A tool as the pool stores it and the pipeline calls it (object-safe, the input as JSON). A tool module
/// implements [`TypedTool`] and gets this through the adapter; a tool implements it itself only when its
/// name is not a constant (an MCP server's tool, a tool a release offers that the runtime does not
/// perform).
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &'static str;
    /// The description sent with the schema. A function of the tool alone (no session state: the
    /// registry makes it once per pool; what changes with the session is visibility and shaping).
    fn description(&self) -> String;
    /// JSON Schema of the input (draft-07 object); like the description, the tool's alone.
    fn input_schema(&self) -> Value;
    /// The schema the pipeline checks a call's input against in a session of `profile` (PIPE-1):
    /// [`Tool::input_schema`] unless the tool's releases gained a property from a switch on (WebFetch's
    /// `offset`, 2.1.290), which the runtime's own schema — the one the oldest profile offers — lacks.
    fn validation_schema(&self, _profile: crate::profile::Profile) -> Value {
        self.input_schema()
    }
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
    /// The pipeline checks the input against [`Tool::input_schema`] before the call (PIPE-1; default
    /// true). MCP tools leave that to their server, as the reference does (MCP-1).
    fn validates_input(&self) -> bool {
        true
    }
    /// Result budget (PIPE-5); `None` = unlimited (the tool limits itself, like Read).
    fn max_result_size_chars(&self) -> Option<usize> {
        Some(DEFAULT_MAX_RESULT_SIZE_CHARS)
    }
    shared_hooks!();
    /// Runs the call; the input has passed schema validation, hooks and permissions.
    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// A tool of the runtime as a tool module writes it: name and flags as constants, the arguments as the
/// tool's own serde struct, the call an `async fn` of them (the module docs show one). The pipeline
/// stores and calls it as a [`Tool`] (the blanket adapter below: the input, validated, deserialised into
/// [`TypedTool::Args`] just before the call); every method with a default is the [`Tool`] method of the
/// same name.
pub trait TypedTool: Send + Sync + 'static {
    /// The name the model calls it by.
    const NAME: &'static str;
    /// The description sent with the schema, when it is one text; a tool whose description is made
    /// (from the release, a constant of another module) overrides [`TypedTool::description`] instead.
    const DESCRIPTION: &'static str = "";
    /// Read-only for every input (PIPE-4); a tool for which it depends on the input overrides
    /// [`TypedTool::is_read_only`].
    const READ_ONLY: bool = false;
    /// May run in parallel with other concurrency-safe calls of the same turn, for every input (PIPE-4).
    const CONCURRENCY_SAFE: bool = false;
    /// Destroys data, for every input (PIPE-4).
    const DESTRUCTIVE: bool = false;
    /// Result budget (PIPE-5); `None` = unlimited (the tool limits itself, like Read).
    const MAX_RESULT_SIZE_CHARS: Option<usize> = Some(DEFAULT_MAX_RESULT_SIZE_CHARS);
    /// Left out of `tools[]` until ToolSearch loads it ([`Tool::defer_loading`]); `None`: the session's
    /// policy decides by name.
    const DEFER_LOADING: Option<bool> = None;
    /// The reference's words before serde's message when the input does not fit [`TypedTool::Args`]
    /// ([`parse_args_worded`]: the Task* family's `InputValidationError: `, LSP's `Invalid input: `).
    const ARGS_ERROR_PREFIX: &'static str = "";
    /// What the call gets: the input, deserialised by the adapter after the pipeline's checks
    /// (`serde::de::IgnoredAny` for a tool that takes none, `serde_json::Value` for one that reads the
    /// input itself).
    type Args: DeserializeOwned + Send;

    /// [`Tool::description`]; default [`TypedTool::DESCRIPTION`].
    fn description(&self) -> String {
        Self::DESCRIPTION.to_string()
    }
    /// [`Tool::input_schema`].
    fn input_schema(&self) -> Value;
    /// [`Tool::validation_schema`]; default [`TypedTool::input_schema`].
    fn validation_schema(&self, _profile: crate::profile::Profile) -> Value {
        TypedTool::input_schema(self)
    }
    /// [`Tool::is_read_only`]; default [`TypedTool::READ_ONLY`].
    fn is_read_only(&self, _input: &Value) -> bool {
        Self::READ_ONLY
    }
    /// [`Tool::is_concurrency_safe`]; default [`TypedTool::CONCURRENCY_SAFE`].
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        Self::CONCURRENCY_SAFE
    }
    /// [`Tool::is_destructive`]; default [`TypedTool::DESTRUCTIVE`].
    fn is_destructive(&self, _input: &Value) -> bool {
        Self::DESTRUCTIVE
    }
    shared_hooks!();
    /// Runs the call with its arguments; the input has passed schema validation, hooks and permissions.
    fn call(&self, args: Self::Args, ctx: &ToolContext) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

/// The adapter: a [`TypedTool`] as the object-safe [`Tool`] the pool stores. The one place a call's
/// input becomes a tool's arguments ([`parse_args_worded`] with [`TypedTool::ARGS_ERROR_PREFIX`]).
impl<T: TypedTool> Tool for T {
    fn name(&self) -> &'static str {
        T::NAME
    }
    fn description(&self) -> String {
        TypedTool::description(self)
    }
    fn input_schema(&self) -> Value {
        TypedTool::input_schema(self)
    }
    fn validation_schema(&self, profile: crate::profile::Profile) -> Value {
        TypedTool::validation_schema(self, profile)
    }
    fn is_read_only(&self, input: &Value) -> bool {
        TypedTool::is_read_only(self, input)
    }
    fn is_concurrency_safe(&self, input: &Value) -> bool {
        TypedTool::is_concurrency_safe(self, input)
    }
    fn is_destructive(&self, input: &Value) -> bool {
        TypedTool::is_destructive(self, input)
    }
    fn defer_loading(&self) -> Option<bool> {
        T::DEFER_LOADING
    }
    fn is_visible(&self, ctx: &ToolContext) -> bool {
        TypedTool::is_visible(self, ctx)
    }
    fn is_available(&self, ctx: &ToolContext) -> bool {
        TypedTool::is_available(self, ctx)
    }
    fn max_result_size_chars(&self) -> Option<usize> {
        T::MAX_RESULT_SIZE_CHARS
    }
    fn persisted_name(&self, ctx: &ToolContext) -> Option<String> {
        TypedTool::persisted_name(self, ctx)
    }
    fn persisted_text(&self, ctx: &ToolContext, id: &str, text: &str) -> String {
        TypedTool::persisted_text(self, ctx, id, text)
    }
    fn check_before_permissions(&self, input: &Value, ctx: &ToolContext) -> Option<String> {
        TypedTool::check_before_permissions(self, input, ctx)
    }
    fn permission_subject(&self, input: &Value, ctx: &ToolContext) -> PermissionSubject {
        TypedTool::permission_subject(self, input, ctx)
    }
    fn refine_decision(&self, subject: &PermissionSubject, decision: Decision, ctx: &ToolContext) -> Decision {
        TypedTool::refine_decision(self, subject, decision, ctx)
    }
    fn denied(&self, subject: &PermissionSubject, rule: &str, ctx: &ToolContext) -> Option<ToolError> {
        TypedTool::denied(self, subject, rule, ctx)
    }
    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args = parse_args_worded::<T::Args>(input, T::ARGS_ERROR_PREFIX)?;
            TypedTool::call(self, args, ctx).await
        })
    }
}
