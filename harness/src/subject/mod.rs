//! Subjects: what answers a probe's scripted model with tool results. Each is a module implementing
//! [`Subject`] — set up once ([`Registry::prepare`]: an install, a config), then one conversation per
//! probe against the stub's base URL in the probe's sandbox ([`Subject::converse`]) — and registered once
//! in [`REGISTERED`] (or, for the user's own runtime, declared in `probelab.toml`: [`command`]).
//!
//! - [`builtin`]: the embedded runtime (probelab-runtime) through its agent loop;
//! - [`claude_code`]: the Claude Code CLI by version, installed from npm into the cache;
//! - [`command`]: any program the project names (`[subjects.NAME] command = [...]`);
//! - [`opencode`], [`pi`]: third-party agents by version from npm ([`agent`]: what they share), their
//!   tools put in Claude Code's terms by a [`dialect`] (`harness/dialects/<agent>.toml`);
//! - [`process`]: what every process subject shares — one spawn hook, the deadline, the kill of its tree;
//! - [`error`]: how the seam fails (typed: what failed, its cause as the source);
//! - [`exec`]: exec probes, which run a command (the subject's search engine as `rg`) and record it.
//!
//! A subject is named by a [`SubjectId`] ([`id`]), parsed once from the command line by [`Registry::parse`]:
//! an unknown name is an error listing the subjects there are.

pub mod agent;
pub mod api;
pub mod builtin;
pub mod claude_code;
pub mod command;
pub mod dialect;
pub mod dialect_cli;
pub mod error;
pub mod exec;
pub mod id;
pub mod opencode;
pub mod pi;
pub mod process;

pub use api::{
    engine_sha256, write_claude_settings, Conversation, Ended, Registration, RunEnd, Subject, RECORD_CAP_BYTES,
};
pub use error::{ConverseError, EngineError, InstallError, PrepareError, SubjectError};
pub use id::SubjectId;

use std::collections::BTreeMap;
use std::sync::Arc;

/// The third-party agents among the registered kinds, with their dialects and recorded tool lists.
pub const AGENTS: &[&agent::AgentSpec] = &[&opencode::SPEC, &pi::SPEC];

/// The registered kinds. Adding a subject: a module implementing [`Subject`] and a line here.
pub const REGISTERED: &[Registration] =
    &[builtin::REGISTRATION, claude_code::REGISTRATION, opencode::REGISTRATION, pi::REGISTRATION];

/// The subjects a project has: the registered kinds and its command subjects (`probelab.toml`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registry {
    commands: BTreeMap<String, Arc<command::CommandSpec>>,
}

impl Registry {
    /// A command subject's spec, by name.
    pub fn command(&self, name: &str) -> Option<&Arc<command::CommandSpec>> {
        self.commands.get(name)
    }

    /// The registered kinds and `commands`.
    pub fn new(commands: BTreeMap<String, Arc<command::CommandSpec>>) -> Registry {
        Registry { commands }
    }

    /// The command subjects.
    pub fn commands(&self) -> &BTreeMap<String, Arc<command::CommandSpec>> {
        &self.commands
    }

    /// The names a probe's `subjects` may use: every registered kind's and every command subject's.
    pub fn names(&self) -> Vec<String> {
        REGISTERED.iter().map(|r| r.kind.name().to_string()).chain(self.commands.keys().cloned()).collect()
    }

    /// Parses a subject as the command line names it; an unknown one is an error listing the subjects
    /// there are.
    pub fn parse(&self, s: &str) -> Result<SubjectId, SubjectError> {
        use api::Versioned;
        for r in REGISTERED {
            let name = r.kind.name();
            if !matches!(r.versioned, Versioned::Required) && s == name {
                return Ok(SubjectId { kind: r.kind, name: name.into(), version: None, dialect: None });
            }
            if let Some(v) = s.strip_prefix(name).and_then(|rest| rest.strip_prefix('@')) {
                if let Versioned::Optional { check } = r.versioned {
                    check(v).map_err(|why| SubjectError::VersionRefused { subject: s.into(), why })?;
                }
                if let (false, Ok(version)) = (matches!(r.versioned, Versioned::No), id::Version::parse(v)) {
                    let dialect = r.speaks.map(str::to_string);
                    return Ok(SubjectId { kind: r.kind, name: name.into(), version: Some(version), dialect });
                }
                if !matches!(r.versioned, Versioned::No) {
                    return Err(SubjectError::NotAVersion {
                        subject: s.into(),
                        version: v.into(),
                        example: format!("{name}@{}", r.pinned.unwrap_or(id::REFERENCE_VERSION)),
                    });
                }
            }
        }
        if let Some(c) = self.commands.get(s) {
            return Ok(SubjectId::command(s, c.dialect.as_deref()));
        }
        let needs_version = REGISTERED
            .iter()
            .find(|r| matches!(r.versioned, api::Versioned::Required) && s == r.kind.name())
            .map(|r| format!("{s}@{}", r.pinned.unwrap_or("VERSION")));
        Err(SubjectError::Unknown { name: s.into(), needs_version, listing: self.listing() })
    }

    /// One line per subject: how to name it, what it is.
    pub fn listing(&self) -> String {
        let mut out = String::new();
        for r in REGISTERED {
            out.push_str(&format!("  {:<16} {}\n", r.usage, r.about));
        }
        for (name, c) in &self.commands {
            let pin = c.install.as_ref().map(|i| format!("npm {}@{}, ", i.package, i.version)).unwrap_or_default();
            out.push_str(&format!("  {name:<16} {pin}{} ({})\n", c.about(), c.place));
        }
        out
    }

    /// Sets a subject up (installs it if it must be): what runs its conversations.
    pub fn prepare(&self, id: &SubjectId) -> Result<Arc<dyn Subject>, SubjectError> {
        if id.kind == id::SubjectKind::Command {
            let spec = self.commands.get(&id.name).ok_or_else(|| SubjectError::UnknownCommand(id.name.clone()))?;
            return Ok(Arc::new(command::Command::prepare(id.clone(), spec.clone())?));
        }
        let r = REGISTERED
            .iter()
            .find(|r| r.kind == id.kind)
            .ok_or_else(|| SubjectError::UnknownKind(id.kind.to_string()))?;
        (r.prepare)(id)
    }
}

#[cfg(test)]
mod tests {
    /// LAST_MEASURED is the newest release with committed cells: publishing a newer one moves it.
    #[test]
    fn the_last_measured_release_is_the_newest_with_cells() {
        let cells = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/matrix/cells");
        let newest = std::fs::read_dir(&cells)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| semver::Version::parse(e.file_name().to_str()?).ok())
            .max();
        let last = semver::Version::parse(probelab_runtime::profile::LAST_MEASURED).ok();
        assert_eq!(
            newest,
            last,
            "runtime/src/profile.rs LAST_MEASURED must name the newest release of {}",
            cells.display()
        );
    }

    use super::{Registry, SubjectError};

    #[test]
    fn a_subject_that_cannot_be_had_is_a_typed_error_saying_what_to_write() {
        let r = Registry::default();
        let e = r.parse("claude-code").unwrap_err();
        assert!(matches!(&e, SubjectError::Unknown { needs_version: Some(v), .. } if v == "claude-code@VERSION"));
        assert!(e.to_string().starts_with("unknown subject \"claude-code\" (it needs a version: claude-code@VERSION); the subjects are:\n  builtin"), "{e}");
        let e = r.parse("nope").unwrap_err();
        assert!(matches!(&e, SubjectError::Unknown { needs_version: None, .. }), "{e:?}");
        assert!(e.to_string().starts_with("unknown subject \"nope\"; the subjects are:\n"), "{e}");
        let e = r.parse("claude-code@2_1").unwrap_err();
        assert_eq!(
            e.to_string(),
            "subject \"claude-code@2_1\": \"2_1\" is not a version (write e.g. claude-code@2.1.235)"
        );
        let e = r.parse("builtin@banana").unwrap_err();
        assert!(matches!(&e, SubjectError::VersionRefused { subject, .. } if subject == "builtin@banana"), "{e:?}");
        // a release no profile or cell knows: refused with the known range (issue 42)
        for unknown in ["builtin@9.9.9", "builtin@2.1.100", "builtin@2.1.999"] {
            let e = crate::exit::chain(&r.parse(unknown).unwrap_err());
            assert!(e.contains("the observatory measured, 2.1.235 to"), "{unknown}: {e}");
        }
        assert!(
            r.parse("builtin@2.1.300").is_ok()
                && r.parse(&format!("builtin@{}", probelab_runtime::profile::LAST_MEASURED)).is_ok()
        );
        let id = super::SubjectId::command("mine", None);
        assert!(matches!(r.prepare(&id).err(), Some(SubjectError::UnknownCommand(c)) if c == "mine"));
    }
}
