//! Fixture file contents as a probe writes them (`files."f.txt" = "text"`, `{ text }`, `{ repeat, bytes }`,
//! `{ base64 }`), for the sandbox's fixture and the web service's pages alike; a fixture file's table
//! form may set its modification time (`mtime`, [`Mtime`]; ignored for web pages).

use base64::Engine;
use serde::Deserialize;

/// An inline fixture file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum FileSpec {
    /// Literal text.
    Text(String),
    /// Literal text, as a table (to give it an `mtime`).
    Inline {
        /// The text.
        text: String,
        /// Its modification time.
        #[serde(default)]
        mtime: Option<Mtime>,
    },
    /// `repeat` cycled until `bytes` bytes.
    Generated {
        /// The pattern.
        repeat: String,
        /// Exact size.
        bytes: u64,
        /// Its modification time.
        #[serde(default)]
        mtime: Option<Mtime>,
    },
    /// Binary content.
    Base64 {
        /// Standard base64.
        base64: String,
        /// Its modification time.
        #[serde(default)]
        mtime: Option<Mtime>,
    },
}

impl FileSpec {
    /// The modification time the probe gives the file, if any.
    pub fn mtime(&self) -> Option<&Mtime> {
        match self {
            FileSpec::Text(_) => None,
            FileSpec::Inline { mtime, .. } | FileSpec::Generated { mtime, .. } | FileSpec::Base64 { mtime, .. } => {
                mtime.as_ref()
            }
        }
    }
}

/// A modification time a probe sets: seconds (fractions for milliseconds) on the clock of the fixture's
/// own stamps — 0 is [`FIXTURE_MTIME_BASE`] (2026-01-01T00:00:00Z), the time of the first file in path
/// order, the n-th file has n - 1, negative is earlier — or an absolute RFC 3339 time
/// (`"2026-03-01T10:00:00.250Z"`). Subjects order Glob and Grep results by mtime to the millisecond.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Mtime {
    /// Seconds after [`FIXTURE_MTIME_BASE`].
    Offset(f64),
    /// RFC 3339.
    At(String),
}

impl Eq for Mtime {}

/// The modification time of the fixture's first file (2026-01-01T00:00:00Z); the n-th file in path order
/// gets [`FIXTURE_MTIME_STEP`] more per file before it.
pub const FIXTURE_MTIME_BASE: u64 = 1_767_225_600;
/// The latest mtime a probe may set, in seconds since 1970: 9999-12-31T23:59:59Z (RFC 3339's last year).
pub const MAX_MTIME_SECS: u64 = 253_402_300_799;
/// Seconds between the mtimes of two consecutive fixture files.
pub const FIXTURE_MTIME_STEP: u64 = 1;

/// Why an mtime a probe sets names no time the lab can give a file ([`Mtime::time`]).
#[derive(Debug, thiserror::Error)]
pub enum MtimeError {
    /// An offset before 1970 (as written).
    #[error("mtime {0} is before 1970")]
    BeforeEpoch(String),
    /// An offset after [`MAX_MTIME_SECS`] (as written).
    #[error("mtime {0} is after the year 9999")]
    AfterMax(String),
    /// A time that is not RFC 3339.
    #[error("mtime {text:?} is not an RFC 3339 time (2026-03-01T10:00:00.250Z)")]
    NotRfc3339 {
        /// As written.
        text: String,
        /// The parser's reason.
        source: jiff::Error,
    },
}

impl Mtime {
    /// The time it names.
    pub fn time(&self) -> Result<std::time::SystemTime, MtimeError> {
        match self {
            Mtime::Offset(s) => {
                let at = FIXTURE_MTIME_BASE as f64 + s;
                // as written: 1e19, not its twenty digits
                let shown = if s.abs() >= 1e15 { format!("{s:e}") } else { s.to_string() };
                if at.is_nan() || at < 0.0 {
                    return Err(MtimeError::BeforeEpoch(shown));
                }
                if at > MAX_MTIME_SECS as f64 {
                    return Err(MtimeError::AfterMax(shown));
                }
                Ok(std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(at))
            }
            Mtime::At(t) => t
                .parse::<jiff::Timestamp>()
                .map(std::time::SystemTime::from)
                .map_err(|source| MtimeError::NotRfc3339 { text: t.clone(), source }),
        }
    }
}

/// The largest generated fixture file (1 GiB): enough for any read or output budget of the claims
/// (the largest is Read's 256 KiB, READ-2), small enough that a typo in `bytes` is an error, not an abort
/// of the process on allocation.
pub const MAX_GENERATED_BYTES: u64 = 1 << 30;

/// Why the bytes of an inline file cannot be made (an empty pattern, a size over the cap, text that is
/// not base64), found without making them: a probe's files are checked when it is loaded.
pub fn spec_problem(spec: &FileSpec) -> Option<String> {
    match spec {
        FileSpec::Generated { repeat, bytes, .. } => {
            file_bytes(&FileSpec::Generated { repeat: repeat.clone(), bytes: (*bytes).min(1), mtime: None })
                .err()
                .or_else(|| (*bytes > MAX_GENERATED_BYTES).then_some(FileError::TooLarge(*bytes)))
                .map(|e| crate::exit::chain(&e))
        }
        other => file_bytes(other).err().map(|e| crate::exit::chain(&e)),
    }
}

/// Why the bytes of an inline file cannot be made ([`file_bytes`]).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// A generated file whose pattern is empty.
    #[error("generated file: repeat is empty")]
    EmptyRepeat,
    /// A generated file larger than [`MAX_GENERATED_BYTES`].
    #[error("generated file: bytes = {0} is more than the {MAX_GENERATED_BYTES} a fixture file may have")]
    TooLarge(u64),
    /// A base64 file whose text is not base64.
    #[error("base64 file")]
    Base64(#[source] base64::DecodeError),
}

/// The bytes of an inline file.
pub fn file_bytes(spec: &FileSpec) -> Result<Vec<u8>, FileError> {
    Ok(match spec {
        FileSpec::Text(t) | FileSpec::Inline { text: t, .. } => t.as_bytes().to_vec(),
        FileSpec::Generated { repeat, bytes, .. } => {
            if repeat.is_empty() {
                return Err(FileError::EmptyRepeat);
            }
            if *bytes > MAX_GENERATED_BYTES {
                return Err(FileError::TooLarge(*bytes));
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
        FileSpec::Base64 { base64, .. } => {
            base64::engine::general_purpose::STANDARD.decode(base64.trim()).map_err(FileError::Base64)?
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_file_is_its_pattern_cycled_to_the_exact_size() {
        let spec = |r: &str, n: u64| file_bytes(&FileSpec::Generated { repeat: r.into(), bytes: n, mtime: None });
        assert_eq!(spec("abc", 7), Ok(b"abcabca".to_vec()));
        assert_eq!(spec("abc", 2), Ok(b"ab".to_vec()));
        assert_eq!(spec("abc", 0), Ok(Vec::new()));
        let big = spec("0123456789\n", 1_000_003).unwrap_or_default();
        assert_eq!(big.len(), 1_000_003);
        assert!(big.iter().zip(b"0123456789\n".iter().cycle()).all(|(a, b)| a == b));
        let huge = spec("x", 100 << 30).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(huge.contains("more than the 1073741824"), "{huge}");
    }

    #[test]
    fn an_mtime_is_an_offset_on_the_fixture_clock_or_an_rfc3339_time() {
        let secs = |m: Mtime| {
            m.time()
                .map(|t| t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis())
                .map_err(|e| e.to_string())
        };
        assert_eq!(secs(Mtime::Offset(0.0)), Ok(u128::from(FIXTURE_MTIME_BASE) * 1000));
        assert_eq!(secs(Mtime::Offset(-1.5)), Ok(u128::from(FIXTURE_MTIME_BASE) * 1000 - 1500));
        assert_eq!(
            secs(Mtime::At("2026-01-01T00:00:02.250Z".into())),
            Ok(u128::from(FIXTURE_MTIME_BASE) * 1000 + 2250)
        );
        assert_eq!(secs(Mtime::At("2026-01-01T01:00:00+01:00".into())), Ok(u128::from(FIXTURE_MTIME_BASE) * 1000));
        assert!(Mtime::At("yesterday".into()).time().is_err_and(|e| e.to_string().contains("not an RFC 3339 time")));
        assert!(Mtime::Offset(-1e12).time().is_err());
        // far futures are errors, not a panic of the time arithmetic
        for far in [1e19, 1e300, f64::MAX, f64::INFINITY, f64::NAN] {
            assert!(Mtime::Offset(far).time().is_err(), "{far}");
        }
        assert!(Mtime::Offset((MAX_MTIME_SECS - FIXTURE_MTIME_BASE) as f64).time().is_ok());
        let spec: FileSpec =
            toml::from_str::<std::collections::BTreeMap<String, FileSpec>>("f = { text = \"x\", mtime = 3 }")
                .map(|m| m["f"].clone())
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(spec.mtime(), Some(&Mtime::Offset(3.0)));
        assert_eq!(file_bytes(&spec), Ok(b"x".to_vec()));
    }
}
