//! How tools reach the session's model without knowing the agent loop: [`Model`], the Messages API of
//! the session (side requests: WebFetch's prompt, WebSearch's server tool; the client of a sub-agent), and
//! [`TokenCounter`], its `count_tokens` (Read's token ceiling). [`crate::agent::Client`] is the one real
//! implementation; tests use [`EstimateTokens`].

use crate::wire::Message;
use futures_util::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;

/// Why the session's model did not answer: its Messages API failed (the text is the client's, as it ends
/// a loop in [`crate::agent::LoopEnd::Error`] and as a tool that asked shows it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// A request that failed for good at once (refused, a broken stream, the transport): why.
    #[error("{0}")]
    Failed(String),
    /// A request still failing after every retry: why the last attempt failed.
    #[error("{why} (gave up after {retries} retries)")]
    GaveUp {
        /// The last attempt's failure.
        why: String,
        /// Retries made.
        retries: u32,
    },
    /// `count_tokens` answered an error status.
    #[error("count_tokens answered {status}: {body}")]
    CountStatus {
        /// The HTTP status as shown (`400 Bad Request`).
        status: String,
        /// The answer's body.
        body: Value,
    },
    /// `count_tokens` answered without `input_tokens`.
    #[error("count_tokens answered no input_tokens: {0}")]
    NoInputTokens(Value),
}

/// Counts tokens the way the subject's API does: the built-in subject asks the stub's
/// `/v1/messages/count_tokens`, like the reference binary for large reads.
pub trait TokenCounter: Send + Sync {
    /// Input tokens of a user message holding `text`.
    fn count<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<u64, ModelError>>;
}

/// A counter that estimates 4 bytes per token, for unit tests.
#[derive(Debug, Default)]
pub struct EstimateTokens;

impl TokenCounter for EstimateTokens {
    fn count<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<u64, ModelError>> {
        Box::pin(async move { Ok((text.len() as u64).div_ceil(4)) })
    }
}

/// The session's Messages API, asking for one model.
pub trait Model: TokenCounter {
    /// The model id requests name.
    fn model(&self) -> &str;
    /// The same API asking for another model (a sub-agent's `model`).
    fn with_model(&self, model: &str) -> Arc<dyn Model>;
    /// Sends a streaming request (retrying what the API says is retryable) and returns the message.
    fn create<'a>(&'a self, body: &'a Value) -> BoxFuture<'a, Result<Message, ModelError>>;
    /// [`Model::create`] of a body already serialised (a JSON object): the agent loop keeps the bytes of
    /// the messages it sent and serialises only the new ones ([`crate::agent::run_loop_with`]), so a
    /// request's cost does not grow with the conversation it carries. The API sees the same bytes as
    /// [`Model::create`] of their parse would send; by default they are parsed and handed to it.
    fn create_json(&self, body: bytes::Bytes) -> BoxFuture<'_, Result<Message, ModelError>> {
        Box::pin(async move {
            let v: Value =
                serde_json::from_slice(&body).map_err(|e| ModelError::Failed(format!("the body is not JSON: {e}")))?;
            self.create(&v).await
        })
    }
}
