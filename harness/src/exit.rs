//! How probelab's commands fail: an [`anyhow::Error`] whose context says what the command was doing and
//! on what path (outermost first, `{:#}`), and the exit status it means. Each command's doc comment says
//! what its codes mean; across the CLI 2 is bad input (a usage error, a probe file, a project, a version
//! that is not there) and 1 is work that failed (an error cell, a file that cannot be written).
//!
//! A command returns `Result<ExitCode, Failure>` ([`Outcome`]); [`Usage`] or [`Failed`] turn any error
//! into a failure with its code, and [`finish`] prints it once, after the command's prefix.

use std::fmt::{Debug, Display};
use std::process::ExitCode;

/// A command's error and the exit status it means.
#[derive(Debug)]
pub struct Failure {
    /// The exit status (1 or 2).
    pub code: u8,
    /// What went wrong, with what the command was doing.
    pub error: anyhow::Error,
}

/// What a command returns: its exit status, or a failure to print.
pub type Outcome = Result<ExitCode, Failure>;

impl Failure {
    /// Bad input: exit 2.
    pub fn usage(error: impl Into<anyhow::Error>) -> Failure {
        Failure { code: 2, error: error.into() }
    }

    /// The work failed: exit 1.
    pub fn failed(error: impl Into<anyhow::Error>) -> Failure {
        Failure { code: 1, error: error.into() }
    }

    /// A message of its own (no error under it), with its code.
    pub fn msg(code: u8, message: impl Display + Debug + Send + Sync + 'static) -> Failure {
        Failure { code, error: anyhow::Error::msg(message) }
    }
}

/// Turns an error into a [`Failure`] that exits 2 (bad input).
pub trait Usage<T> {
    /// Exit 2.
    fn usage(self) -> Result<T, Failure>;
}

/// Turns an error into a [`Failure`] that exits 1 (the work failed).
pub trait Failed<T> {
    /// Exit 1.
    fn failed(self) -> Result<T, Failure>;
}

impl<T, E: Into<anyhow::Error>> Usage<T> for Result<T, E> {
    fn usage(self) -> Result<T, Failure> {
        self.map_err(Failure::usage)
    }
}

impl<T, E: Into<anyhow::Error>> Failed<T> for Result<T, E> {
    fn failed(self) -> Result<T, Failure> {
        self.map_err(Failure::failed)
    }
}

/// The exit status of a command: its own, or its failure's after printing it on stderr as
/// `PREFIX: what it was doing: why` ([`said`]).
pub fn finish(prefix: &str, outcome: Outcome) -> ExitCode {
    match outcome {
        Ok(code) => code,
        Err(f) => {
            eprintln!("{prefix}: {}", terminal_safe(&said(&f.error)));
            ExitCode::from(f.code)
        }
    }
}

/// An error as the CLI says it: each context, outermost first, then the error and its causes, joined by
/// `: ` ([`chain`]). No error of the lab writes its source into its own message, so each cause is said
/// once.
pub fn said(error: &anyhow::Error) -> String {
    chain(error.as_ref())
}

/// An error and its causes (its [`std::error::Error::source`] chain), outermost first, joined by `: `:
/// how an error that is kept as text (an error cell, a report's detail) is written.
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

/// `text` as it may reach a terminal (issue 41, item 7): what a subject sent — a request line, a tool's
/// output in a failure's diff — can hold escape sequences that clear the screen or set the window's
/// title. Every control character but newline and tab (C0, DEL and C1) is written as a visible escape
/// (`\x1b`, `\x7f`, `\u{9b}`); the rest is unchanged (borrowed when there is nothing to escape).
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() && c != '\n' && c != '\t') || c == '\u{7f}';
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn escape_sequences_never_reach_the_terminal() {
        use super::terminal_safe;
        assert_eq!(terminal_safe("a\nb\tc"), "a\nb\tc");
        assert_eq!(terminal_safe("\u{1b}]0;pwned\u{7}\u{1b}[2J"), "\\x1b]0;pwned\\x07\\x1b[2J");
        assert_eq!(terminal_safe("\r\u{7f}\u{9b}x"), "\\x0d\\x7f\\u{9b}x");
    }

    use super::*;
    use anyhow::Context as _;

    #[test]
    fn a_failure_prints_what_was_being_done_then_why_and_exits_with_its_code() {
        let io: Result<(), std::io::Error> = Err(std::io::Error::new(std::io::ErrorKind::NotFound, "gone"));
        let f = io.context("reading /x/y").usage().unwrap_err();
        assert_eq!((f.code, said(&f.error)), (2, "reading /x/y: gone".to_string()));
        let text: Result<(), String> = Err("no cells".into());
        let f = text.map_err(anyhow::Error::msg).context("the matrix").failed().unwrap_err();
        assert_eq!((f.code, said(&f.error)), (1, "the matrix: no cells".to_string()));
        assert_eq!(finish("probelab", Err(Failure::msg(2, "bad"))), ExitCode::from(2));
        assert_eq!(finish("probelab", Ok(ExitCode::SUCCESS)), ExitCode::SUCCESS);
    }

    /// Every cause of a typed error is said once, in order: a message that wrote its source into itself
    /// would show here twice (and one that dropped its source, not at all).
    #[test]
    fn each_cause_of_a_typed_error_is_said_once() {
        let gone = || std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let data = crate::observe::DataError::Read { path: "docs/x.json".into(), source: gone() };
        let f = Err::<(), _>(data).context("the table").usage().unwrap_err();
        assert_eq!(said(&f.error), "the table: docs/x.json: gone");
        // three layers: the run, the subject's conversation, the OS
        let spawn = crate::subject::ConverseError::Spawn { what: "subject x (prog)".into(), source: gone() };
        let run = crate::run::RunError::from(spawn);
        assert_eq!(chain(&run), "cannot start subject x (prog): gone");
        let f = Err::<(), _>(run).context("probe p").failed().unwrap_err();
        assert_eq!(said(&f.error), "probe p: cannot start subject x (prog): gone");
        assert_eq!(said(&f.error).matches("gone").count(), 1);
        let stub = crate::run::RunError::Stub(gone());
        assert_eq!(chain(&stub), "cannot start the stub: gone");
    }

    /// No error type of the lab says its source in its own message: each one's text is checked against
    /// its source's.
    #[test]
    fn no_message_repeats_its_source() {
        let gone = || std::io::Error::new(std::io::ErrorKind::NotFound, "gone away");
        let json = || serde_json::from_str::<u8>("x").unwrap_err();
        let jiff = || "x".parse::<jiff::Timestamp>().unwrap_err();
        let fault = || crate::probe::sandbox::FaultError { kind: "chmod", path: "x".into(), cause: gone().into() };
        let file = || crate::probe::sandbox::FixtureError::File {
            rel: "a".into(),
            source: crate::probe::files::MtimeError::NotRfc3339 { text: "x".into(), source: jiff() }.into(),
        };
        let errors: Vec<Box<dyn std::error::Error + 'static>> = vec![
            Box::new(crate::observe::DataError::Read { path: "a".into(), source: gone() }),
            Box::new(crate::observe::DataError::NotAnObservation { path: "a".into(), source: json() }),
            Box::new(crate::observe::DataError::Parse { path: "a".into(), source: json() }),
            Box::new(crate::observe::DataError::Create { path: "a".into(), source: gone() }),
            Box::new(crate::observe::DataError::Write { path: "a".into(), source: gone() }),
            Box::new(crate::observe::DataError::Json(json())),
            Box::new(crate::suite::DurationsError::Read { path: "a".into(), source: gone() }),
            Box::new(crate::suite::DurationsError::Parse { path: "a".into(), source: json() }),
            Box::new(crate::probe::sandbox::PathError::ReadLink { path: "a".into(), source: gone() }),
            Box::new(crate::probe::LoadError::Walk { path: "a".into(), source: gone() }),
            Box::new(crate::run::RunError::Stub(gone())),
            Box::new(crate::subject::ConverseError::Spawn { what: "x".into(), source: gone() }),
            Box::new(crate::subject::claude_code::install("2.1").err().unwrap()),
            Box::new(crate::probe::sandbox::SandboxError::Temp(gone())),
            Box::new(crate::probe::sandbox::SandboxError::Dir { path: "a".into(), source: gone() }),
            Box::new(crate::probe::sandbox::SandboxError::Copy { from: "a".into(), source: gone() }),
            Box::new(crate::probe::sandbox::SandboxError::Write { path: "a".into(), source: gone() }),
            Box::new(crate::probe::sandbox::SandboxError::Stamp(gone())),
            Box::new(crate::probe::sandbox::SandboxError::Mtime { rel: "a".into(), source: gone() }),
            Box::new(crate::probe::sandbox::SandboxError::Probe { probe: "p".into(), source: file() }),
            Box::new(file()),
            Box::new(fault()),
            Box::new(crate::run::RunError::Fault { probe: "p".into(), source: fault() }),
            Box::new(crate::run::RunError::from(crate::probe::sandbox::SandboxError::Temp(gone()))),
            Box::new(crate::cleanup::RegisterError::Owner { path: "a".into(), source: gone() }),
            Box::new(crate::probe::files::MtimeError::NotRfc3339 { text: "x".into(), source: jiff() }),
            Box::new(crate::probe::files::FileError::Base64(base64::DecodeError::InvalidByte(0, b'!'))),
            Box::new(crate::probe::web::PageError {
                key: "/x".into(),
                problem: crate::probe::web::PageProblem::Status(1),
            }),
            Box::new(crate::services::ServiceError::Create { path: "a".into(), source: gone() }),
            Box::new(crate::services::ServiceError::Write { path: "a".into(), source: gone() }),
            Box::new(crate::services::ServiceError::Serve { service: "web", source: gone() }),
            Box::new(crate::services::tls::TlsError::Config(rustls::Error::General("no".into()))),
            Box::new(crate::run::RunError::from(crate::services::ServiceError::Serve {
                service: "web",
                source: gone(),
            })),
            Box::new(crate::confine::ConfineError::Ports(gone())),
            Box::new(crate::run::RunError::from(crate::confine::ConfineError::Ports(gone()))),
            Box::new(crate::subject::SubjectError::VersionRefused {
                subject: "builtin@2.1.1".into(),
                why: probelab_runtime::profile::NoProfile::Unmeasured("2.1.1".into()).into(),
            }),
            Box::new(crate::observatory::cli::RangeError::NotAVersion {
                version: "2.1".into(),
                source: semver::Version::parse("2.1").unwrap_err(),
            }),
            Box::new(crate::observatory::watch::CellsError::from(crate::observe::DataError::Read {
                path: "a".into(),
                source: gone(),
            })),
            Box::new(crate::transcript::diff::SetError::Read { path: "a".into(), source: gone() }),
            Box::new(crate::lab::GoldenError::Bless { file: "a".into(), source: gone() }),
            Box::new(crate::observatory::explain::ExplainError::Io { path: "a".into(), source: gone() }),
            Box::new(crate::observatory::watch::PublishError::from(crate::observe::DataError::Create {
                path: "a".into(),
                source: gone(),
            })),
            Box::new(crate::observatory::watch::PublishError::Remove { path: "a".into(), source: gone() }),
            Box::new(crate::observatory::conformance::MeasureError::Temp(gone())),
            Box::new(crate::observatory::conformance::MeasureError::Golden {
                probe: "p".into(),
                source: crate::lab::GoldenError::Bless { file: "x.snap".into(), source: gone() },
            }),
            Box::new(crate::observatory::conformance::MeasureError::Run {
                probe: "p".into(),
                source: crate::run::RunError::Stub(gone()),
            }),
            Box::new(crate::observatory::cli::PinError::Range {
                good: "2.1.1".into(),
                bad: "2.1.2".into(),
                source: crate::observatory::cli::RangeError::NotAVersion {
                    version: "2.1".into(),
                    source: semver::Version::parse("2.1").unwrap_err(),
                },
            }),
            Box::new(crate::observatory::explain::ExplainError::from(crate::lab::GoldenError::Bless {
                file: "a".into(),
                source: gone(),
            })),
            Box::new(crate::observatory::watch::NoCommitted::Unreadable { cells: "a".into(), source: gone() }),
            Box::new(crate::observatory::watch::WatchError::Matrix(crate::observe::DataError::Json(json()))),
            Box::new(crate::observatory::watch::WatchError::Explore {
                a: "2.1.1".into(),
                b: "2.1.2".into(),
                source: crate::observatory::watch::ExploreError::Record(crate::discover::RecordWriteError::Create {
                    dir: "a".into(),
                    source: gone(),
                }),
            }),
            Box::new(crate::discover::RecordWriteError::Json { b: "2.1.2".into(), source: json() }),
            Box::new(probelab_runtime::confine::SessionError::Spawn(gone())),
            Box::new(crate::confine::ConfineError::Session {
                probe: "p".into(),
                why: probelab_runtime::confine::SessionError::Spawn(gone()),
            }),
            Box::new(stub_messages::RecordError { line: 3, problem: stub_messages::RecordProblem::Json(json()) }),
        ];
        for e in errors {
            let source = e.source().map(|s| s.to_string());
            assert!(source.is_some(), "{e:?} has no source");
            let source = source.unwrap_or_default();
            assert!(!e.to_string().contains(&source), "{e} says its source {source:?}");
            assert_eq!(chain(e.as_ref()).matches(&source).count(), 1, "{}", chain(e.as_ref()));
        }
    }
}
