//! Probe files: the format (TOML), strict parsing with `file:line:col` errors and hints, discovery
//! under `probes/`, and the sandbox a probe runs in ([`sandbox`]). Every key, table by table:
//! `docs/probe-format.md`, kept equal to these types by [`keys`]'s test. In short:
//!
//! ```toml
//! id = "read.offset-limit"                   # unique; names the golden file
//! claims = ["READ-1", "READ-3"]              # ids from docs/claims.md
//! about = "offset/limit window, cat -n numbering"
//! subjects = ["builtin"]                     # default: ["builtin"] (["claude-code"] under probes/claude-code/)
//! prompt = "Read the file."                  # first user message (default: "Run the probe.")
//! ask = "deny"                               # how the host answers a permission ask (default deny)
//! deadline_secs = 60                         # the run must end within it
//! shape_varies = "why"                       # the requests' layout follows timing: no cache_control lines
//! requires = ["bwrap", "curl"]               # host parts it needs: skipped where missing (see host)
//!
//! [fixture]
//! dir = "read"                               # copied from fixtures/read into the cwd (optional)
//! files."f.txt" = "one\ntwo\n"               # inline files
//! files."big.txt" = { repeat = "x", bytes = 262145 }   # generated: `repeat` cycled to `bytes` bytes
//! files."old.txt" = { text = "x", mtime = -3600 }       # an mtime (also beside repeat / base64), see below
//! files."new.txt" = { text = "y", mtime = "2026-03-01T10:00:00.250Z" }
//! [[fixture.fault]]                          # a change to the sandbox, before the run or a turn
//! at_turn = 2                                # before main turn 2 is served (omit: before the run)
//! kind = "write"                             # write | delete | mkdir | chmod | symlink | touch
//! path = "f.txt"
//! content = "changed\n"
//! [[fixture.fault]]
//! kind = "touch"                             # made empty if missing; mtime = … (default: now)
//! path = "tree/a.txt"
//! mtime = 5.5
//!
//! [settings]                                 # Claude Code's settings.json shape
//! permissions = { deny = ["Read(secrets/**)"] }
//!
//! [mcp_servers.fixture]                      # an MCP server ({probelab} = this binary; MCP-1)
//! command = "{probelab}"
//! args = ["fake-mcp", "--trace", "{sandbox}/mcp-trace.jsonl"]
//!
//! [[plugin]]                                 # a plugin with LSP servers (LSP-1..5; Claude Code: --plugin-dir)
//! name = "probe-lsp"
//! lspServers.probe = { command = "{probelab}", args = ["fake-lsp", "--trace", "{sandbox}/lsp-trace.jsonl"],
//!                      extensionToLanguage = { ".probe" = "probe" } }
//!
//! [subject]
//! session_id = "11111111-2222-4333-8444-555555555555"   # the session's id on both subjects (a UUID)
//! unconfined = "why"                         # run the subject outside the lab's confinement (a reason)
//! [subject.builtin]                          # model, max_turns, requires, unconfined
//! [subject.claude-code]                      # args, env, requires, unconfined
//!
//! [env]                                      # environment of the subject
//! CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS = "100"
//!
//! [[turn]]                                   # stub-messages' turn format; {cwd} {home} {sandbox}
//! tool_use = [{ name = "Read", input = { file_path = "{cwd}/f.txt" } }]
//! [[turn]]
//! tool_use = [{ id = "edit", name = "Edit", input = { file_path = "{cwd}/f.txt", old_string = "one", new_string = "1" } }]
//! [[turn]]
//! text = "done"
//!
//! [[check]]                                  # result = N | result = "ID" | request = N | file = "path"
//! result = 1                                 # the 1st scripted tool_use of the main conversation
//! is_error = false
//! contains = "1\tone"
//! [[check]]
//! result = "edit"                            # the tool_use given id = "edit" (unique in the probe; also
//! matches = '^The file {cwd}/f\.txt has'     # its wire id): inserting a turn renumbers nothing
//! ```
//!
//! Mtimes: every fixture file (inline or from `dir`) gets a distinct fixed mtime in path order, the
//! first 2026-01-01T00:00:00Z, one second apart (`sandbox::FIXTURE_MTIME_BASE`); a file's own `mtime`
//! overrides its stamp, and faults before the run (a `touch`) come after both. An `mtime` is seconds on
//! that clock (0 = the first file's stamp, fractions for milliseconds, negative = earlier) or an
//! absolute RFC 3339 time.
//!
//! Placeholders (`{cwd}`, `{home}`, `{sandbox}`, `{probelab}`, `{web}`, `{artifact}`) are resolved in tool
//! inputs and in every check text; inside `matches` each becomes its value as an escaped literal
//! (`regex::escape`), so a path's `.` or `+` matches only itself (`\{cwd}`, the spelling of the former rule,
//! is read as `{cwd}`).

pub mod checks;
pub mod files;
pub mod host;
pub mod keys;
pub mod placeholders;
pub mod sandbox;
pub mod values;
pub mod web;

pub use checks::{Check, JsonCheck, OneOrMany, RawCheck, ResultRef, Target};
pub use files::FileSpec;

use crate::subject::id::SubjectId;
use host::CONFINEMENT;
use probelab_runtime::config::ClockSpec;
use probelab_runtime::config::HostScript;
use probelab_runtime::settings::{AskAnswer, Settings};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use stub_messages::script::{line_col, Conversation, StubSettings, Turn};
use toml::Spanned;

/// A probe file that cannot be used: where, what, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{col}: {message}{}", hint.as_ref().map(|h| format!("\n  hint: {h}")).unwrap_or_default())]
pub struct ProbeError {
    /// The probe file.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

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
struct RawFault {
    #[serde(default)]
    at_turn: Option<Spanned<usize>>,
    kind: Spanned<String>,
    path: String,
    #[serde(default)]
    content: Option<Spanned<String>>,
    #[serde(default)]
    mode: Option<Spanned<String>>,
    #[serde(default)]
    target: Option<Spanned<String>>,
    #[serde(default)]
    mtime: Option<Spanned<files::Mtime>>,
}

/// `[fixture]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFixture {
    #[serde(default)]
    dir: Option<Spanned<String>>,
    #[serde(default)]
    files: BTreeMap<String, FileSpec>,
    #[serde(default)]
    fault: Vec<Spanned<RawFault>>,
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

/// `[subject.claude-code]` (used by the Claude Code subject).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaudeCodeOptions {
    /// Extra CLI arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment.
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
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProbeFile {
    id: Spanned<String>,
    claims: Spanned<Vec<Spanned<String>>>,
    about: String,
    #[serde(default)]
    subjects: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    ask: AskAnswer,
    #[serde(default)]
    diverges: Vec<Spanned<Divergence>>,
    #[serde(default)]
    unordered: Option<Spanned<Vec<usize>>>,
    #[serde(default)]
    shape_varies: Option<Spanned<String>>,
    #[serde(default)]
    deadline_secs: Option<u64>,
    #[serde(default)]
    requires: Vec<Spanned<String>>,
    #[serde(default)]
    fixture: RawFixture,
    #[serde(default)]
    settings: Settings,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    subject: SubjectOptions,
    #[serde(default)]
    host: HostScript,
    #[serde(default)]
    clock: Option<ClockSpec>,
    #[serde(default)]
    mcp_servers: BTreeMap<String, probelab_runtime::config::ServerSpec>,
    #[serde(default, rename = "plugin")]
    plugins: Vec<Spanned<probelab_runtime::config::PluginSpec>>,
    #[serde(default)]
    web: web::WebSpec,
    #[serde(default)]
    limits: Option<Spanned<crate::limits::LimitsSpec>>,
    // Parsed here, once: errors in them carry this file's place, and the stub's Script is made of them.
    #[serde(default, rename = "turn")]
    turns: Vec<Turn>,
    #[serde(default, rename = "conversation")]
    conversations: Vec<Conversation>,
    #[serde(default)]
    stub: StubSettings,
    #[serde(default, rename = "exec")]
    execs: Vec<Spanned<ExecSpec>>,
    #[serde(default, rename = "check")]
    checks: Vec<Spanned<RawCheck>>,
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
            _ => &None,
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
            _ => &[],
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
    pub fn check_applies(&self, index: usize, version: &str) -> Result<(), String> {
        let Some(range) = &self.checks[index].0.versions else { return Ok(()) };
        let req = semver::VersionReq::parse(range).map_err(|_| range.clone())?;
        match semver::Version::parse(version) {
            Ok(v) if req.matches(&v) => Ok(()),
            _ => Err(range.clone()),
        }
    }

    /// `file:line` of a check, for failure messages.
    pub fn check_place(&self, index: usize) -> String {
        let (_, line, _) = self.checks[index];
        format!("{}:{line}", self.path.display())
    }
}

/// Parses a probe file's text (it may name what every project has: [`Known::default`]).
pub fn parse(path: &Path, text: &str) -> Result<Probe, ProbeError> {
    parse_with(path, text, &Known::default())
}

/// Parses a probe file's text; its `subjects` and `diverges` may name `known.subjects`, its `claims`
/// the catalogue's and `known.claims`.
pub fn parse_with(path: &Path, text: &str, known: &Known) -> Result<Probe, ProbeError> {
    let subjects_known: Vec<&str> = known.subjects.iter().map(String::as_str).collect();
    let at = At { file: path.display().to_string(), text };
    let raw: ProbeFile = toml::from_str(text).map_err(|e| at.toml_error(&e))?;
    let id = at.id(&raw)?;
    let claims = at.claims(&raw, known)?;
    let diverges = at.diverges(&raw, &claims, &subjects_known)?;
    let requires = at.requires(&raw)?;
    let limits = at.limits(&raw, known)?;
    at.permissions(&raw)?;
    let subjects = at.subjects(&raw, path, &subjects_known)?;
    at.unique_tool_use_ids(&raw)?;
    let script = at.script(&raw, &id)?;
    let main_turns = script.turns.len();
    let tool_uses: usize = script.turns.iter().map(|t| t.tool_use.len()).sum();
    let main_ids: Vec<Option<&str>> = script.turns.iter().flat_map(|t| &t.tool_use).map(|u| u.id.as_deref()).collect();
    let unordered = raw.unordered.as_ref().map(|u| (u.get_ref().clone(), u.span().start)).unwrap_or_default();
    if let Some(n) = unordered.0.iter().find(|n| **n == 0 || **n > tool_uses) {
        return Err(at.err(
            unordered.1,
            format!("unordered names result {n}, but the main conversation scripts {tool_uses} tool_use block(s)"),
            Some("results are numbered from 1 in script order, across turns"),
        ));
    }
    if let Some(why) = &raw.shape_varies {
        if why.get_ref().chars().filter(|c| c.is_alphanumeric()).count() < 2 {
            return Err(at.err(
                why.span().start,
                "shape_varies needs a reason in words".to_string(),
                Some("say what makes the requests' layout vary between runs, e.g. shape_varies = \"a message joins the tool result or comes alone, as it arrives\""),
            ));
        }
    }
    at.fixture_dir(&raw)?;
    let mut faults = Vec::new();
    for f in &raw.fixture.fault {
        faults.push(fault(f.get_ref(), main_turns).map_err(|(o, msg, hint)| at.err(o, msg, hint))?);
    }
    value_problems(&raw, text).map_err(|(o, msg, hint)| at.err(o, msg, hint))?;
    if raw.execs.is_empty() == script.turns.is_empty() {
        let msg = if raw.execs.is_empty() {
            "the probe has no [[turn]] and no [[exec]]"
        } else {
            "a probe has [[turn]]s or [[exec]]s, not both"
        };
        let hint = "a loop probe scripts the model with [[turn]]; an exec probe runs [[exec]] commands";
        return Err(at.err(0, msg.into(), Some(hint)));
    }
    at.subject_options(&raw)?;
    at.fixture_mtimes(&raw)?;
    let plugins = at.plugins(&raw)?;
    let checks = at.checks(&raw, &checks::Names { main_turns, main_ids, execs: raw.execs.len() })?;
    Ok(Probe {
        path: path.to_path_buf(),
        source: text.to_string(),
        id,
        claims,
        about: raw.about,
        subjects,
        prompt: raw.prompt.unwrap_or_else(|| "Run the probe.".into()),
        ask: raw.ask,
        diverges,
        unordered: unordered.0,
        shape_varies: raw.shape_varies.as_ref().map(|w| w.get_ref().clone()),
        deadline_secs: raw.deadline_secs.unwrap_or(DEFAULT_DEADLINE_SECS),
        requires,
        fixture: Fixture { dir: raw.fixture.dir.map(Spanned::into_inner), files: raw.fixture.files, fault: faults },
        settings: raw.settings,
        env: raw.env,
        subject: raw.subject,
        host: raw.host,
        clock: raw.clock,
        mcp_servers: raw.mcp_servers,
        plugins,
        web: raw.web,
        limits,
        script,
        execs: raw.execs.into_iter().map(Spanned::into_inner).collect(),
        checks,
    })
}

/// A probe file being parsed: where its errors point (offsets in its text become line:col), and the
/// steps of [`parse_with`], each a rule of the format checked in the order the errors are reported.
struct At<'a> {
    file: String,
    text: &'a str,
}

impl At<'_> {
    /// An error at `offset` of the text.
    fn err(&self, offset: usize, message: String, hint: Option<&str>) -> ProbeError {
        let (line, col) = line_col(self.text, offset);
        ProbeError { file: self.file.clone(), line, col, message, hint: hint.map(str::to_string) }
    }

    /// The probe's `[limits]`: each at least 1 and within the project's caps.
    fn limits(&self, raw: &ProbeFile, known: &Known) -> Result<crate::limits::LimitsSpec, ProbeError> {
        let Some(l) = &raw.limits else { return Ok(Default::default()) };
        let Some((key, v, cap)) = l.get_ref().refused(&known.caps) else { return Ok(*l.get_ref()) };
        let at = key_offset(self.text, table_region(self.text, l.span()), key).unwrap_or(l.span().start);
        Err(if cap == 0 {
            self.err(
                at,
                format!("[limits] {key} = 0 leaves the subject nothing"),
                Some("a limit is at least 1; leave the key out for the default"),
            )
        } else {
            self.err(
                at,
                format!("[limits] {key} = {v} is over the project's cap of {cap}"),
                Some("probelab.toml's [limits] sets the caps (by default four times each default limit)"),
            )
        })
    }

    /// The TOML parser's error, on the key it is about, with a hint for the usual mistakes.
    fn toml_error(&self, e: &toml::de::Error) -> ProbeError {
        let text = self.text;
        let msg = for_users(e.message().trim_end());
        let span = e.span().unwrap_or(0..0);
        // an unknown field's error spans its whole table (the document, at the top level): on the key
        let unknown = msg.strip_prefix("unknown field `").and_then(|r| r.split('`').next());
        let region = if span.start == 0 { 0..first_header(text).unwrap_or(text.len()) } else { span.clone() };
        let offset = unknown.and_then(|k| key_offset(text, region, k)).unwrap_or(span.start);
        let hint = if msg.contains("unknown field") {
            Some("see the probe format in harness/src/probe/mod.rs (or `probelab new NAME` for a commented skeleton)")
        } else if let Some(field) = msg.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
            // the top level's own fields, or a table's (whose error spans that table)
            let top = ["id", "claims", "about"].contains(&field) && (span.start == 0 || first_header(text) == Some(0));
            Some(if top {
                "every probe needs id, claims and about"
            } else {
                "the table needs this key: see its keys in docs/probe-format.md"
            })
        } else {
            None
        };
        self.err(offset, msg, hint)
    }

    /// The id: path-safe (it names golden files).
    fn id(&self, raw: &ProbeFile) -> Result<String, ProbeError> {
        let id = raw.id.get_ref().clone();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) {
            return Err(self.err(
                raw.id.span().start,
                format!("probe id {id:?} must be non-empty [A-Za-z0-9._-]"),
                Some("ids name golden files: keep them path-safe"),
            ));
        }
        Ok(id)
    }

    /// The claims: at least one, each in the catalogue or the project's own.
    fn claims(&self, raw: &ProbeFile, known: &Known) -> Result<Vec<String>, ProbeError> {
        if raw.claims.get_ref().is_empty() {
            return Err(self.err(
                raw.claims.span().start,
                "claims is empty".into(),
                Some("name the claim ids this probe checks (docs/claims.md)"),
            ));
        }
        let mut claims = Vec::new();
        for c in raw.claims.get_ref() {
            if !crate::claims::exists(c.get_ref()) && !known.claims.contains(c.get_ref()) {
                return Err(self.err(
                    c.span().start,
                    format!("claim {:?} is not in the catalogue", c.get_ref()),
                    Some("claim ids are listed in docs/claims.md and the project's own `claims` file (`probelab list` prints them)"),
                ));
            }
            claims.push(c.get_ref().clone());
        }
        Ok(claims)
    }

    /// The divergences: each of a cited claim, on a subject there is.
    fn diverges(
        &self,
        raw: &ProbeFile,
        claims: &[String],
        subjects_known: &[&str],
    ) -> Result<Vec<Divergence>, ProbeError> {
        let mut diverges = Vec::new();
        for d in &raw.diverges {
            let v = d.get_ref();
            if !claims.contains(&v.claim) {
                let msg = format!("diverges names claim {:?}, which this probe does not cite", v.claim);
                return Err(self.err(d.span().start, msg, Some("add it to claims, or name a cited claim")));
            }
            if !subjects_known.contains(&v.subject.as_str()) {
                return Err(self.err(
                    d.span().start,
                    format!("unknown subject {:?}", v.subject),
                    Some(&format!("the subjects are {}", subjects_known.join(", "))),
                ));
            }
            diverges.push(v.clone());
        }
        Ok(diverges)
    }

    /// The host parts required (the probe's and its subjects'): each a part there can be; a probe that
    /// turns the Bash sandbox on requires bubblewrap.
    fn requires(&self, raw: &ProbeFile) -> Result<Vec<String>, ProbeError> {
        let text = self.text;
        let subject_requires = raw.subject.builtin.requires.iter().chain(&raw.subject.claude_code.requires);
        for r in raw.requires.iter().map(|r| (r.get_ref(), r.span().start)).chain(subject_requires.map(|r| (r, 0))) {
            if !host::valid_name(r.0) {
                return Err(self.err(
                    r.1,
                    format!("requires names {:?}, which is not a host part", r.0),
                    Some(
                        "a command on PATH (`curl`), a known part (`bwrap`, `socat`, `chromium`…) or `python3:MODULE`",
                    ),
                ));
            }
        }
        let requires = raw.requires.iter().map(|r| r.get_ref().clone()).collect();
        let needs_bwrap = raw.settings.sandbox.enabled;
        let declares_bwrap =
            raw.requires.iter().map(|r| r.get_ref()).chain(&raw.subject.builtin.requires).any(|r| r == "bwrap");
        if needs_bwrap && !declares_bwrap {
            let at = key_offset(text, 0..text.len(), "enabled").unwrap_or(0);
            return Err(self.err(
                at,
                "the probe turns the Bash sandbox on ([settings.sandbox] enabled) but does not require bubblewrap"
                    .into(),
                Some("add requires = [\"bwrap\"]: where bubblewrap is missing the probe is skipped, not failed"),
            ));
        }
        Ok(requires)
    }

    /// The permission rules of `[settings]`: each one a rule Claude Code reads.
    fn permissions(&self, raw: &ProbeFile) -> Result<(), ProbeError> {
        let text = self.text;
        let perms = &raw.settings.permissions;
        for (list, rules) in [("allow", &perms.allow), ("ask", &perms.ask), ("deny", &perms.deny)] {
            for r in rules {
                if let Err(why) = rule_problem(r) {
                    let at =
                        string_offset(text, r).unwrap_or_else(|| key_offset(text, 0..text.len(), list).unwrap_or(0));
                    let hint = "`Tool` or `Tool(pattern)`: a tool of the pool or of Claude Code, mcp__server__tool; \
                         path patterns are gitignore globs, Bash(cmd:*) / Bash(cmd *), WebFetch(domain:HOST)";
                    return Err(self.err(at, format!("permissions.{list}: {why}"), Some(hint)));
                }
            }
        }
        Ok(())
    }

    /// The subjects the probe runs on: those it names, each one there is, or the default of its place.
    fn subjects(&self, raw: &ProbeFile, path: &Path, subjects_known: &[&str]) -> Result<Vec<String>, ProbeError> {
        let Some(named) = &raw.subjects else { return Ok(default_subjects(path)) };
        let mut subjects = Vec::new();
        for s in named {
            if !subjects_known.contains(&s.get_ref().as_str()) {
                return Err(self.err(
                    s.span().start,
                    format!("unknown subject {:?}", s.get_ref()),
                    Some(&format!(
                        "the subjects are {} (a project's own: [subjects.NAME] in probelab.toml)",
                        subjects_known.join(", ")
                    )),
                ));
            }
            subjects.push(s.get_ref().clone());
        }
        Ok(subjects)
    }

    /// The ids probes give tool_uses name them for checks: unique across the whole script.
    fn unique_tool_use_ids(&self, raw: &ProbeFile) -> Result<(), ProbeError> {
        let mut seen = std::collections::BTreeSet::new();
        let every_turn = raw.turns.iter().chain(raw.conversations.iter().flat_map(|c| &c.turns));
        for id in every_turn.flat_map(|t| &t.tool_use).filter_map(|u| u.id.as_deref()) {
            if !seen.insert(id) {
                let at = self.text.match_indices(&format!("\"{id}\"")).nth(1).map(|(i, _)| i).unwrap_or(0);
                let hint = "an id names one tool_use (checks say result = \"ID\"), and the API refuses repeated ids";
                return Err(self.err(at, format!("tool_use id {id:?} is given twice"), Some(hint)));
            }
        }
        Ok(())
    }

    /// The stub's script of the probe's turns and conversations (its errors on the turn they are about).
    fn script(&self, raw: &ProbeFile, id: &str) -> Result<stub_messages::Script, ProbeError> {
        let (file, turns, conversations) = (&self.file, raw.turns.clone(), raw.conversations.clone());
        stub_messages::Script::from_parts(file, id, turns, conversations, raw.stub.clone()).map_err(|e| {
            let msg = e.0.strip_prefix(&format!("{file}: ")).unwrap_or(&e.0).to_string();
            self.err(
                turn_offset(self.text, &msg).unwrap_or(0),
                msg,
                Some("see the turn format in stub-messages/src/script.rs"),
            )
        })
    }

    /// `[fixture] dir`: a relative path under fixtures/.
    fn fixture_dir(&self, raw: &ProbeFile) -> Result<(), ProbeError> {
        let Some(d) = &raw.fixture.dir else { return Ok(()) };
        let p = Path::new(d.get_ref());
        let escapes = d.get_ref().is_empty()
            || p.components().any(|c| !matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir));
        if escapes {
            return Err(self.err(
                d.span().start,
                format!("fixture dir {:?} is not a relative path under fixtures/", d.get_ref()),
                Some("name a directory under fixtures/, e.g. dir = \"lsp/pyproj\" (no absolute path, no `..`)"),
            ));
        }
        Ok(())
    }

    /// `[subject]`'s options: an `unconfined` says why, a `session_id` is a UUID.
    fn subject_options(&self, raw: &ProbeFile) -> Result<(), ProbeError> {
        let text = self.text;
        let reasons = [&raw.subject.unconfined, &raw.subject.builtin.unconfined, &raw.subject.claude_code.unconfined];
        // a reason is words: blanks, zero-width and other invisible characters alone say nothing
        let says_nothing = |why: &String| why.chars().filter(|c| c.is_alphanumeric()).count() < 2;
        if reasons.iter().any(|r| r.as_ref().is_some_and(says_nothing)) {
            let blank = regex::Regex::new(r#"(?m)^[ \t]*unconfined[ \t]*=[ \t]*("\s*"|'\s*')"#).ok();
            let key =
                blank.filter(|b| b.is_match(text)).or_else(|| regex::Regex::new(r"(?m)^[ \t]*unconfined[ \t]*=").ok());
            let at = key.and_then(|k| k.find(text)).map(|m| m.start()).unwrap_or(0);
            let hint =
                "say why the subject must run with the host writable, e.g. unconfined = \"measures the host's own /tmp\"";
            return Err(self.err(at, "unconfined needs a reason".into(), Some(hint)));
        }
        if let Some(id) = &raw.subject.session_id {
            if !is_uuid(id) {
                let key = regex::Regex::new(r"(?m)^[ \t]*session_id[ \t]*=").ok();
                let at = key.and_then(|k| k.find(text)).map(|m| m.start()).unwrap_or(0);
                let hint = "Claude Code's --session-id takes a UUID, e.g. \"11111111-2222-4333-8444-555555555555\"";
                return Err(self.err(at, format!("session_id {id:?} is not a UUID"), Some(hint)));
            }
        }
        Ok(())
    }

    /// The fixture files' mtimes: each a time on the fixture's clock.
    fn fixture_mtimes(&self, raw: &ProbeFile) -> Result<(), ProbeError> {
        for (rel, spec) in &raw.fixture.files {
            if let Some(Err(e)) = spec.mtime().map(files::Mtime::time) {
                let at = self.text.find(&format!("\"{rel}\"")).unwrap_or(0);
                let hint = "seconds on the fixture's clock (0 = 2026-01-01T00:00:00Z) or an RFC 3339 time";
                return Err(self.err(at, format!("fixture file {rel:?}: {e}"), Some(hint)));
            }
        }
        Ok(())
    }

    /// The plugins: each one Claude Code would load.
    fn plugins(&self, raw: &ProbeFile) -> Result<Vec<probelab_runtime::config::PluginSpec>, ProbeError> {
        let mut plugins = Vec::new();
        for p in &raw.plugins {
            if let Some(problem) = p.get_ref().problem() {
                let hint = "see `lspServers.NAME` in docs/probe-format.md";
                return Err(self.err(p.span().start, format!("plugin: {problem}"), Some(hint)));
            }
            plugins.push(p.get_ref().clone());
        }
        Ok(plugins)
    }

    /// The checks, typed against what the script names (turns, tool_use ids, execs), each with its line
    /// and column; an error on the key it is about.
    fn checks(&self, raw: &ProbeFile, names: &checks::Names<'_>) -> Result<Vec<(Check, usize, usize)>, ProbeError> {
        let text = self.text;
        let mut out = Vec::new();
        for c in &raw.checks {
            let at = c.span().start;
            let region = table_region(text, c.span());
            let check = c.get_ref().typed(names).map_err(|e| {
                let key_at = |k: &str| key_offset(text, region.clone(), k);
                // a check that asserts nothing: an empty list (`json = []`) reads as absent, and is to blame
                let empty_list = checks::EMPTY_LIST_KEYS.iter().find_map(|k| key_at(k).map(|o| (*k, o)));
                let (at, message) = match (e.key, empty_list) {
                    (Some(k), _) => (key_at(k).unwrap_or(at), e.message),
                    (None, Some((k, o))) if e.asserts_nothing => (o, format!("`{k}` is empty: it asserts nothing")),
                    _ => (at, e.message),
                };
                self.err(at, message, e.hint.as_deref())
            })?;
            let (line, col) = line_col(text, at);
            out.push((check, line, col));
        }
        Ok(out)
    }
}

/// A deserializer's message as a probe's author reads it: the forms a value may take instead of serde's
/// "data did not match any variant of untagged enum X", numbers without the width they were read at.
fn for_users(msg: &str) -> String {
    const FORMS: &[(&str, &str)] = &[
        (
            "ResultRef",
            "a result is a number (result = 2: the 2nd scripted tool_use) or a tool_use's id (result = \"edit\")",
        ),
        ("OneOrMany", "the value is a string or a list of strings"),
        (
            "FileSpec",
            "a file is a string, { text = … }, { repeat = …, bytes = N } or { base64 = … } (each table may add mtime)",
        ),
        ("Mtime", "an mtime is seconds on the fixture's clock (a number) or an RFC 3339 time (a string)"),
    ];
    let mut out = msg.to_string();
    if let Some(i) = out.find("data did not match any variant of untagged enum ") {
        let rest = &out[i + "data did not match any variant of untagged enum ".len()..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let forms = FORMS.iter().find(|(n, _)| *n == name).map(|(_, f)| f.to_string());
        let forms = forms.unwrap_or_else(|| "the value has none of the forms this key takes".to_string());
        out = format!("{}{forms}{}", &out[..i], &rest[name.len()..]);
    }
    for width in [" as i128", " as u128", " as i64", " as u64", " as f64"] {
        out = out.replace(width, "");
    }
    // TOML's integers are 64-bit: a longer one is read as a number of no type at all
    if let Some(n) = out.strip_prefix("invalid type: integer `").and_then(|r| r.strip_suffix("`, expected any value")) {
        out = format!("integer {n} is out of range (at most 9223372036854775807)");
    }
    out
}

/// Every value problem of a parsed probe file, the first one found.
fn value_problems(raw: &ProbeFile, text: &str) -> Result<(), values::Problem> {
    let top = 0..first_header(text).unwrap_or(text.len());
    let deadline = raw.deadline_secs.unwrap_or(DEFAULT_DEADLINE_SECS);
    if !(1..=values::MAX_DEADLINE_SECS).contains(&deadline) {
        let at = key_offset(text, top.clone(), "deadline_secs").unwrap_or(0);
        return Err((
            at,
            format!("deadline_secs = {deadline} is out of range"),
            Some("a deadline is 1 to 86400 seconds (a day)"),
        ));
    }
    time_problems(raw, text, deadline)?;
    fixture_problems(raw, text)?;
    web_problems(raw, text)?;
    settings_problems(raw, text)?;
    placeholder_problems(raw, text)
}

/// The times a probe gives within their ranges, and within its deadline: its execs' (and their argv
/// not empty), the built-in's turn limit, the clock's, its checks' durations, the script's waits and
/// delays and its web's (a wait of u64::MAX ms overflowed the stub's clock).
fn time_problems(raw: &ProbeFile, text: &str, deadline: u64) -> Result<(), values::Problem> {
    for e in &raw.execs {
        let at = e.span().start;
        let region = table_region(text, e.span());
        if e.get_ref().argv.is_empty() {
            let at = key_offset(text, region, "argv").unwrap_or(at);
            return Err((
                at,
                "exec argv is empty".into(),
                Some("argv = [\"{rg}\", \"-n\", \"x\"]: a program and its arguments"),
            ));
        }
        if let Some(ms) = e.get_ref().deadline_ms {
            if ms == 0 || ms > deadline * 1000 {
                let at = key_offset(text, region, "deadline_ms").unwrap_or(at);
                let msg = format!("exec deadline_ms = {ms} is out of range: 1 to the probe's deadline ({deadline} s)");
                return Err((at, msg, Some("raise deadline_secs for a longer command")));
            }
        }
    }
    if let Some(n) = raw.subject.builtin.max_turns {
        if !(1..=values::MAX_TURNS).contains(&n) {
            let at = key_offset(text, 0..text.len(), "max_turns").unwrap_or(0);
            return Err((at, format!("max_turns = {n} is out of range"), Some("max_turns is 1 to 100000")));
        }
    }
    if let Some(clock) = &raw.clock {
        if !(0..=values::MAX_PER_REQUEST_MS).contains(&clock.per_request_ms) {
            let at = key_offset(text, 0..text.len(), "per_request").unwrap_or(0);
            let msg = format!("per_request = {} ms is out of range", clock.per_request_ms);
            return Err((at, msg, Some("a request takes 0 to a day of the probe's clock")));
        }
        if clock.max_idle_fires > values::MAX_IDLE_FIRES {
            let at = key_offset(text, 0..text.len(), "max_idle_fires").unwrap_or(0);
            let msg = format!("max_idle_fires = {} is out of range", clock.max_idle_fires);
            return Err((at, msg, Some("max_idle_fires is at most 10000")));
        }
    }
    for c in &raw.checks {
        if let Some(ms) = c.get_ref().max_duration_ms {
            if ms > deadline * 1000 {
                let at = key_offset(text, table_region(text, c.span()), "max_duration_ms").unwrap_or(c.span().start);
                let msg =
                    format!("max_duration_ms = {ms} is out of range: at most the probe's deadline ({deadline} s)");
                return Err((at, msg, Some("a command cannot take longer than the probe's deadline")));
            }
        }
    }
    // the script's times: within the deadline (a wait of u64::MAX ms overflowed the stub's clock)
    let bound_ms = deadline * 1000;
    let turns = raw.turns.iter().chain(raw.conversations.iter().flat_map(|c| &c.turns));
    let mut times = Vec::new();
    for t in turns {
        times.push(("delay_ms", t.delay_ms));
        times.extend(t.wait.as_ref().and_then(|w| w.timeout_ms).map(|ms| ("timeout_ms", ms)));
    }
    times.extend(raw.web.pages.values().map(|p| ("delay_ms", p.delay_ms)));
    if let Some((key, ms)) = times.into_iter().find(|(_, ms)| *ms > bound_ms) {
        let at = key_offset(text, 0..text.len(), key).unwrap_or(0);
        let msg = format!("{key} = {ms} is out of range: at most the probe's deadline ({deadline} s)");
        return Err((at, msg, Some("raise deadline_secs (at most 86400) for a longer wait")));
    }
    Ok(())
}

/// The fixture's files and faults: paths inside the sandbox, file specs that say one thing.
fn fixture_problems(raw: &ProbeFile, text: &str) -> Result<(), values::Problem> {
    for (rel, spec) in &raw.fixture.files {
        let at = string_offset(text, rel).unwrap_or(0);
        if let Some(why) = values::sandbox_path_problem(rel) {
            return Err((at, format!("fixture file {why}"), Some("fixture files are written inside the sandbox")));
        }
        if let Some(why) = files::spec_problem(spec) {
            return Err((at, format!("fixture file {rel:?}: {why}"), None));
        }
    }
    for f in &raw.fixture.fault {
        let f = f.get_ref();
        if let Some(why) = values::sandbox_path_problem(&f.path) {
            let at = string_offset(text, &f.path).unwrap_or(f.kind.span().start);
            return Err((at, format!("fixture fault path {why}"), Some("faults change the sandbox only")));
        }
    }
    Ok(())
}

/// The probe's web: HTTP statuses, body specs, the pages' own rules.
fn web_problems(raw: &ProbeFile, text: &str) -> Result<(), values::Problem> {
    for (key, page) in &raw.web.pages {
        let at = string_offset(text, key).unwrap_or(0);
        if let Some(s) = page.status {
            if !(100..=999).contains(&s) {
                return Err((
                    at,
                    format!("[web] page {key:?}: status {s} is not an HTTP status"),
                    Some("100 to 999, e.g. 404"),
                ));
            }
        }
        if let Some(why) = page.body.as_ref().and_then(files::spec_problem) {
            return Err((at, format!("[web] page {key:?}: {why}"), None));
        }
    }
    if let Err(e) = raw.web.validate() {
        let at = key_offset(text, 0..text.len(), "pages").unwrap_or(0);
        return Err((at, e, None));
    }
    Ok(())
}

/// `[settings]`: a permission mode there is, hook events there are.
fn settings_problems(raw: &ProbeFile, text: &str) -> Result<(), values::Problem> {
    if let Some(mode) = &raw.settings.permissions.default_mode {
        if !values::PERMISSION_MODES.contains(&mode.as_str()) {
            let at = string_offset(text, mode).unwrap_or(0);
            return Err((
                at,
                format!("permissions.defaultMode {mode:?} is not a permission mode"),
                Some("default, acceptEdits, bypassPermissions, dontAsk or plan"),
            ));
        }
    }
    for event in raw.settings.hooks.keys() {
        if !values::HOOK_EVENTS.contains(&event.as_str()) {
            let at =
                text.find(&format!("hooks.{event}")).map(|i| i + 6).or_else(|| string_offset(text, event)).unwrap_or(0);
            let near = values::HOOK_EVENTS.iter().find(|e| e.eq_ignore_ascii_case(event));
            let msg = match near {
                Some(n) => format!("hook event {event:?} is not an event (did you mean {n:?}?)"),
                None => format!("hook event {event:?} is not an event"),
            };
            return Err((at, msg, Some("events: PreToolUse, PostToolUse, UserPromptSubmit, Stop, SubagentStop, …")));
        }
    }
    Ok(())
}

/// Every placeholder a probe writes is one a run defines ([`placeholders::PLACEHOLDERS`], `{rg}` as
/// an exec's program): in waits, fixture and fault paths, link targets, exec argv, server commands and
/// check targets any other `{word}` is an error, in tool inputs one that starts a path or stands beside a
/// `/` (`{bogus}/f.txt`); in every other text (a tool's code, the texts a check expects, which may hold
/// the subject's own braces, `EnterWorktree({path})`) a word one edit from a placeholder (`{cdw}`).
fn placeholder_problems(raw: &ProbeFile, text: &str) -> Result<(), values::Problem> {
    const HINT: Option<&str> =
        Some("placeholders are {cwd} {home} {sandbox} {probelab} {web} {artifact} ({rg}: an exec's program)");
    let defined = |n: &str| placeholders::PLACEHOLDERS.contains(&n);
    let place = |name: &str| text.find(&format!("{{{name}}}")).unwrap_or(0);
    let strict = |s: &str, rg: bool| -> Result<(), values::Problem> {
        for (_, name) in values::placeholder_names(s) {
            if !(defined(name) || rg && name == "rg") {
                let msg = match values::near(name) {
                    Some(p) => format!("{{{name}}} is not a placeholder (did you mean {{{p}}}?)"),
                    None => format!("{{{name}}} is not a placeholder"),
                };
                return Err((place(name), msg, HINT));
            }
        }
        Ok(())
    };
    let loose = |s: &str| -> Result<(), values::Problem> {
        for (_, name) in values::placeholder_names(s) {
            if let Some(p) = values::near(name).filter(|_| !defined(name)) {
                return Err((place(name), format!("{{{name}}} is not a placeholder (did you mean {{{p}}}?)"), HINT));
            }
        }
        Ok(())
    };
    // a tool input's text may hold braces of its own (code a Write writes, `f"{name}"`): there a `{word}`
    // is a placeholder where a path starts with it or it stands beside a `/`
    let in_input = |s: &str| -> Result<(), values::Problem> {
        for (at, name) in values::placeholder_names(s) {
            let end = at + name.len() + 2;
            let path_like = at == 0 || s[..at].ends_with('/') || s[end..].starts_with('/');
            if path_like {
                strict(&s[at..end], false)?;
            }
        }
        loose(s)
    };
    fn strings<'v>(v: &'v serde_json::Value, out: &mut Vec<&'v str>) {
        match v {
            serde_json::Value::String(s) => out.push(s),
            serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            serde_json::Value::Object(o) => o.iter().for_each(|(k, x)| {
                out.push(k);
                strings(x, out)
            }),
            _ => {}
        }
    }
    let mut tool_inputs = Vec::new();
    let mut inputs = Vec::new();
    let turns = raw.turns.iter().chain(raw.conversations.iter().flat_map(|c| &c.turns));
    for t in turns {
        for u in &t.tool_use {
            strings(&u.input, &mut tool_inputs);
        }
        if let Some(w) = &t.wait {
            inputs.extend(w.file.as_deref());
            inputs.extend(w.needles());
        }
    }
    inputs.extend(raw.fixture.files.keys().map(String::as_str));
    for f in &raw.fixture.fault {
        inputs.push(&f.get_ref().path);
        inputs.extend(f.get_ref().target.as_ref().map(|t| t.get_ref().as_str()));
    }
    let servers: Vec<serde_json::Value> = raw
        .mcp_servers
        .values()
        .filter_map(|s| serde_json::to_value(s).ok())
        .chain(raw.plugins.iter().filter_map(|p| serde_json::to_value(p.get_ref()).ok()))
        .collect();
    for v in &servers {
        strings(v, &mut inputs);
    }
    inputs.extend(raw.checks.iter().flat_map(|c| c.get_ref().paths()));
    for s in tool_inputs {
        in_input(s)?;
    }
    for s in inputs {
        strict(s, false)?;
    }
    for e in &raw.execs {
        for a in &e.get_ref().argv {
            strict(a, true)?;
        }
    }
    for c in raw.checks.iter().map(Spanned::get_ref) {
        let mut texts = c.expected_texts();
        c.json.iter().filter_map(|j| j.equals.as_ref()).for_each(|v| strings(v, &mut texts));
        texts.into_iter().try_for_each(loose)?;
    }
    Ok(())
}

/// `8-4-4-4-12` hex digits.
fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts.iter().zip([8, 4, 4, 4, 12]).all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
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

/// Why a permission rule cannot be used, read as the runtime reads it: not `Tool` / `Tool(pattern)`, a
/// tool no subject has (a rule that would never match), or a pattern that does not compile.
fn rule_problem(text: &str) -> Result<(), String> {
    let rule = probelab_runtime::permissions::parse_rule(text).map_err(|e| e.to_string())?;
    let tool = rule.tool.as_str();
    static POOL: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let pool =
        POOL.get_or_init(|| probelab_runtime::builtin::registry().names().into_iter().map(str::to_string).collect());
    let known = pool.iter().any(|n| n == tool) || REFERENCE_ONLY_TOOLS.contains(&tool) || tool.starts_with("mcp__");
    if !known {
        return Err(format!("rule {text:?} names {tool:?}, which is not a tool (the rule would never match)"));
    }
    let Some(pattern) = rule.pattern.as_deref() else { return Ok(()) };
    let glob = |p: &str| globset::Glob::new(p).map(|_| ()).map_err(|e| format!("rule {text:?}: {e}"));
    match tool {
        "Bash" => glob(pattern.strip_suffix(":*").unwrap_or(pattern)),
        "WebFetch" => match pattern.strip_prefix("domain:") {
            Some(host) if !host.is_empty() => glob(host),
            _ => Err(format!("rule {text:?}: a WebFetch pattern is domain:HOST")),
        },
        t if ["Read", "Edit", "Write", "NotebookEdit", "MultiEdit", "Grep", "Glob", "LS", "NotebookRead"]
            .contains(&t) =>
        {
            let at = probelab_runtime::permissions::Anchors { home: "/h".into(), project_root: "/p".into() };
            probelab_runtime::permissions::path_glob(pattern, &at)
                .map(|_| ())
                .ok_or_else(|| format!("rule {text:?}: {pattern:?} is not a valid glob"))
        }
        _ => Ok(()),
    }
}

/// The offset of `s` written as a TOML basic or literal string (`"s"`, `'s'`).
fn string_offset(text: &str, s: &str) -> Option<usize> {
    let basic = toml::Value::String(s.to_string()).to_string();
    text.find(&basic).or_else(|| text.find(&format!("'{s}'")))
}

/// The offset of the first table header (`[x]`, `[[x]]` at a line's start).
fn first_header(text: &str) -> Option<usize> {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with('[') {
            return Some(at);
        }
        at += line.len();
    }
    None
}

/// Where the turn a script error names (`conversation "main", turn 3: …`) is written: the N-th
/// `[[turn]]` of the main conversation, or the N-th `[[conversation.turn]]` after the conversation's
/// `name`; else its conversation's name.
fn turn_offset(text: &str, msg: &str) -> Option<usize> {
    let rest = msg.strip_prefix("conversation ")?;
    let (name, rest) = rest.split_once(", turn ")?;
    let name: String = serde_json::from_str(name).ok()?;
    let n: usize = rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
    let (from, header) = if name == stub_messages::script::MAIN {
        (0, "[[turn]]")
    } else {
        (string_offset(text, &name)?, "[[conversation.turn]]")
    };
    let mut at = from;
    let mut seen = 0;
    for line in text[from..].split_inclusive('\n') {
        if line.trim_end() == header {
            seen += 1;
            if seen == n {
                return Some(at);
            }
        }
        at += line.len();
    }
    (from > 0).then_some(from)
}

/// The text of the table that starts at `span` (a `[[check]]` entry's span is its header): up to the
/// next line that opens a table, or the end.
fn table_region(text: &str, span: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let start = span.start.min(text.len());
    let body = text[start..].find('\n').map(|i| start + i + 1).unwrap_or(text.len());
    let mut end = text.len();
    let mut at = body;
    for line in text[body..].split_inclusive('\n') {
        if line.trim_start().starts_with('[') && !line.trim_start().starts_with("[ ") {
            end = at;
            break;
        }
        at += line.len();
    }
    start..end.max(span.end.min(text.len()))
}

/// The offset of `key` as a TOML key (`key =`, at a line's start or after `{` / `,`) within `span`.
fn key_offset(text: &str, span: std::ops::Range<usize>, key: &str) -> Option<usize> {
    let end = span.end.min(text.len());
    let start = span.start.min(end);
    let slice = text.get(start..end)?;
    let mut from = 0;
    while let Some(i) = slice.get(from..).and_then(|s| s.find(key)) {
        let at = from + i;
        let before = slice[..at].trim_end_matches([' ', '\t']);
        let after = slice[at + key.len()..].trim_start_matches([' ', '\t']);
        let starts = before.is_empty() || before.ends_with(['\n', '{', ',', '[', ']']);
        if starts && after.starts_with('=') {
            return Some(start + at);
        }
        from = at + key.len();
    }
    None
}

/// A `[[fixture.fault]]` checked against its kind: the keys it takes, its turn, its mode. Errors are
/// (offset, message, hint), placed on the offending key.
fn fault(f: &RawFault, main_turns: usize) -> Result<FsFault, (usize, String, Option<&'static str>)> {
    let kinds_hint = Some("kind is write (content) | delete | mkdir | chmod (mode) | symlink (target) | touch (mtime)");
    let kind = f.kind.get_ref().as_str();
    let Some((_, takes)) = FAULT_KINDS.iter().find(|(k, _)| *k == kind) else {
        return Err((f.kind.span().start, format!("fixture fault kind {kind:?} is unknown"), kinds_hint));
    };
    let given = [("content", f.content.as_ref()), ("mode", f.mode.as_ref()), ("target", f.target.as_ref())];
    for (key, v) in given {
        if let Some(v) = v.filter(|_| !takes.contains(&key)) {
            return Err((v.span().start, format!("`{key}` does not apply to a {kind:?} fault"), kinds_hint));
        }
    }
    if let Some(m) = &f.mtime {
        if kind != "touch" {
            return Err((m.span().start, format!("`mtime` does not apply to a {kind:?} fault"), kinds_hint));
        }
        m.get_ref().time().map_err(|e| (m.span().start, format!("fixture fault touch {:?}: {e}", f.path), None))?;
    }
    if let Some(t) = f.at_turn.as_ref().filter(|t| *t.get_ref() == 0 || *t.get_ref() > main_turns) {
        let msg = format!("fixture fault at_turn {} names no main turn (there are {main_turns})", t.get_ref());
        return Err((t.span().start, msg, Some("at_turn N: before the N-th [[turn]] is served (1-based)")));
    }
    let op = match kind {
        "write" => FaultOp::Write { content: f.content.as_ref().map(|c| c.get_ref().clone()).unwrap_or_default() },
        "delete" => FaultOp::Delete,
        "mkdir" => FaultOp::Mkdir,
        "chmod" => {
            let text = f.mode.as_ref().map(|m| m.get_ref().as_str()).unwrap_or("0644");
            let mode = u32::from_str_radix(text.trim_start_matches("0o"), 8).ok().filter(|m| *m <= 0o7777);
            let Some(mode) = mode else {
                let at = f.mode.as_ref().map(|m| m.span().start).unwrap_or(f.kind.span().start);
                return Err((at, format!("chmod mode {text:?} is not an octal mode"), Some("e.g. mode = \"0444\"")));
            };
            FaultOp::Chmod { mode }
        }
        "touch" => FaultOp::Touch { mtime: f.mtime.as_ref().map(|m| m.get_ref().clone()) },
        _ => match &f.target {
            Some(t) => FaultOp::Symlink { target: t.get_ref().clone() },
            None => return Err((f.kind.span().start, "a symlink fault needs a target".into(), kinds_hint)),
        },
    };
    Ok(FsFault { at_turn: f.at_turn.as_ref().map(|t| *t.get_ref()), path: f.path.clone(), op })
}

/// True for a file under a `claude-code` directory of the probes (`probes/claude-code/x.toml`): the
/// probes that measure Claude Code, run on it only unless they name their subjects.
fn in_claude_code_dir(path: &Path) -> bool {
    path.parent().and_then(Path::file_name).is_some_and(|d| d == "claude-code")
}

/// Reads and parses a probe file.
pub fn load(path: &Path) -> Result<Probe, ProbeError> {
    load_with(path, &Known::default())
}

/// Reads and parses a probe file that may name what `known` holds ([`parse_with`]).
pub fn load_with(path: &Path, known: &Known) -> Result<Probe, ProbeError> {
    let bytes = crate::safe_fs::read_capped(path, crate::safe_fs::MAX_TEXT_BYTES).map_err(|e| ProbeError {
        file: path.display().to_string(),
        line: 1,
        col: 1,
        message: format!("cannot read: {e}"),
        hint: Some("a probe is a regular file of TOML text".into()),
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        // the place of the first byte that is not UTF-8
        let ok = e.utf8_error().valid_up_to();
        let valid = std::str::from_utf8(&e.as_bytes()[..ok]).unwrap_or_default();
        let (line, col) = line_col(valid, ok);
        ProbeError {
            file: path.display().to_string(),
            line,
            col,
            message: "the file is not UTF-8 text".into(),
            hint: Some("a probe file is TOML, UTF-8 encoded: write bytes that are not text as a base64 file".into()),
        }
    })?;
    parse_with(path, &text, known)
}

/// Why the probes under some paths could not be loaded ([`discover`], [`load_all`]).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A path given is neither a file nor a directory.
    #[error("{}: no such probe file or directory", .0.display())]
    NoSuchPath(PathBuf),
    /// A directory could not be walked.
    #[error("{}: {source}", path.display())]
    Walk {
        /// The directory given.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The paths hold no `*.toml` file.
    #[error("no probe files (*.toml) under {}", paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NoProbeFiles {
        /// The paths given.
        paths: Vec<PathBuf>,
    },
    /// A probe file is wrong (file:line:col, what, a hint).
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// Two probes have one id, case aside (`also` is the other's id when it differs in case).
    #[error(
        "{}: probe id {id:?} is also used by {}{}: ids are unique, case aside (they name golden files)",
        file.display(),
        other.display(),
        also.as_ref().map(|a| format!(" (as {a:?})")).unwrap_or_default()
    )]
    DuplicateId {
        /// The file loaded second.
        file: PathBuf,
        /// Its id.
        id: String,
        /// The file that has it already.
        other: PathBuf,
        /// The other's id when it differs in case.
        also: Option<String>,
    },
}

/// Every `*.toml` under the given paths (files taken as they are, directories walked), sorted.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, LoadError> {
    let mut out = Vec::new();
    for p in paths {
        if p.exists() && !p.is_dir() {
            // taken as it is: a file that is not a regular one is refused when it is loaded
            out.push(p.clone());
        } else if p.is_dir() {
            let found = crate::safe_fs::walk_files(p, &|f| f.extension().is_some_and(|x| x == "toml"));
            out.extend(found.map_err(|source| LoadError::Walk { path: p.clone(), source })?);
        } else {
            return Err(LoadError::NoSuchPath(p.clone()));
        }
    }
    out.sort();
    out.dedup();
    if out.is_empty() {
        return Err(LoadError::NoProbeFiles { paths: paths.to_vec() });
    }
    Ok(out)
}

/// Each probe's `[fixture] dir` is a directory under `fixtures`: a missing one is an error of the probe
/// file, placed on its value, before anything runs.
pub fn check_fixture_dirs(probes: &[Probe], fixtures: &Path) -> Result<(), ProbeError> {
    for p in probes {
        let Some(dir) = &p.fixture.dir else { continue };
        if !fixtures.join(dir).is_dir() {
            let at = string_offset(&p.source, dir).unwrap_or(0);
            let (line, col) = line_col(&p.source, at);
            return Err(ProbeError {
                file: p.path.display().to_string(),
                line,
                col,
                message: format!("fixture dir {dir:?} is not a directory under {}", fixtures.display()),
                hint: Some("name a directory under the project's fixtures (probelab.toml `fixtures`)".into()),
            });
        }
    }
    Ok(())
}

/// Loads every probe under `paths`; ids must be unique.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Probe>, LoadError> {
    load_all_with(paths, &Known::default())
}

/// [`load_all`] for a project whose probes may name what `known` holds ([`parse_with`]).
pub fn load_all_with(paths: &[PathBuf], known: &Known) -> Result<Vec<Probe>, LoadError> {
    let mut probes: Vec<Probe> = Vec::new();
    for f in discover(paths)? {
        let p = load_with(&f, known)?;
        // ids name golden files: two that differ only in case are one file on a case-insensitive disk
        if let Some(other) = probes.iter().find(|o| o.id.eq_ignore_ascii_case(&p.id)) {
            let also = (other.id != p.id).then(|| other.id.clone());
            return Err(LoadError::DuplicateId { file: f, id: p.id, other: other.path.clone(), also });
        }
        probes.push(p);
    }
    Ok(probes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse(Path::new("p.toml"), text).err().map(|e| e.to_string()).unwrap_or_else(|| "parsed".into())
    }

    const OK: &str = "id = \"x.y\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[[turn]]\ntool_use = [{ name = \"Read\", input = { file_path = \"{cwd}/f\" } }]\n[[turn]]\ntext = \"done\"\n";

    #[test]
    fn shape_varies_needs_words_and_is_kept() {
        let text = |why: &str| {
            format!(
                "id = \"p\"\nclaims = [\"READ-1\"]\nabout = \"a\"\nshape_varies = \"{why}\"\n[[turn]]\ntext = \"done\"\n"
            )
        };
        let p = parse(Path::new("p.toml"), &text("the message arrives when it does")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.shape_varies.as_deref(), Some("the message arrives when it does"));
        let e = parse(Path::new("p.toml"), &text(" \u{200b} ")).map(|_| ()).unwrap_err().to_string();
        assert!(e.starts_with("p.toml:4:") && e.contains("shape_varies needs a reason in words"), "{e}");
    }

    #[test]
    fn a_good_probe_parses() {
        let p = parse(Path::new("p.toml"), &format!("{OK}[[check]]\nresult = 1\nis_error = false\n"));
        let p = p.map_err(|e| e.to_string());
        assert_eq!(p.as_ref().map(|p| p.checks.len()), Ok(1));
        assert_eq!(p.as_ref().map(|p| p.checks[0].1), Ok(8));
    }

    #[test]
    fn a_probe_under_claude_code_runs_there_unless_it_names_its_subjects() {
        let p = |path: &str, text: &str| parse(Path::new(path), text).map_err(|e| e.to_string());
        let (builtin, cc) = (SubjectId::builtin(), SubjectId::claude_code("2.1.235"));
        let in_cc = p("probes/claude-code/x.toml", OK);
        assert_eq!(in_cc.as_ref().map(|p| p.applies_to(&builtin)), Ok(false));
        assert_eq!(in_cc.as_ref().map(|p| p.applies_to(&cc)), Ok(true));
        assert_eq!(in_cc.as_ref().map(|p| p.subjects.clone()), Ok(vec!["claude-code".to_string()]));
        let both =
            p("probes/claude-code/x.toml", &OK.replace("about", "subjects = [\"builtin\", \"claude-code\"]\nabout"));
        assert_eq!(both.map(|p| p.applies_to(&builtin)), Ok(true));
        let plain = p("probes/read/x.toml", OK);
        assert_eq!(plain.as_ref().map(|p| (p.applies_to(&builtin), p.applies_to(&cc))), Ok((true, false)));
        assert_eq!(plain.map(|p| p.subjects), Ok(vec!["builtin".to_string()]));
        // a command subject of Claude Code's dialect runs Claude Code's probes, and those naming it
        let agent = SubjectId::command("my-agent", Some("claude-code"));
        assert_eq!(in_cc.map(|p| p.applies_to(&agent)), Ok(true));
        let named = parse_with(
            Path::new("p.toml"),
            &OK.replace("about", "subjects = [\"my-agent\"]\nabout").replace("claims = [", "claims = [\"OWN-1\", "),
            &Known {
                subjects: vec!["builtin".into(), "claude-code".into(), "my-agent".into()],
                claims: vec!["OWN-1".into()],
                caps: Default::default(),
            },
        );
        assert_eq!(
            named.map(|p| p.applies_to(&SubjectId::command("my-agent", None))).map_err(|e| e.to_string()),
            Ok(true)
        );
        let e = p("p.toml", &OK.replace("about", "subjects = [\"my-agent\"]\nabout"));
        assert!(
            e.as_ref().is_err_and(|e| e.contains("unknown subject \"my-agent\"") && e.contains("[subjects.NAME]")),
            "{e:?}"
        );
    }

    #[test]
    fn the_default_subjects_are_stated_once_in_the_docs() {
        let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/probe-format.md"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            docs.contains(&format!("Default: {DEFAULT_SUBJECTS}")),
            "docs/probe-format.md must say `Default: {DEFAULT_SUBJECTS}`"
        );
    }

    #[test]
    fn a_sandbox_probe_requires_bubblewrap() {
        let sandboxed = format!("{OK}[settings.sandbox]\nenabled = true\n");
        assert!(err(&sandboxed).contains("does not require bubblewrap"), "{}", err(&sandboxed));
        let declared = sandboxed.replace("about", "requires = [\"bwrap\"]\nabout");
        let p = parse(Path::new("p.toml"), &declared).map_err(|e| e.to_string());
        assert_eq!(
            p.map(|p| p.requires_on(&SubjectId::builtin())),
            Ok(vec!["bwrap".to_string(), CONFINEMENT.to_string()])
        );
        assert!(err(&OK.replace("about", "requires = [\"a b\"]\nabout")).contains("is not a host part"));
    }

    #[test]
    fn a_subject_runs_confined_unless_the_probe_says_why_not() {
        let requires = |text: &str, subject: &str| {
            let id = SubjectId::parse_registered(subject).unwrap_or_else(|| panic!("{subject}"));
            parse(Path::new("p.toml"), text).map(|p| p.requires_on(&id)).map_err(|e| e.to_string())
        };
        assert_eq!(requires(OK, "builtin"), Ok(vec![CONFINEMENT.to_string()]));
        assert_eq!(requires(OK, "claude-code@2.1.235"), Ok(vec![CONFINEMENT.to_string()]));
        let all = format!("{OK}[subject]\nunconfined = \"measures the host's /tmp\"\n");
        assert_eq!(requires(&all, "builtin"), Ok(vec![]));
        assert_eq!(requires(&all, "claude-code@2.1.235"), Ok(vec![]));
        let one = format!("{OK}[subject.claude-code]\nunconfined = \"chattr +i\"\n");
        assert_eq!(requires(&one, "builtin"), Ok(vec![CONFINEMENT.to_string()]));
        assert_eq!(requires(&one, "claude-code@2.1.235"), Ok(vec![]));
        // a reason, never an empty one; placed on its key
        let blank = format!("{OK}[subject.builtin]\nunconfined = \" \"\n");
        let e = err(&blank);
        let line = blank.lines().position(|l| l.starts_with("unconfined")).map(|i| i + 1).unwrap_or(0);
        assert!(e.contains("unconfined needs a reason") && e.contains(&format!(":{line}:1")), "{e}");
        // invisible characters are no reason either (issue 41)
        for nothing in ["\\u200b", "\\u200b\\u200b ", "-", "\\t"] {
            let e = err(&format!("{OK}[subject]\nunconfined = \"{nothing}\"\n"));
            assert!(e.contains("unconfined needs a reason"), "{nothing:?}: {e}");
        }
    }

    #[test]
    fn a_check_names_a_result_by_number_or_by_the_id_given_to_its_tool_use() {
        let text = "id = \"x.y\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[[turn]]\ntool_use = [{ name = \"Read\", input = {} }]\n\
                    [[turn]]\ntool_use = [{ name = \"Read\", input = {} }, { id = \"edit\", name = \"Edit\", input = {} }]\n\
                    [[turn]]\ntext = \"done\"\n[[check]]\nresult = \"edit\"\nis_error = false\n[[check]]\nresult = 2\nis_error = false\n";
        let p = parse(Path::new("p.toml"), text).unwrap_or_else(|e| panic!("{e}"));
        let resolved: Vec<Option<usize>> =
            p.checks.iter().map(|c| if let Target::Result { n, .. } = c.0.target { Some(n) } else { None }).collect();
        assert_eq!(resolved, vec![Some(3), Some(2)]);
        assert_eq!(p.checks[0].0.target.to_string(), "result edit");
        assert_eq!(p.checks[1].0.target.to_string(), "result 2");
        let unknown = err(&text.replace("result = \"edit\"", "result = \"edti\""));
        assert!(unknown.starts_with("p.toml:10:1: check names result \"edti\", but no tool_use"), "{unknown}");
        assert!(unknown.contains("ids given: [\"edit\"]"), "{unknown}");
        let twice = err(&text.replace(
            "{ name = \"Read\", input = {} }]\n[[turn]]",
            "{ id = \"edit\", name = \"Read\", input = {} }]\n[[turn]]",
        ));
        assert!(twice.contains("tool_use id \"edit\" is given twice"), "{twice}");
    }

    #[test]
    fn a_regex_may_hold_placeholders() {
        let ok = format!("{OK}[[check]]\nresult = 1\nmatches = '^{{cwd}}/f$'\n");
        assert!(parse(Path::new("p.toml"), &ok).is_ok(), "{}", err(&ok));
        assert!(err(&format!("{OK}[[check]]\nresult = 1\nmatches = '^{{cwd}}($'\n")).contains("not a valid regex"));
    }

    #[test]
    fn errors_have_places_and_hints() {
        assert!(
            err(&format!("{OK}bogus = 1\n")).starts_with("p.toml:8:1: unknown field `bogus`"),
            "{}",
            err(&format!("{OK}bogus = 1\n"))
        );
        assert!(err(&OK.replace("READ-1", "READ-99"))
            .starts_with("p.toml:2:11: claim \"READ-99\" is not in the catalogue\n  hint:"));
        assert!(
            err(&format!("{OK}[[check]]\nresult = 2\n"))
                .starts_with("p.toml:8:1: check names result 2, but the main conversation scripts 1"),
            "{}",
            err(&format!("{OK}[[check]]\nresult = 2\n"))
        );
        assert!(err(&format!("{OK}[[check]]\nrequest = 1\nfile = \"f\"\n")).contains("exactly one target"));
        assert!(err(&OK.replace("claims = [\"READ-1\"]\n", "")).contains("missing field `claims`"));
        assert!(
            err(&format!("{OK}[[check]]\nresult = 1\nis_error = \"no\"\n")).starts_with("p.toml:10:12: invalid type"),
            "{}",
            err(&format!("{OK}[[check]]\nresult = 1\nis_error = \"no\"\n"))
        );
    }
}

#[cfg(test)]
mod validation_tests {
    use super::*;

    #[test]
    fn messages_name_the_forms_a_value_takes_not_serde_internals() {
        let check = |body: &str| err(&format!("{OK}[[check]]\n{body}\n"));
        let e = check("result = [1]\nis_error = false");
        assert!(e.starts_with("p.toml:9:10: a result is a number (result = 2"), "{e}");
        let e = check("result = 99999999999999999999\nis_error = false");
        assert!(e.starts_with("p.toml:9:10: integer 99999999999999999999 is out of range"), "{e}");
        let e = check("result = 1\ncontains = 1");
        assert!(e.starts_with("p.toml:10:12: the value is a string or a list of strings"), "{e}");
        let e = err(&format!("{OK}[fixture]\nfiles.\"x\" = {{ repeat = 3 }}\n"));
        assert!(e.starts_with("p.toml:9:13: a file is a string, { text = … }"), "{e}");
        for e in [check("result = [1]\nis_error = false"), check("result = 99999999999999999999\nis_error = true")] {
            assert!(!e.contains("untagged") && !e.contains("i128") && !e.contains("any value"), "{e}");
        }
    }

    #[test]
    fn a_nested_missing_field_is_hinted_at_its_table() {
        let e = err(&format!("{OK}[[settings.hooks.Stop]]\nmatcher = \"x\"\n"));
        assert!(e.starts_with("p.toml:8:1: missing field `hooks`\n  hint: the table needs this key"), "{e}");
        let e = err(&OK.replace("about = \"a\"\n", ""));
        assert!(e.contains("missing field `about`\n  hint: every probe needs id, claims and about"), "{e}");
    }

    #[test]
    fn invalid_utf8_is_placed_at_its_byte() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let f = d.path().join("p.toml");
        std::fs::write(&f, b"id = \"x\"\nabout = \"ab\xffc\"\n").unwrap_or_else(|e| panic!("{e}"));
        let e = load(&f).err().map(|e| (e.line, e.col, e.message)).unwrap_or_default();
        assert_eq!(e, (2, 12, "the file is not UTF-8 text".to_string()));
    }

    fn err(text: &str) -> String {
        parse(Path::new("p.toml"), text).err().map(|e| e.to_string()).unwrap_or_else(|| "parsed".into())
    }

    const OK: &str = "id = \"x.y\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[[turn]]\ntool_use = [{ name = \"Read\", input = { file_path = \"{cwd}/f\" } }]\n[[turn]]\ntext = \"done\"\n";

    #[test]
    fn a_check_that_asserts_nothing_is_an_error_at_its_key() {
        let e = err(&format!("{OK}[[check]]\nresult = 1\n"));
        assert!(e.starts_with("p.toml:8:1: the check names its target but asserts nothing"), "{e}");
        let e = err(&format!("{OK}[[check]]\nresult = 1\ncontains = []\n"));
        assert!(e.starts_with("p.toml:10:1: `contains` is empty: it asserts nothing"), "{e}");
        let e = err(&format!("{OK}[[check]]\nresult = 1\njson = []\n"));
        assert!(e.starts_with("p.toml:10:1: `json` is empty: it asserts nothing"), "{e}");
        let e = err(&format!("{OK}[[check]]\nresult = 1\n  json = [{{ pointer = \"/0\" }}]\n"));
        assert!(e.starts_with("p.toml:10:3: json check \"/0\" has neither equals nor exists"), "{e}");
        assert_eq!(err(&format!("{OK}[[check]]\nresult = 1\ncontains = [\"x\"]\n")), "parsed");
    }

    #[test]
    fn a_probe_s_limits_are_its_own_within_the_project_s_caps() {
        let with = |limits: &str| OK.replace("[[turn]]\ntool_use", &format!("[limits]\n{limits}\n[[turn]]\ntool_use"));
        let parse = |text: &str, caps: crate::limits::LimitsSpec| {
            parse_with(Path::new("p.toml"), text, &Known { caps, ..Known::default() }).map_err(|e| e.to_string())
        };
        let set = parse(&with("disk_mb = 64\nprocesses = 3000"), Default::default()).map(|p| p.limits);
        assert_eq!(
            set,
            Ok(crate::limits::LimitsSpec { disk_mb: Some(64), processes: Some(3000), ..Default::default() })
        );
        let limits = crate::limits::Limits::of(&set.unwrap_or_default());
        assert_eq!(
            (limits.disk_bytes, limits.processes, limits.file_bytes),
            (64 << 20, 3000, crate::limits::MAX_FILE_BYTES)
        );
        // over the default cap (four times 2048), over a project's own, zero: each refused at its key
        let e = parse(&with("processes = 8193"), Default::default()).err().unwrap_or_default();
        assert!(e.contains("[limits] processes = 8193 is over the project's cap of 8192"), "{e}");
        let caps = crate::limits::LimitsSpec { disk_mb: Some(32), ..Default::default() };
        let e = parse(&with("disk_mb = 64"), caps).err().unwrap_or_default();
        assert!(e.contains("[limits] disk_mb = 64 is over the project's cap of 32"), "{e}");
        let e = parse(&with("file_mb = 0"), Default::default()).err().unwrap_or_default();
        assert!(e.contains("[limits] file_mb = 0 leaves the subject nothing"), "{e}");
        let e = parse(&with("disk = 1"), Default::default()).err().unwrap_or_default();
        assert!(e.contains("unknown field `disk`"), "{e}");
    }

    #[test]
    fn an_assertion_its_target_does_not_take_is_an_error_at_the_key() {
        let e = err(&format!("{OK}[[check]]\nresult = 1\nexists = true\n"));
        assert!(
            e.starts_with("p.toml:10:1: `exists` applies to file checks only\n  hint: a result check takes"),
            "{e}"
        );
        let e = err(&format!("{OK}[[check]]\nfile = \"f\"\n  tools_include = [\"Read\"]\n"));
        assert!(e.starts_with("p.toml:10:3: `tools_include` applies to request checks only"), "{e}");
        let exec = "id = \"x.y\"\nclaims = [\"GREP-1\"]\nabout = \"a\"\n[[exec]]\nargv = [\"{rg}\", \"x\"]\n[[check]]\nexec = 1\n";
        let e = err(&format!("{exec}json = [{{ pointer = \"/a\", exists = true }}]\n"));
        assert!(e.starts_with("p.toml:8:1: `json` applies to result, request, side, file and lsp checks only"), "{e}");
        let e = err(&format!("{exec}exit = 0\n[[check]]\nfile = \"f\"\nexists = true\n"));
        assert!(e.starts_with("p.toml:9:1: a file check in an exec probe\n  hint: an exec probe runs commands"), "{e}");
        assert_eq!(err(&format!("{exec}exit = 0\n")), "parsed");
    }

    #[test]
    fn a_key_that_does_not_apply_to_a_fault_kind_is_an_error_at_the_key() {
        let fault = |body: &str| err(&format!("{OK}[[fixture.fault]]\npath = \"f\"\n{body}\n"));
        let e = fault("kind = \"delete\"\ncontent = \"x\"");
        assert!(e.starts_with("p.toml:11:11: `content` does not apply to a \"delete\" fault"), "{e}");
        let e = fault("kind = \"write\"\nmode = \"0644\"");
        assert!(e.starts_with("p.toml:11:8: `mode` does not apply to a \"write\" fault"), "{e}");
        let e = fault("kind = \"explode\"");
        assert!(e.starts_with("p.toml:10:8: fixture fault kind \"explode\" is unknown"), "{e}");
        let e = fault("kind = \"chmod\"\nmode = \"999\"");
        assert!(e.starts_with("p.toml:11:8: chmod mode \"999\" is not an octal mode"), "{e}");
        let e = fault("kind = \"write\"\nat_turn = 7");
        assert!(e.starts_with("p.toml:11:11: fixture fault at_turn 7 names no main turn"), "{e}");
        let e = fault("kind = \"symlink\"");
        assert!(e.contains("needs a target"), "{e}");
        let p = parse(
            Path::new("p.toml"),
            &format!("{OK}[[fixture.fault]]\npath = \"f\"\nkind = \"chmod\"\nmode = \"0444\"\n"),
        );
        assert_eq!(
            p.map(|p| p.fixture.fault[0].op.clone()).map_err(|e| e.to_string()),
            Ok(FaultOp::Chmod { mode: 0o444 })
        );
    }

    #[test]
    fn a_fixture_dir_must_stay_under_fixtures() {
        for bad in ["/etc", "../secrets", "lsp/../../x", ""] {
            let e = err(&format!("{OK}[fixture]\ndir = {bad:?}\n"));
            assert!(
                e.starts_with(&format!("p.toml:9:7: fixture dir {bad:?} is not a relative path under fixtures/")),
                "{e}"
            );
        }
        assert_eq!(err(&format!("{OK}[fixture]\ndir = \"lsp/pyproj\"\n")), "parsed");
    }

    #[test]
    fn errors_of_top_level_keys_and_of_turns_are_placed_on_them() {
        let e = err(&OK.replace("about = \"a\"\n", "about = \"a\"\nresult = 1\n"));
        assert!(e.starts_with("p.toml:4:1: unknown field `result`"), "{e}");
        let e = err(&OK.replace("[[turn]]\ntext = \"done\"\n", "[[turn]]\n[[turn]]\ntext = \"done\"\n"));
        assert!(e.starts_with("p.toml:6:1: conversation \"main\", turn 2: a turn needs text"), "{e}");
        let e = err(&format!("{OK}[settings.sandbox]\nenabled = true\n"));
        assert!(e.starts_with("p.toml:9:1: the probe turns the Bash sandbox on"), "{e}");
    }

    #[test]
    fn a_permission_rule_is_parsed_at_load() {
        let rules = |list: &str| err(&format!("{OK}[settings.permissions]\ndeny = {list}\n"));
        let e = rules("[\"Read(a)\", \"Raed(secrets/**)\"]");
        assert!(
            e.starts_with(
                "p.toml:9:20: permissions.deny: rule \"Raed(secrets/**)\" names \"Raed\", which is not a tool"
            ),
            "{e}"
        );
        let e = rules("[\"Read(secrets/[)\"]");
        assert!(e.starts_with("p.toml:9:9: permissions.deny: rule \"Read(secrets/[)\""), "{e}");
        let e = rules("[\"Read(\"]");
        assert!(e.starts_with("p.toml:9:9: permissions.deny: permission rule \"Read(\" is not"), "{e}");
        let e = rules("[\"WebFetch(example.test)\"]");
        assert!(e.contains("a WebFetch pattern is domain:HOST"), "{e}");
        assert_eq!(rules("[\"Read(secrets/**)\", \"Bash(git push:*)\", \"mcp__fixture__echo\", \"Write\"]"), "parsed");
    }

    #[test]
    fn loading_errors_are_typed_for_callers_to_match_and_read_as_before() {
        let d = tempfile::tempdir().unwrap();
        let good = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../probes/read/window.toml")).unwrap();
        std::fs::write(d.path().join("a.toml"), &good).unwrap();
        std::fs::write(d.path().join("b.toml"), good.replace("id = \"read.window\"", "id = \"Read.Window\"")).unwrap();
        match load_all(&[d.path().to_path_buf()]) {
            Err(LoadError::DuplicateId { id, also, .. }) => {
                assert_eq!((id.as_str(), also.as_deref()), ("Read.Window", Some("read.window")))
            }
            other => panic!("{other:?}"),
        }
        std::fs::write(d.path().join("b.toml"), "id = 1\n").unwrap();
        match load_all(&[d.path().to_path_buf()]) {
            Err(LoadError::Probe(e)) => assert_eq!((e.file.ends_with("b.toml"), e.line), (true, 1), "{e}"),
            other => panic!("{other:?}"),
        }
        let gone = d.path().join("gone");
        let e = load_all(std::slice::from_ref(&gone)).unwrap_err();
        assert!(matches!(&e, LoadError::NoSuchPath(p) if *p == gone), "{e:?}");
        assert_eq!(e.to_string(), format!("{}: no such probe file or directory", gone.display()));
        let empty = tempfile::tempdir().unwrap();
        let e = load_all(&[empty.path().to_path_buf()]).unwrap_err();
        assert_eq!(e.to_string(), format!("no probe files (*.toml) under {}", empty.path().display()));
    }
}
