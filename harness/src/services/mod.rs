//! Local services a probe run starts beside the stub: real servers the built-in tools talk to over the
//! network, never mocks inside the tools. Each module owns one service and its files in the sandbox.

pub mod artifact;
pub mod tls;
pub mod web;

use std::path::PathBuf;

/// Why a service a probe asked for did not start ([`web::start`], [`artifact::start`]).
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// A `[web]` page the server could not serve.
    #[error(transparent)]
    Page(#[from] crate::probe::web::PageError),
    /// The service's directory could not be made.
    #[error("cannot create {}", path.display())]
    Create {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// One of its files (the log, the CA certificate) could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The web service's certificates could not be made.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// The server did not start.
    #[error("cannot start the {service} service")]
    Serve {
        /// `web`, `artifact`.
        service: &'static str,
        /// Why.
        source: std::io::Error,
    },
}
