//! What an exploration finds: a difference, of one of three kinds ([`super`]'s doc). Apart from the
//! exploration itself so that what judges a finding ([`super::seen`]) needs nothing else of it.

use serde::Serialize;
use serde_json::Value;

/// The kind of a difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A tool result (text or `is_error`).
    Result,
    /// A file of the working directory after the session.
    File,
    /// The first request (tools offered, texts of its first user message).
    Request,
}

/// One difference found.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Finding {
    /// Its kind.
    pub kind: Kind,
    /// The session (0-based).
    pub session: usize,
    /// The call (1-based), for a result.
    pub call: Option<usize>,
    /// The tool, or the file's path, or the request's part.
    pub what: String,
    /// The generator's input class.
    pub class: String,
    /// The call's input.
    pub input: Option<Value>,
    /// What the older release gave (for noise: the first run of the side that varied).
    pub left: String,
    /// What the newer release gave (for noise: the second run).
    pub right: String,
    /// For noise: the side whose two runs differed.
    pub side: Option<String>,
}
