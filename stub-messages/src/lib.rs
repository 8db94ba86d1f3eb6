//! # stub-messages
//!
//! A stand-in for the Anthropic Messages API that plays the model from a [`Script`] of assistant turns
//! and records every request and response that crosses the wire. Real clients — the official SDKs, an
//! agent binary such as Claude Code, probelab's own built-in subject — are pointed at it with a base URL
//! and cannot tell it from the real API for the endpoints they use.
//!
//! - [`wire`]: response types and SSE event builders (`ev_message_start`, `ev_text_delta`, …);
//! - [`script`]: turns, named conversations, routing of requests;
//! - [`server`]: the axum app ([`app`], [`serve`]);
//! - [`http`]: the connection loop under it: timeouts, bounded stop, refusals of the HTTP layer recorded;
//! - [`record`]: the exchange log, with secrets redacted;
//! - [`fault`]: injected wire faults;
//! - [`sse`]: SSE decoding, reassembly and the conformance checker;
//! - [`validate`]: the request rules of the real API (`[stub] strict`).
//!
//! ```
//! use stub_messages::{Script, Stub, Recorder};
//! let script = Script::from_toml("demo.toml", "[[turn]]\ntext = \"hello\"\n").unwrap();
//! let stub = Stub::new(script, Recorder::default());
//! assert_eq!(stub.progress()[0], ("main".to_string(), 0, 1));
//! ```

pub mod fault;
pub mod http;
mod play;
pub mod record;
mod reuse;
pub mod script;
pub mod server;
pub mod sse;
pub mod stored;
pub mod validate;
pub mod wire;

/// A mutex's guard, poisoned or not: a thread that panicked while holding one of the stub's locks (a
/// recorder, the play's cursors, a connection's tap) leaves its data as far as it got, and the stub goes
/// on with it — a poisoned lock read as empty lost every exchange recorded before it (the record is
/// the lab's evidence) and served no further turn.
pub(crate) fn locked<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub use record::{read_record, Exchange, ExchangeKind, ReadExchange, RecordError, RecordProblem, Recorder, Requests};
pub use script::{Script, Turn};
pub use server::{app, serve, serve_router, Running, Stub};
pub use stored::RequestBase;
