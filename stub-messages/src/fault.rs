//! Wire faults a scripted turn can inject before it is served: an HTTP error status with `retry-after`,
//! an SSE `error` event in the middle of a stream, a stream cut after N events. Each fault in a turn's
//! `fault` list spoils one attempt; the turn itself is served to the first attempt past the list, so a
//! client that retries sees exactly the scripted failures and then the turn. Slow chunks are not a
//! failed attempt: they are the turn's `delay_ms`.
//!
//! ```toml
//! [[turn]]
//! text = "done"
//! fault = [{ kind = "http", status = 529, retry_after = 0 }, { kind = "sse_error", after_events = 3 }]
//! ```

use serde::{Deserialize, Serialize};

/// One spoiled attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// Answer with an HTTP error status and an Anthropic error body.
    Http {
        /// 429, 500, 529 (any 4xx/5xx is accepted).
        status: u16,
        /// Seconds for the `retry-after` header; no header when absent.
        #[serde(default)]
        retry_after: Option<u64>,
    },
    /// Start the stream, send `after_events` events of the turn, then an `error` event.
    SseError {
        /// Events of the real turn sent before the error.
        after_events: usize,
        /// The error type (default `overloaded_error`).
        #[serde(default = "overloaded")]
        error_type: String,
    },
    /// Start the stream, send `after_events` events, then abort the connection mid-body.
    Cut {
        /// Events sent before the cut.
        after_events: usize,
    },
}

fn overloaded() -> String {
    "overloaded_error".into()
}

impl Fault {
    /// Checks what serde cannot: the status is an error status.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Fault::Http { status, .. } if !(400..=599).contains(status) => {
                Err(format!("fault status {status} is not an HTTP error status (400..=599)"))
            }
            _ => Ok(()),
        }
    }
}

/// The error type and message the real API sends with an HTTP status.
pub fn error_for_status(status: u16) -> (&'static str, &'static str) {
    match status {
        400 => ("invalid_request_error", "Invalid request"),
        401 => ("authentication_error", "invalid x-api-key"),
        403 => ("permission_error", "Your API key does not have permission to use the specified resource."),
        404 => ("not_found_error", "Not found"),
        408 => ("timeout_error", "Request timed out"),
        413 => ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
        429 => ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
        529 => ("overloaded_error", "Overloaded"),
        _ => ("api_error", "Internal server error"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_from_toml_and_refuses_a_success_status() {
        let f: Fault = toml::from_str("kind = \"http\"\nstatus = 200").unwrap_or(Fault::Cut { after_events: 0 });
        assert_eq!(f, Fault::Http { status: 200, retry_after: None });
        assert!(f.validate().is_err());
        assert_eq!(error_for_status(529).0, "overloaded_error");
    }
}
