//! # Versions of the Claude Code subject: the catalogue and version specs
//!
//! The observatory runs probes on many versions of `@anthropic-ai/claude-code` (matrix, bisect). This
//! module knows which versions exist and reads the specs that choose among them.
//!
//! - [`Catalogue`] (catalogue.rs): the published versions in npm's order, each with its publication
//!   time and whether its package carries the native linux-x64 binary (the optional dependency
//!   `@anthropic-ai/claude-code-linux-x64`, present from [`FIRST_LINUX_X64`] = 2.1.113 on; 1.x, 2.0.x
//!   and 2.1.0–2.1.112 shipped a JavaScript `cli.js` only and are skipped by matrix and bisect, which
//!   say so). Cached in `<cache>/claude-code/versions.json`; npm is asked again after 24 h ([`MAX_AGE`])
//!   or on request; when npm cannot be asked the cached list is used and [`Freshness::Offline`] says
//!   so; with nothing cached that is an error.
//! - [`Spec`] (spec.rs): `2.1.235,2.1.332` · `newest` · `>=2.1.235, <2.1.300` · `every 10 of >=2.1.200`
//!   · `all`; [`Catalogue::select`] turns one into a [`Selection`], [`Catalogue::between`] gives the
//!   versions strictly between a good and a bad one. The grammar is in spec.rs.
//!
//! ```
//! use harness::versions::{Catalogue, Published, Spec};
//! use semver::Version;
//! let published = |v: &str, linux_x64| Published { version: Version::parse(v).unwrap(), published: None, linux_x64 };
//! let c = Catalogue::from_versions(
//!     vec![published("2.1.112", false), published("2.1.113", true), published("2.1.114", true), published("2.1.120", true)],
//!     jiff::Timestamp::UNIX_EPOCH,
//! );
//! let s = c.select(&">=2.1.100, <2.1.120".parse::<Spec>().unwrap()).unwrap();
//! assert_eq!(s.versions, [Version::new(2, 1, 113), Version::new(2, 1, 114)]);
//! assert_eq!(s.skipped, [Version::new(2, 1, 112)]);
//! assert!(c.select(&"2.1.112".parse::<Spec>().unwrap()).unwrap_err().to_string().contains("no linux-x64 binary"));
//! ```

mod catalogue;
mod error;
mod files;
mod npm;
pub mod size;
mod spec;

pub use catalogue::{human_age, Catalogue, Freshness, Published, Refresh, FIRST_LINUX_X64, MAX_AGE};
pub use error::VersionError;
pub use npm::Npm;
pub use spec::{Item, Selection, Spec};

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
