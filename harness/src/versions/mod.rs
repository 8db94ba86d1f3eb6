//! # Versions of the Claude Code subject: the catalogue, version specs, and the install cache
//!
//! The observatory runs probes on many versions of `@anthropic-ai/claude-code` (matrix, bisect). This
//! module knows which versions exist, reads the specs that choose among them, and keeps their installs.
//!
//! - [`Catalogue`] (catalogue.rs): the published versions in npm's order, each with its publication
//!   time and whether its package carries the native linux-x64 binary (the optional dependency
//!   `@anthropic-ai/claude-code-linux-x64`, present from [`FIRST_LINUX_X64`] = 2.1.113 on; 1.x, 2.0.x
//!   and 2.1.0–2.1.112 shipped a JavaScript `cli.js` only and are skipped by matrix and bisect, which
//!   say so). Cached in `<cache>/claude-code/versions.json`; npm is asked again after 24 h ([`MAX_AGE`])
//!   or on `--refresh`; when npm cannot be asked the cached list is used and [`Freshness::Offline`] says
//!   so; with nothing cached that is an error.
//! - [`Spec`] (spec.rs): `2.1.235,2.1.332` · `newest` · `>=2.1.235, <2.1.300` · `every 10 of >=2.1.200`
//!   · `all`; [`Catalogue::select`] turns one into a [`Selection`], [`Catalogue::between`] gives the
//!   versions strictly between a good and a bad one. The grammar:
//!
//! ```text
//! spec  := "all" | "every" N [ "of" range ] | list | range
//! list  := item ("," item)*          item := "newest" | MAJOR.MINOR.PATCH[-PRE]  (exactly that version)
//! range := a semver VersionReq in which every comparator has an operator (= > >= < <= ~ ^) or a wildcard (2.1.*)
//! ```
//!
//!   A comma list of bare versions is a list, a comma list of comparators is a range; mixing them, or a
//!   bare partial version (`2.1`), is an error that says how to write it. `every N` takes every N-th
//!   version with a binary in npm order, always including the first and the last.
//! - [`Cache`] (cache.rs): one install per version at
//!   `<cache>/claude-code/<V>/node_modules/@anthropic-ai/claude-code-linux-x64/claude` with its metadata
//!   (`probelab-install.json`: SHA-256, sizes, installed_at, last_used); installs are atomic (a temporary
//!   sibling renamed into place), shared between processes by per-version locks, capped by
//!   `PROBELAB_CACHE_MAX` with least-recently-used eviction. `subject::claude_code::install` is built on
//!   it. See cache.rs for the layout and the rules.
//!
//! ## The environment
//! - `PROBELAB_CACHE`: the cache root (else `$XDG_CACHE_HOME/probelab`, else `~/.cache/probelab`).
//! - `PROBELAB_CACHE_MAX`: the cap on the Claude Code installs, `64G`, `900M`, `1.5G` or bytes (K/M/G/T
//!   are powers of 1024, KB/MB/GB/TB of 1000); unset: no cap.
//! - `PROBELAB_NPM`: the npm to run (default `npm` on PATH).
//!
//! ## The commands
//! - `probelab versions [SPEC] [--refresh] [--json]`: the published versions the spec selects (default:
//!   all), oldest first, each with its publication date, whether it has the linux-x64 binary, and, if
//!   installed, its size and when a run last used it. A line on stderr says where the list came from
//!   (asked npm now / cached N h ago / OFFLINE, cached N h ago). `--json` prints one object:
//!   `{"catalogue": {"fetched_at", "source", "first_linux_x64", ...}, "versions": [{"version",
//!   "published", "linux_x64", "installed": null | {"disk_size", "installed_at", "last_used", "sha256"}}],
//!   "skipped": [...]}`. Exit 2 on a bad spec, 1 when no list can be had.
//! - `probelab cache [list]`: the installed versions (size, installed, last used, SHA-256, in use), the
//!   total and the cap. `probelab cache gc`: evicts least recently used versions down to the cap, and
//!   removes what killed installs left. `probelab cache rm V`: removes one version (refused while a run
//!   uses it).
//!
//! ## Golden hashes
//! A golden file's header records the binary it was made with (`binary sha256 <hex>`);
//! [`golden_sha256`] reads it and [`check_sha256`] turns a mismatch into [`VersionError::ShaMismatch`],
//! which names both hashes and the fix.
//!
//! ```
//! use harness::versions::{Catalogue, Published, Spec};
//! use semver::Version;
//! let published = |v: &str, linux_x64| Published { version: Version::parse(v).unwrap(), published: None, linux_x64, platform_only: false };
//! let c = Catalogue::from_versions(
//!     vec![published("2.1.112", false), published("2.1.113", true), published("2.1.114", true), published("2.1.120", true)],
//!     jiff::Timestamp::UNIX_EPOCH,
//! );
//! let s = c.select(&">=2.1.100, <2.1.120".parse::<Spec>().unwrap()).unwrap();
//! assert_eq!(s.versions, [Version::new(2, 1, 113), Version::new(2, 1, 114)]);
//! assert_eq!(s.skipped, [Version::new(2, 1, 112)]);
//! assert!(c.select(&"2.1.112".parse::<Spec>().unwrap()).unwrap_err().to_string().contains("no linux-x64 binary"));
//! ```

mod cache;
mod package;
pub use package::{cache_root, PACKAGE, PLATFORM_PACKAGE};
mod catalogue;
pub mod cli;
mod error;
mod files;
mod npm;
pub mod size;
mod spec;

pub(crate) use cache::run_scratch;
pub use cache::{
    read_metadata, with_install_bins, Cache, Entry, Installed, Kind, Lease, Metadata, CLAUDE_CODE,
    DEFAULT_INSTALL_SIZE, METADATA,
};
pub use catalogue::{human_age, Catalogue, Freshness, Published, Refresh, FIRST_LINUX_X64, MAX_AGE};
pub use error::VersionError;
pub use files::write_atomic as write_file_atomic;
pub use npm::Npm;
pub use spec::{Item, Selection, Spec};

use std::path::Path;

/// The binary hash a golden file's header records (`description: subject claude-code 2.1.235, binary
/// sha256 <hex>`), if it records one.
pub fn golden_sha256(golden_text: &str) -> Option<&str> {
    let header = golden_text.strip_prefix("---\n")?;
    let header = &header[..header.find("\n---\n")?];
    let line = header.lines().find_map(|l| l.strip_prefix("description: "))?;
    let (_, hash) = line.rsplit_once("binary sha256 ")?;
    let hash = hash.trim();
    (hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hash)
}

/// Ok when the installed binary's hash is the one expected (from a golden header); else the error
/// naming both and what to do.
pub fn check_sha256(version: &str, binary: &Path, actual: &str, expected: &str) -> Result<(), VersionError> {
    if actual.eq_ignore_ascii_case(expected) {
        Ok(())
    } else {
        Err(VersionError::ShaMismatch {
            version: version.to_string(),
            expected: expected.to_string(),
            actual: actual.to_string(),
            binary: binary.to_path_buf(),
        })
    }
}

#[cfg(test)]
mod tests;

/// `Result::expect_err` for the tests (clippy denies `expect_*` in this workspace).
#[cfg(test)]
pub(crate) trait Failing<E> {
    /// The error; a panic naming `what` and the value when there is none.
    fn failing(self, what: &str) -> E;
}

#[cfg(test)]
impl<T: std::fmt::Debug, E> Failing<E> for Result<T, E> {
    fn failing(self, what: &str) -> E {
        match self {
            Ok(v) => panic!("{what}: expected an error, got {v:?}"),
            Err(e) => e,
        }
    }
}
