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

/// The largest generated fixture file (1 GiB): enough for any read or output budget of the claims
/// (the largest is Read's 256 KiB, READ-2), small enough that a typo in `bytes` is an error, not an abort
/// of the process on allocation.
pub const MAX_GENERATED_BYTES: u64 = 1 << 30;

/// The bytes of an inline file.
pub fn file_bytes(spec: &FileSpec) -> Result<Vec<u8>, String> {
    Ok(match spec {
        FileSpec::Text(t) => t.as_bytes().to_vec(),
        FileSpec::Generated { repeat, bytes } => {
            if repeat.is_empty() {
                return Err("generated file: repeat is empty".into());
            }
            if *bytes > MAX_GENERATED_BYTES {
                return Err(format!(
                    "generated file: bytes = {bytes} is more than the {MAX_GENERATED_BYTES} a fixture file may have"
                ));
            }
            // doubling copies: a 64 MiB fixture in a few memcpys, not 64 Mi byte pushes
            let n = *bytes as usize;
            let mut v = Vec::with_capacity(n);
            v.extend_from_slice(&repeat.as_bytes()[..repeat.len().min(n)]);
            while v.len() < n {
                let k = v.len().min(n - v.len());
                v.extend_from_within(..k);
            }
            v
        }
        FileSpec::Base64 { base64 } => {
            base64::engine::general_purpose::STANDARD.decode(base64.trim()).map_err(|e| format!("base64 file: {e}"))?
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_file_is_its_pattern_cycled_to_the_exact_size() {
        let spec = |r: &str, n: u64| file_bytes(&FileSpec::Generated { repeat: r.into(), bytes: n });
        assert_eq!(spec("abc", 7), Ok(b"abcabca".to_vec()));
        assert_eq!(spec("abc", 2), Ok(b"ab".to_vec()));
        assert_eq!(spec("abc", 0), Ok(Vec::new()));
        let big = spec("0123456789\n", 1_000_003).unwrap_or_default();
        assert_eq!(big.len(), 1_000_003);
        assert!(big.iter().zip(b"0123456789\n".iter().cycle()).all(|(a, b)| a == b));
        let huge = spec("x", 100 << 30).err().unwrap_or_default();
        assert!(huge.contains("more than the 1073741824"), "{huge}");
    }
}
