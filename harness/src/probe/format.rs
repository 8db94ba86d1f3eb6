//! The probe format's types: a probe as parsed ([`Probe`]), its parts, and the file as written
//! (`ProbeFile`, read by [`super::parse`]).

use super::*;
use host::CONFINEMENT;
use probelab_runtime::config::ClockSpec;
use probelab_runtime::config::HostScript;
use probelab_runtime::settings::{AskAnswer, Settings};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use stub_messages::script::{Conversation, StubSettings, Turn};
use toml::Spanned;

/// An `[[exec]]` command of an exec probe: run in the sandbox's cwd, stdin closed; `{rg}` as the first
/// word is the subject's search engine started as `rg` (the built-in engine for `builtin`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecSpec {
    /// The command and its arguments; `{cwd}` `{home}` `{sandbox}` are resolved.
    pub argv: Vec<String>,
    /// Killed after this long (default 10 s).
    #[serde(default)]
    pub deadline_ms: Option<u64>,
}

/// A fact a probe establishes that contradicts a claim on some subject: the lab reports it, it does not
/// hide it — the probe passes (its checks assert the fact) and its verdict says "diverges from claim".
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Divergence {
    /// The claim contradicted (must be one the probe cites).
    pub claim: String,
    /// The subject kind it diverges on (`builtin`, `claude-code`).
    pub subject: String,
    /// What the run shows instead.
    pub fact: String,
}

/// A sandbox change (`[[fixture.fault]]`): where, when, and what ([`FaultOp`], by `kind`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsFault {
    /// Once the request of this main turn (1-based) has arrived, before the turn's `wait` and its
    /// answer (the turn can wait for what the fault sets off); none = before the run.
    pub at_turn: Option<usize>,
    /// Relative to the cwd (`{home}/x` under HOME); resolved inside the sandbox, symlinks included.
    pub path: String,
    /// What it does.
    pub op: FaultOp,
}

/// What a fault does: the `kind` of a `[[fixture.fault]]` and the keys that kind takes (any other key is
/// an error of the probe file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultOp {
    /// `kind = "write"`, `content` (default empty).
    Write {
        /// The file's new content.
        content: String,
    },
    /// `kind = "delete"`: a file, a symlink (not its target) or a whole directory.
    Delete,
    /// `kind = "mkdir"`, with its parents.
    Mkdir,
    /// `kind = "chmod"`, `mode` (an octal string, default "0644").
    Chmod {
        /// The mode bits.
        mode: u32,
    },
    /// `kind = "symlink"`, `target` (required; placeholders resolved).
    Symlink {
        /// What the link points at, as written.
        target: String,
    },
    /// `kind = "touch"`, `mtime` (default: the time of the fault): like touch(1), the file is made
    /// empty when missing, then given the mtime.
    Touch {
        /// The mtime it sets.
        mtime: Option<files::Mtime>,
    },
}

impl FaultOp {
    /// The `kind` that names it.
    pub fn kind(&self) -> &'static str {
        match self {
            FaultOp::Write { .. } => "write",
            FaultOp::Delete => "delete",
            FaultOp::Mkdir => "mkdir",
            FaultOp::Chmod { .. } => "chmod",
            FaultOp::Symlink { .. } => "symlink",
            FaultOp::Touch { .. } => "touch",
        }
    }
}

/// The fault kinds and the keys each takes besides `kind`, `path` and `at_turn`.
pub const FAULT_KINDS: &[(&str, &[&str])] = &[
    ("write", &["content"]),
    ("delete", &[]),
    ("mkdir", &[]),
    ("chmod", &["mode"]),
    ("symlink", &["target"]),
    ("touch", &["mtime"]),
];

/// `[[fixture.fault]]` as written: every key any kind takes, checked against its kind by [`parse`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFault {
    #[serde(default)]
    pub(crate) at_turn: Option<Spanned<usize>>,
    pub(crate) kind: Spanned<String>,
    pub(crate) path: String,
    #[serde(default)]
    pub(crate) content: Option<Spanned<String>>,
    #[serde(default)]
    pub(crate) mode: Option<Spanned<String>>,
    #[serde(default)]
    pub(crate) target: Option<Spanned<String>>,
    #[serde(default)]
    pub(crate) mtime: Option<Spanned<files::Mtime>>,
}

/// `[fixture]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFixture {
    #[serde(default)]
    pub(crate) dir: Option<Spanned<String>>,
    #[serde(default)]
    pub(crate) files: BTreeMap<String, FileSpec>,
    #[serde(default)]
    pub(crate) fault: Vec<Spanned<RawFault>>,
}

/// `[fixture]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fixture {
    /// A directory under `fixtures/` copied into the cwd: a relative path that stays under it.
    pub dir: Option<String>,
    /// Inline files, relative to the cwd.
    pub files: BTreeMap<String, FileSpec>,
    /// Sandbox changes.
    pub fault: Vec<FsFault>,
}

/// `[subject.builtin]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuiltinOptions {
    /// Model named in requests (default `claude-opus-5`).
    #[serde(default)]
    pub model: Option<String>,
    /// Turn limit of the loop (default 50).
    #[serde(default)]
    pub max_turns: Option<usize>,
    /// Host parts this subject needs besides the probe's own `requires` ([`host`]).
    #[serde(default)]
    pub requires: Vec<String>,
    /// Why this subject runs unconfined on this probe ([`SubjectOptions::unconfined`], for one subject).
    #[serde(default)]
    pub unconfined: Option<String>,
}

/// `[subject.claude-code]` (used by the Claude Code subject): the options every subject other than the
/// built-in runtime takes ([`AgentOptions`]); its `args` are extra CLI arguments after the lab's recipe.
pub type ClaudeCodeOptions = AgentOptions;

/// `[subject.agent.NAME]`: the options of any other subject — a third-party agent (`opencode`, `pi`) or
/// a project's command subject (`copilot`, `my-agent`) — and of Claude Code (`[subject.claude-code]`,
/// [`ClaudeCodeOptions`]). The built-in runtime's table is its own (a model, a turn limit).
///
/// Decision: the table is `[subject.agent.NAME]`, not `[subject.NAME]`, so that `[subject]` keeps a
/// fixed set of keys (a misspelt `sesion_id` stays an unknown key, said at its place, not an agent
/// named so) and the parser's key list stays what `docs/probe-format.md` documents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentOptions {
    /// Arguments after the subject's own (Claude Code's recipe, a registered agent's launch, a command
    /// subject's `command`).
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment for this subject. Claude Code's goes over everything; another subject's goes under
    /// what the lab, its launch or its project table set, then the probe's `env` (docs/probe-format.md).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Host parts this subject needs besides the probe's own `requires` ([`host`]).
    #[serde(default)]
    pub requires: Vec<String>,
    /// Why this subject runs unconfined on this probe ([`SubjectOptions::unconfined`], for one subject).
    #[serde(default)]
    pub unconfined: Option<String>,
}

/// `[subject]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubjectOptions {
    /// The session's id on every subject (a UUID; default: the built-in subject's fixed
    /// `00000000-0000-4000-8000-000000000001`, Claude Code's own random one): the built-in runtime's
    /// `SessionConfig::session_id`, Claude Code's `--session-id`. It names the session's files under HOME
    /// (`.claude/projects/…/<id>…`); goldens show it as `<uuid>`.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Why this probe runs its subject unconfined (the lab confines every subject by default:
    /// [`crate::confine`]); a reason, never empty.
    #[serde(default)]
    pub unconfined: Option<String>,
    /// For the built-in subject.
    #[serde(default)]
    pub builtin: BuiltinOptions,
    /// For Claude Code.
    #[serde(default, rename = "claude-code")]
    pub claude_code: ClaudeCodeOptions,
    /// For every other subject, by its name (`[subject.agent.opencode]`): [`AgentOptions`].
    #[serde(default)]
    pub agent: BTreeMap<Spanned<String>, AgentOptions>,
}

impl SubjectOptions {
    /// The options of a subject that is neither the built-in runtime nor Claude Code, by its name.
    pub fn agent_options(&self, name: &str) -> Option<&AgentOptions> {
        self.agent.iter().find(|(k, _)| k.get_ref() == name).map(|(_, o)| o)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProbeFile {
    pub(crate) id: Spanned<String>,
    pub(crate) claims: Spanned<Vec<Spanned<String>>>,
    pub(crate) about: String,
    #[serde(default)]
    pub(crate) subjects: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    pub(crate) prompt: Option<String>,
    #[serde(default)]
    pub(crate) ask: AskAnswer,
    #[serde(default)]
    pub(crate) diverges: Vec<Spanned<Divergence>>,
    #[serde(default)]
    pub(crate) unordered: Option<Spanned<Vec<usize>>>,
    #[serde(default)]
    pub(crate) shape_varies: Option<Spanned<String>>,
    #[serde(default)]
    pub(crate) deadline_secs: Option<u64>,
    #[serde(default)]
    pub(crate) requires: Vec<Spanned<String>>,
    #[serde(default)]
    pub(crate) fixture: RawFixture,
    #[serde(default)]
    pub(crate) settings: Settings,
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) subject: SubjectOptions,
    #[serde(default)]
    pub(crate) host: HostScript,
    #[serde(default)]
    pub(crate) clock: Option<ClockSpec>,
    #[serde(default)]
    pub(crate) mcp_servers: BTreeMap<String, probelab_runtime::config::ServerSpec>,
    #[serde(default, rename = "plugin")]
    pub(crate) plugins: Vec<Spanned<probelab_runtime::config::PluginSpec>>,
    #[serde(default)]
    pub(crate) web: web::WebSpec,
    #[serde(default)]
    pub(crate) limits: Option<Spanned<crate::limits::LimitsSpec>>,
    // Parsed here, once: errors in them carry this file's place, and the stub's Script is made of them.
    #[serde(default, rename = "turn")]
    pub(crate) turns: Vec<Turn>,
    #[serde(default, rename = "conversation")]
    pub(crate) conversations: Vec<Conversation>,
    #[serde(default)]
    pub(crate) stub: StubSettings,
    #[serde(default, rename = "exec")]
    pub(crate) execs: Vec<Spanned<ExecSpec>>,
    #[serde(default, rename = "check")]
    pub(crate) checks: Vec<Spanned<RawCheck>>,
}

/// Subjects a probe can name in any project (a project's command subjects come on top: [`parse_with`]).
pub const SUBJECT_KINDS: &[&str] = &["builtin", "claude-code"];

/// What a project's probes may name: its subjects (the registered kinds and its command subjects) and
/// the claims of its own catalogue (besides `docs/claims.md`'s, which every project has).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    /// Subject names a probe's `subjects` and `diverges` may use.
    pub subjects: Vec<String>,
    /// Claim ids of the project's own catalogue.
    pub claims: Vec<String>,
    /// The most a probe's `[limits]` may set (`probelab.toml`'s `[limits]`; a key left out:
    /// [`crate::limits::DEFAULT_CAPS`]'s).
    pub caps: crate::limits::LimitsSpec,
}

impl Default for Known {
    /// What every project has: [`SUBJECT_KINDS`], no claims of its own.
    fn default() -> Known {
        Known {
            subjects: SUBJECT_KINDS.iter().map(|s| s.to_string()).collect(),
            claims: Vec::new(),
            caps: Default::default(),
        }
    }
}

/// What a probe that names no `subjects` runs on, in words: said once, for the docs, `probelab new` and
/// `probelab list` alike ([`default_subjects`] is the rule).
pub const DEFAULT_SUBJECTS: &str = r#"["builtin"] (["claude-code"] under probes/claude-code/)"#;

/// The subjects of a probe that names none: the built-in one — its checks speak the built-in runtime's
/// texts — except under `probes/claude-code/`, where it is a Claude Code probe: a probe runs on a subject
/// other than its directory's only when it says so.
pub fn default_subjects(path: &Path) -> Vec<String> {
    vec![if in_claude_code_dir(path) { "claude-code" } else { "builtin" }.to_string()]
}

/// Default deadline of a probe run.
pub const DEFAULT_DEADLINE_SECS: u64 = 60;

/// A parsed, validated probe.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The file it came from.
    pub path: PathBuf,
    /// Its text (for locating checks).
    pub source: String,
    /// Id.
    pub id: String,
    /// Claim ids.
    pub claims: Vec<String>,
    /// One line about it.
    pub about: String,
    /// Subjects it applies to (`builtin`, `claude-code`, a command subject): as written, or
    /// [`default_subjects`]; never empty.
    pub subjects: Vec<String>,
    /// First user message.
    pub prompt: String,
    /// Host's answer to asks.
    pub ask: AskAnswer,
    /// Facts this probe shows that contradict a claim, per subject.
    pub diverges: Vec<Divergence>,
    /// Results (numbered like `result = N`) whose line order is not the subject's decision — a search
    /// its engine runs on several threads prints in any order: their lines count as a set in the
    /// behaviour fingerprint and in `probelab diff` (and `diff --run`): conformance. Checks still see
    /// the text as it came.
    pub unordered: Vec<usize>,
    /// Why the shape of this probe's requests (where the cache markers sit) is not the subject's
    /// decision but the order in which concurrent events reached it (`shape_varies = "why"`): its
    /// transcripts leave the `cache_control:` lines out, so a golden and the interface's request-shape
    /// lines never depend on timing. None: they are kept.
    pub shape_varies: Option<String>,
    /// Deadline.
    pub deadline_secs: u64,
    /// Host parts every subject needs for this probe (`requires`; see [`host`]).
    pub requires: Vec<String>,
    /// Fixture.
    pub fixture: Fixture,
    /// Settings.
    pub settings: Settings,
    /// Env.
    pub env: BTreeMap<String, String>,
    /// Per-subject options.
    pub subject: SubjectOptions,
    /// The host's scripted answers (`[host]`: AskUserQuestion, plan approval).
    pub host: HostScript,
    /// A virtual clock for the built-in subject (`[clock]`: cron probes).
    pub clock: Option<ClockSpec>,
    /// MCP servers of the session (`[mcp_servers.<name>]` command / args / env, MCP-1): connected by the
    /// built-in runtime, given to Claude Code with `--mcp-config`.
    pub mcp_servers: BTreeMap<String, probelab_runtime::config::ServerSpec>,
    /// Plugins of the session (`[[plugin]]`, Claude Code's manifest shape) with their LSP servers
    /// (LSP-1..5): loaded by the built-in runtime, given to Claude Code as `--plugin-dir`s.
    pub plugins: Vec<probelab_runtime::config::PluginSpec>,
    /// The probe's web (`[web] pages."host/path" = { status, body, content_type, location, headers }`,
    /// WEB-1): served by the lab's web service; `{web}` in turns is its base URL.
    pub web: web::WebSpec,
    /// The limits of its runs where it sets its own (`[limits]`: processes, memory_mb, file_mb,
    /// disk_mb), within the project's caps ([`crate::limits`]).
    pub limits: crate::limits::LimitsSpec,
    /// The stub script (turns, conversations, stub settings) with placeholders unresolved.
    pub script: stub_messages::Script,
    /// Exec commands (an exec probe has these instead of turns).
    pub execs: Vec<ExecSpec>,
    /// Checks with their 1-based (line, col).
    pub checks: Vec<(Check, usize, usize)>,
}

use crate::subject::id::SubjectKind;

impl Probe {
    /// Why the probe runs `subject` unconfined, if it does: `[subject] unconfined`, else the subject's
    /// own table's.
    pub fn unconfined_on(&self, subject: &SubjectId) -> Option<&str> {
        let own = match subject.kind {
            SubjectKind::Builtin => &self.subject.builtin.unconfined,
            SubjectKind::ClaudeCode => &self.subject.claude_code.unconfined,
            SubjectKind::Agent(_) | SubjectKind::Command => {
                self.subject.agent_options(&subject.name).map_or(&None, |o| &o.unconfined)
            }
        };
        self.subject.unconfined.as_deref().or(own.as_deref())
    }

    /// The host parts the probe needs on a subject: its `requires`, the subject's own, and
    /// `confinement` (the kernel's namespaces or bubblewrap, [`crate::confine`]) for a probe whose
    /// subject — or exec command — runs confined (every one without `[subject] unconfined`).
    pub fn requires_on(&self, subject: &SubjectId) -> Vec<String> {
        let own: &[String] = match subject.kind {
            SubjectKind::Builtin => &self.subject.builtin.requires,
            SubjectKind::ClaudeCode => &self.subject.claude_code.requires,
            SubjectKind::Agent(_) | SubjectKind::Command => {
                self.subject.agent_options(&subject.name).map_or(&[], |o| &o.requires[..])
            }
        };
        let mut all: Vec<String> = self.requires.iter().chain(own).cloned().collect();
        // every loop probe's subject runs confined unless the probe says why not ([`crate::confine`])
        if self.unconfined_on(subject).is_none() && !all.iter().any(|r| r == CONFINEMENT) {
            all.push(CONFINEMENT.into());
        }
        all
    }

    /// True when the probe runs on `subject`: its `subjects` (never empty: [`parse`] fills in
    /// [`default_subjects`]) name it, or name the dialect it speaks (a command subject of Claude Code's
    /// dialect runs Claude Code's probes).
    pub fn applies_to(&self, subject: &SubjectId) -> bool {
        self.subjects.iter().any(|s| subject.answers_to(s))
    }

    /// The divergences from claims this probe shows on a subject (by its name: `claude-code@2.1.235` →
    /// `claude-code`).
    pub fn divergences_on(&self, subject: &SubjectId) -> Vec<&Divergence> {
        self.diverges.iter().filter(|d| d.subject == subject.name).collect()
    }

    /// Whether check `index` applies to a subject of `version` (the caller gives the built-in subject's as
    /// the reference version it imitates): `Err(range)` when it is scoped to versions that do not include
    /// it.
    pub fn check_applies(&self, index: usize, version: &semver::Version) -> Result<(), String> {
        let Some(range) = &self.checks[index].0.versions else { return Ok(()) };
        match semver::VersionReq::parse(range) {
            Ok(req) if req.matches(version) => Ok(()),
            _ => Err(range.clone()),
        }
    }

    /// `file:line` of a check, for failure messages.
    pub fn check_place(&self, index: usize) -> String {
        let (_, line, _) = self.checks[index];
        format!("{}:{line}", self.path.display())
    }
}

/// Tools a permission rule may name besides the built-in pool's: Claude Code's that the built-in runtime
/// lacks or names otherwise.
pub const REFERENCE_ONLY_TOOLS: &[&str] = &[
    "Task",
    "Agent",
    "MultiEdit",
    "LS",
    "NotebookRead",
    "WebSearch",
    "BashOutput",
    "KillShell",
    "KillBash",
    "SlashCommand",
];
