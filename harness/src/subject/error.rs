//! How the subject seam fails, typed: a subject that cannot be had or set up ([`SubjectError`]), a
//! conversation that could not be held ([`ConverseError`]), an engine that cannot be read
//! ([`EngineError`]). Each message says what failed and where; the cause under it is its source, never
//! repeated in the message (the CLI says the chain once: [`crate::exit::said`]).

use std::path::PathBuf;

/// Why a subject named on the command line (or by a probe) cannot be had: [`super::Registry::parse`] and
/// [`super::Registry::prepare`]. The messages name the subject as it was written and say what to write
/// instead.
#[derive(Debug, thiserror::Error)]
pub enum SubjectError {
    /// A version the kind refuses (`builtin@2.1.1`: no profile that old), with the kind's reason.
    #[error("subject {subject:?}")]
    VersionRefused {
        /// The subject as written.
        subject: String,
        /// The kind's reason.
        #[source]
        why: Refusal,
    },
    /// A kind named with something that is not a version (`claude-code@2_1`).
    #[error("subject {subject:?}: {version:?} is not a version (write e.g. {example})")]
    NotAVersion {
        /// The subject as written.
        subject: String,
        /// What followed the `@`.
        version: String,
        /// A subject that is (`claude-code@2.1.235`).
        example: String,
    },
    /// No registered kind and no command subject of this name.
    #[error(
        "unknown subject {name:?}{}; the subjects are:\n{}",
        needs_version.as_ref().map(|e| format!(" (it needs a version: {e})")).unwrap_or_default(),
        listing.trim_end()
    )]
    Unknown {
        /// The name as written.
        name: String,
        /// A kind that takes a version, named without one: how to name it (`claude-code@2.1.235`).
        needs_version: Option<String>,
        /// The subjects there are ([`super::Registry::listing`]).
        listing: String,
    },
    /// An id of a command subject the project does not declare.
    #[error("unknown command subject {0:?}")]
    UnknownCommand(String),
    /// An id of a kind that is not registered.
    #[error("unknown subject kind {0:?}")]
    UnknownKind(String),
    /// A kind that is installed by version, set up without one.
    #[error("{subject}: {kind} needs a version")]
    NoVersion {
        /// The subject.
        subject: String,
        /// Its kind, in words (`Claude Code`, `opencode`).
        kind: &'static str,
    },
    /// The built-in subject at a version it has no profile for.
    #[error("subject {subject}")]
    Profile {
        /// The subject.
        subject: String,
        /// Why.
        #[source]
        source: probelab_runtime::profile::BadVersion,
    },
    /// An agent's own dialect file (compiled in) does not parse: its message (file:line:col).
    #[error("{0}")]
    Dialect(crate::located::Located),
    /// Claude Code could not be installed.
    #[error(transparent)]
    Install(Box<InstallError>),
    /// An install of the cache (an agent, a command subject's pinned package) could not be had.
    #[error("{subject}")]
    Cache {
        /// What was being installed (`opencode@1.18.33`, `subject x: npm @github/copilot@1.0.102`).
        subject: String,
        /// Why.
        #[source]
        source: Box<crate::versions::VersionError>,
    },
    /// A command subject's `prepare` step failed.
    #[error("{subject}")]
    Prepare {
        /// What was being prepared (`subject x: npm @github/copilot@1.0.102`).
        subject: String,
        /// Why.
        #[source]
        source: PrepareError,
    },
}

/// Why a kind refuses a version ([`super::api::Versioned::Optional`]): the kind's own error.
pub type Refusal = Box<dyn std::error::Error + Send + Sync>;

impl From<InstallError> for SubjectError {
    fn from(e: InstallError) -> SubjectError {
        SubjectError::Install(Box::new(e))
    }
}

/// Why Claude Code could not be installed ([`super::claude_code::install`]).
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The version is not a semver version.
    #[error("claude-code@{version}: not a version (write e.g. claude-code@{})", super::id::REFERENCE_VERSION)]
    NotAVersion {
        /// As given.
        version: String,
        /// The parser's reason.
        source: semver::Error,
    },
    /// The cache or npm failed: unknown version, npm missing, cache full, a SHA-256 mismatch…
    #[error(transparent)]
    Versions(#[from] crate::versions::VersionError),
}

/// Why a command subject's `prepare` step did not run to its end.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// Its lock (or the directory of locks) could not be had, or its marker not written.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// `create`, `lock`, `write`.
        action: &'static str,
        /// Where.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The step could not be started.
    #[error("prepare {program:?} could not start")]
    Start {
        /// Its program, as written.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The step ran and failed.
    #[error("prepare {argv:?} failed ({status}): {last}")]
    Failed {
        /// Its argv.
        argv: Vec<String>,
        /// How it ended.
        status: String,
        /// Its stderr's last line.
        last: String,
    },
}

/// Why a subject could not hold a conversation: not a verdict (the run is an error), it could not be
/// started or watched ([`super::Subject::converse`]).
#[derive(Debug, thiserror::Error)]
pub enum ConverseError {
    /// A directory the subject needs in its sandbox could not be made (its temp dir, a config's).
    #[error("cannot create {}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file the subject reads could not be written into its sandbox (a config, the settings).
    #[error("cannot write {}", path.display())]
    WriteFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A configuration the lab writes could not be made into JSON.
    #[error("cannot make {what} into JSON")]
    Json {
        /// Which (`the settings`, `the MCP config`).
        what: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A probe's plugin could not be written as a plugin directory.
    #[error("cannot write plugin {name}")]
    Plugin {
        /// The plugin.
        name: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The subject's PATH cannot be made (a directory holding the separator).
    #[error("PATH")]
    Path(#[source] std::env::JoinPathsError),
    /// The built-in runtime refused the probe's settings.
    #[error("{}: settings", probe.display())]
    Settings {
        /// The probe file.
        probe: PathBuf,
        /// Why.
        #[source]
        source: probelab_runtime::permissions::RuleError,
    },
    /// The built-in subject's version profile.
    #[error(transparent)]
    Subject(#[from] SubjectError),
    /// The subject's process could not be started.
    #[error("cannot start {what}")]
    Spawn {
        /// The process, in words.
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Waiting for the process failed.
    #[error("waiting for {what}")]
    Wait {
        /// The process, in words.
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Its stdout or stderr could not be read (a pipe that fails is no empty output).
    #[error("reading {what}'s {stream}")]
    Output {
        /// The process, in words.
        what: String,
        /// `stdout`, `stderr`.
        stream: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The task reading its stdout or stderr panicked or was cancelled.
    #[error("reading {what}'s {stream}")]
    Reader {
        /// The process, in words.
        what: String,
        /// `stdout`, `stderr`.
        stream: &'static str,
        /// Why.
        #[source]
        source: tokio::task::JoinError,
    },
}

/// The subject's search engine cannot be read (its evidence would name the hash of nothing:
/// [`super::Subject::rg_engine`]).
#[derive(Debug, thiserror::Error)]
#[error("cannot read the engine binary {}", path.display())]
pub struct EngineError {
    /// The binary.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}
