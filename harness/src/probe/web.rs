//! The probe's `[web]` table (WEB-1, WEB-2): pages the lab's local web service serves
//! ([`crate::services::web`]), by `host/path` or `/path`.

use super::files::{file_bytes, FileSpec};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The web service's directory under the sandbox root (its log and, with `tls`, its CA's certificate:
/// `{sandbox}/web-service/log.txt` in a probe's checks).
pub const SERVICE_DIR: &str = "web-service";

/// The probe's `[web]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSpec {
    /// Pages by `host/path` (or `/path` for any host).
    #[serde(default)]
    pub pages: BTreeMap<String, Page>,
    /// The service speaks https too, by a certificate of the run's own CA that subjects are told to
    /// trust (`NODE_EXTRA_CA_CERTS`; [`crate::services::tls`]): what Claude Code, which upgrades
    /// `http:` to `https:`, needs to fetch a page at all.
    #[serde(default)]
    pub tls: bool,
}

/// One page of the `[web]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Page {
    /// HTTP status (default 200, or 302 with `location`).
    #[serde(default)]
    pub status: Option<u16>,
    /// The body (text, `{ repeat, bytes }` or `{ base64 }`, like fixture files).
    #[serde(default)]
    pub body: Option<FileSpec>,
    /// `Content-Type` (default `text/html; charset=utf-8` when there is a body).
    #[serde(default)]
    pub content_type: Option<String>,
    /// `Location` (a redirect).
    #[serde(default)]
    pub location: Option<String>,
    /// More response headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Delay before the answer, in milliseconds.
    #[serde(default)]
    pub delay_ms: u64,
}

impl WebSpec {
    /// The file a subject is told to trust (`NODE_EXTRA_CA_CERTS`) when the service speaks https: the
    /// run's CA certificate in the service's directory of the sandbox at `sandbox_root`.
    pub fn ca_file(&self, sandbox_root: &std::path::Path) -> Option<std::path::PathBuf> {
        self.tls.then(|| sandbox_root.join(SERVICE_DIR).join(crate::services::tls::CA_FILE))
    }

    /// Checks what the server would only find at run time: statuses, header names and values, bodies.
    pub fn validate(&self) -> Result<(), PageError> {
        for (key, p) in &self.pages {
            let bad = |problem| PageError { key: key.clone(), problem };
            if !key.contains('/') {
                return Err(bad(PageProblem::Key));
            }
            if let Some(s) = p.status {
                StatusCode::from_u16(s).map_err(|_| bad(PageProblem::Status(s)))?;
            }
            for (k, v) in &p.headers {
                HeaderName::from_bytes(k.as_bytes()).map_err(|_| bad(PageProblem::HeaderName(k.clone())))?;
                HeaderValue::from_str(v).map_err(|_| bad(PageProblem::HeaderValue(k.clone())))?;
            }
            if let Some(b) = &p.body {
                file_bytes(b).map_err(|e| bad(PageProblem::Body(e)))?;
            }
        }
        Ok(())
    }
}

/// A `[web]` page the server could not serve ([`WebSpec::validate`]): its key, and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("[web] page {key:?}")]
pub struct PageError {
    /// The page's key.
    pub key: String,
    /// What is wrong with it.
    #[source]
    pub problem: PageProblem,
}

/// What is wrong with a `[web]` page ([`PageError`]).
#[derive(Debug, thiserror::Error)]
pub enum PageProblem {
    /// A key that is neither `host/path` nor `/path`.
    #[error("a key is `host/path` or `/path`")]
    Key,
    /// A status that is not an HTTP status.
    #[error("status {0} is not an HTTP status")]
    Status(u16),
    /// A header name HTTP does not allow.
    #[error("bad header name {0:?}")]
    HeaderName(String),
    /// A header value HTTP does not allow (the header's name).
    #[error("bad value of header {0:?}")]
    HeaderValue(String),
    /// A body whose bytes cannot be made.
    #[error(transparent)]
    Body(crate::probe::files::FileError),
}
