//! Fixture file contents as a probe writes them (`files."f.txt" = "text"`, `{ repeat, bytes }`,
//! `{ base64 }`), for the sandbox's fixture and the web service's pages alike.

use base64::Engine;
use serde::Deserialize;

/// An inline fixture file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum FileSpec {
    /// Literal text.
    Text(String),
    /// `repeat` cycled until `bytes` bytes.
    Generated {
        /// The pattern.
        repeat: String,
        /// Exact size.
        bytes: u64,
    },
    /// Binary content.
    Base64 {
        /// Standard base64.
        base64: String,
    },
}

/// The bytes of an inline file.
pub fn file_bytes(spec: &FileSpec) -> Result<Vec<u8>, String> {
    Ok(match spec {
        FileSpec::Text(t) => t.as_bytes().to_vec(),
        FileSpec::Generated { repeat, bytes } => {
            if repeat.is_empty() {
                return Err("generated file: repeat is empty".into());
            }
            repeat.as_bytes().iter().copied().cycle().take(*bytes as usize).collect()
        }
        FileSpec::Base64 { base64 } => {
            base64::engine::general_purpose::STANDARD.decode(base64.trim()).map_err(|e| format!("base64 file: {e}"))?
        }
    })
}
