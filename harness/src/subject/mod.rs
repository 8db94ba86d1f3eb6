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
pub mod exec;
pub mod id;
pub mod opencode;
pub mod pi;
pub mod process;

pub use api::{
    engine_sha256, write_claude_settings, Conversation, Ended, Registration, RunEnd, Subject, RECORD_CAP_BYTES,
};
pub use id::SubjectId;

use std::collections::BTreeMap;
use std::sync::Arc;

/// The registered kinds. Adding a subject: a module implementing [`Subject`] and a line here.
pub const REGISTERED: &[Registration] =
    &[builtin::REGISTRATION, claude_code::REGISTRATION, opencode::REGISTRATION, pi::REGISTRATION];

/// The subjects a project has: the registered kinds and its command subjects (`probelab.toml`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registry {
    commands: BTreeMap<String, Arc<command::CommandSpec>>,
}

impl Registry {
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
        REGISTERED.iter().map(|r| r.kind.to_string()).chain(self.commands.keys().cloned()).collect()
    }

    /// Parses a subject as the command line names it; an unknown one is an error listing the subjects
    /// there are.
    pub fn parse(&self, s: &str) -> Result<SubjectId, String> {
        use api::Versioned;
        for r in REGISTERED {
            if !matches!(r.versioned, Versioned::Required) && s == r.kind {
                return Ok(SubjectId { kind: r.kind, name: r.kind.into(), version: None, dialect: None });
            }
            if let Some(v) = s.strip_prefix(r.kind).and_then(|rest| rest.strip_prefix('@')) {
                if let Versioned::Optional { check } = r.versioned {
                    check(v).map_err(|e| format!("subject {s:?}: {e}"))?;
                }
                if !matches!(r.versioned, Versioned::No) && id::valid_version(v) {
                    let dialect = r.speaks.map(str::to_string);
                    return Ok(SubjectId { kind: r.kind, name: r.kind.into(), version: Some(v.into()), dialect });
                }
                if !matches!(r.versioned, Versioned::No) {
                    return Err(format!(
                        "subject {s:?}: {v:?} is not a version (write e.g. {}@{})",
                        r.kind,
                        r.pinned.unwrap_or(id::REFERENCE_VERSION)
                    ));
                }
            }
        }
        if let Some(c) = self.commands.get(s) {
            return Ok(SubjectId::command(s, c.dialect.as_deref()));
        }
        let hint = match REGISTERED.iter().find(|r| matches!(r.versioned, api::Versioned::Required) && s == r.kind) {
            Some(r) => format!(" (it needs a version: {s}@{})", r.pinned.unwrap_or("VERSION")),
            None => String::new(),
        };
        Err(format!("unknown subject {s:?}{hint}; the subjects are:\n{}", self.listing().trim_end()))
    }

    /// One line per subject: how to name it, what it is.
    pub fn listing(&self) -> String {
        let mut out = String::new();
        for r in REGISTERED {
            out.push_str(&format!("  {:<16} {}\n", r.usage, r.about));
        }
        for (name, c) in &self.commands {
            out.push_str(&format!("  {name:<16} {} ({})\n", c.about(), c.place));
        }
        out
    }

    /// Sets a subject up (installs it if it must be): what runs its conversations.
    pub fn prepare(&self, id: &SubjectId) -> Result<Arc<dyn Subject>, String> {
        if id.kind == id::COMMAND {
            let spec = self.commands.get(&id.name).ok_or_else(|| format!("unknown command subject {:?}", id.name))?;
            return Ok(Arc::new(command::Command::new(id.clone(), spec.clone())));
        }
        let r = REGISTERED
            .iter()
            .find(|r| r.kind == id.kind)
            .ok_or_else(|| format!("unknown subject kind {:?}", id.kind))?;
        (r.prepare)(id)
    }
}
