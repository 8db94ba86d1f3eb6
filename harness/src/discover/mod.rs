//! `probelab discover A B` (issue 38): differential exploration of two Claude Code releases. The same
//! generated sessions ([`crate::sessions`], extended here: Bash commands, `.claude/` skills, agents and
//! commands with and without a byte-order mark, hooks that log their payloads) run on both releases,
//! each side twice; what differs between the sides while each side agrees with itself is a **stable
//! difference**, what differs between two runs of one side is **noise** (reported as such, never as
//! a change). A difference is of one of three kinds, kept apart as the observatory keeps its layers: a
//! tool **result** (its text, normalised, and `is_error`), the **files** of the working directory after
//! the session (hook payload logs among them), or the **request** (the tools the first request offers,
//! and the texts of its first user message: the skill listing, reminders).
//!
//! Each stable result difference is then minimised (the differing call with only the earlier calls on
//! its file, each in a turn of its own, in a fresh session with only the files those calls touch; then
//! earlier calls dropped one by one while the difference stays) and written as a candidate probe under
//! the output directory (`<tool>-<n>.toml`, its `about` the one-line statement of what differs), ready
//! to move into `probes/` — promotion into the catalogue is a person's decision (a probe there runs on
//! every release of the observatory).
//!
//! Decisions: the default model (what a user of the release gets; the fidelity test pins another for its
//! own reasons), `--allowedTools Grep,Glob` as the catalogue's file probes give it; a run that broke (a
//! request the stub refused, a turn not served, the deadline) is no evidence of anything: its session
//! is reported as broken and compared no further. What the generator covers is said beside what the
//! release offers: tools it never calls are listed as not explored, each with why.
//!
//! The offered tools the sessions do not call (cron, worktrees, tasks, skills, …: both sides' first
//! requests, deferred ones included) get a session of their own ([`schema_session`]): each called with
//! inputs drawn from its input schema ([`schema_inputs`]: typical values, every property, the edges of
//! the types, none of the required), a deferred one loaded with ToolSearch first. Its result
//! differences are reported like the others' and not minimised; a tool that needs what a script cannot
//! give (a sub-agent's conversation, a person, the clock: [`NOT_FROM_SCHEMAS`]) is left out and said so.

mod finding;
mod record;
pub mod seen;

pub use finding::{Finding, Kind};
pub use record::{
    page_section, probe_diff, published_dir, read_published, write_published, Published, RecordWriteError, Stable,
    SHOWN_NAMED,
};

use crate::lab::Layout;
use crate::run::run_conversation;
use crate::sessions::{self, Call, File, Outcome, Ran, Rng, Session};
use crate::subject::claude_code::ClaudeCode;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Sessions of a default exploration of one release pair.
pub const DEFAULT_SESSIONS: usize = 3;
/// The default seed.
pub const DEFAULT_SEED: u64 = 0x38_d15c;
/// At most this many differences are minimised per pair (each costs a few runs of both sides).
pub const MAX_MINIMISED: usize = 6;
/// At most this many runs of both sides to minimise one difference.
pub const MINIMISE_RUNS: usize = 5;

/// The tools the generator calls.
pub const EXPLORED_TOOLS: &[&str] = &["Read", "Edit", "Write", "NotebookEdit", "Grep", "Glob", "Bash"];

/// Offered tools the schema-drawn session does not call, and why: each would need what a scripted
/// session cannot give (a model's answer to a sub-agent or a fetched page, a person, the clock).
pub const NOT_FROM_SCHEMAS: &[(&str, &str)] = &[
    ("Agent", "starts a sub-agent, whose conversation the script does not serve"),
    ("Task", "starts a sub-agent, whose conversation the script does not serve"),
    ("Workflow", "runs agents of a script"),
    ("WebFetch", "asks a model about a fetched page"),
    ("WebSearch", "a model's search"),
    ("AskUserQuestion", "waits for a person"),
    ("EnterPlanMode", "changes the session's mode"),
    ("ExitPlanMode", "waits for a person's approval"),
    ("ScheduleWakeup", "waits on the clock"),
    ("Monitor", "waits on the clock"),
    ("SendMessage", "talks to agents the session does not have"),
    ("ToolSearch", "called only to load a deferred tool before it is called"),
    ("DeferredToolPlaceholder", "a placeholder the release says never to call"),
];

/// A value for one schema property: typical (a path under the cwd for a path, a URL for a URL, …) or,
/// with `edge`, the edge of its type (empty, negative, false, an empty list).
fn schema_value(name: &str, prop: &Value, edge: bool) -> Value {
    if let Some(options) = prop["enum"].as_array().filter(|o| !o.is_empty()) {
        return if edge { options[options.len() - 1].clone() } else { options[0].clone() };
    }
    if let Some(first) = prop["anyOf"].as_array().or(prop["oneOf"].as_array()).and_then(|v| v.first()) {
        return schema_value(name, first, edge);
    }
    let ty = match &prop["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("string").to_string(),
        _ => "string".into(),
    };
    let lower = name.to_lowercase();
    match ty.as_str() {
        "integer" | "number" => {
            if edge {
                json!(-1)
            } else {
                prop["minimum"].as_i64().map_or(json!(1), |m| json!(m.max(1)))
            }
        }
        "boolean" => json!(!edge),
        "array" => {
            if edge {
                json!([])
            } else {
                json!([schema_value(name, &prop["items"], false)])
            }
        }
        "object" => {
            let mut o = serde_json::Map::new();
            for r in prop["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                o.insert(r.to_string(), schema_value(r, &prop["properties"][r], edge));
            }
            Value::Object(o)
        }
        _ if edge => json!(""),
        _ if lower.contains("path") || lower.contains("file") || lower == "cwd" => json!("{cwd}/notes.txt"),
        _ if lower.contains("url") => json!("https://example.test/a"),
        _ if lower.contains("cron") => json!("*/5 * * * *"),
        _ if lower.contains("id") => json!("1"),
        _ => json!("probe text"),
    }
}

/// The inputs drawn from a tool's input schema, each with its class: the required properties with
/// typical values; every property; the required ones at the edges of their types; and none at all
/// when some are required (the validation's refusal).
pub fn schema_inputs(schema: &Value) -> Vec<(&'static str, Value)> {
    let props = schema["properties"].as_object().cloned().unwrap_or_default();
    let required: Vec<String> =
        schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect();
    let with = |names: &mut dyn Iterator<Item = &String>, edge: bool| -> Value {
        let mut o = serde_json::Map::new();
        for n in names {
            o.insert(n.clone(), schema_value(n, props.get(n).unwrap_or(&Value::Null), edge));
        }
        Value::Object(o)
    };
    let mut out = vec![("required", with(&mut required.iter(), false))];
    if props.len() > required.len() {
        out.push(("every-property", with(&mut props.keys(), false)));
    }
    if !required.is_empty() {
        out.push(("edges", with(&mut required.iter(), true)));
        out.push(("none-of-the-required", json!({})));
    }
    out
}

/// The session of the offered tools the generator does not otherwise call (`offered`: name → (input
/// schema, deferred on either side)), minus [`NOT_FROM_SCHEMAS`]: each tool called with each of its
/// [`schema_inputs`], a call a turn, a deferred tool loaded first with ToolSearch (`select:NAME`). Tool
/// names are leaked once per tool (a handful per exploration) to live as long as the session's calls.
pub fn schema_session(offered: &BTreeMap<String, (Value, bool)>) -> (Session, Vec<String>) {
    let mut turns: Vec<Vec<Call>> = Vec::new();
    let mut called = Vec::new();
    for (name, (schema, deferred)) in offered {
        if EXPLORED_TOOLS.contains(&name.as_str())
            || NOT_FROM_SCHEMAS.iter().any(|(n, _)| n == name)
            || name.starts_with("mcp__")
            || schema.is_null()
        {
            continue;
        }
        let tool: &'static str = Box::leak(name.clone().into_boxed_str());
        if *deferred {
            turns.push(vec![Call {
                tool: "ToolSearch",
                input: json!({"query": format!("select:{name}")}),
                target: None,
                class: format!("schema/{name}/load"),
            }]);
        }
        for (class, input) in schema_inputs(schema) {
            turns.push(vec![Call { tool, input, target: None, class: format!("schema/{name}/{class}") }]);
        }
        called.push(name.clone());
    }
    let notes = File {
        path: "notes.txt".into(),
        class: "schema-fixture",
        bytes: b"a note\nsecond line\n".to_vec(),
        cell_ids: Vec::new(),
    };
    (Session { files: vec![notes], empty_dirs: Vec::new(), turns }, called)
}

/// How to explore.
#[derive(Debug, Clone)]
pub struct Options {
    /// The generator's seed.
    pub seed: u64,
    /// Sessions to run.
    pub sessions: usize,
    /// Where candidate probes and the report go.
    pub out: PathBuf,
    /// Minimise the stable result differences into candidate probes.
    pub minimise: bool,
}

/// A minimised difference, written as a candidate probe.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Candidate {
    /// The probe file written.
    pub file: PathBuf,
    /// The one-line statement of what differs.
    pub statement: String,
    /// Calls in the minimal session.
    pub calls: usize,
    /// The kind of the difference it shows.
    #[serde(default = "result_kind")]
    pub kind: Kind,
    /// Where A and B are not neighbours, what bisecting the candidate over the releases between them
    /// found ([`bisect_candidates`]): the last release that behaves like A and the first that does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boundary: Option<(String, String)>,
    /// Why a bisected candidate has no boundary (its ends agree when run as a probe, a release could not
    /// be installed, …); empty when it was not bisected or has one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bisect_note: String,
}

fn result_kind() -> Kind {
    Kind::Result
}

/// Bisects each candidate probe of `report` over `releases` (A, the releases npm lists between A and B
/// that carry the binary, B, in order: [`crate::observatory::cli::between`]) with the observatory's
/// bisection ([`crate::observatory::bisect::bisect`]; its cells under `out`), and records on each
/// candidate the first release where it behaves as on B. Nothing to do where A and B are neighbours
/// (`releases` of two) or no candidate was written. Returns the releases installed and run.
pub async fn bisect_candidates(
    report: &mut Report,
    releases: &[String],
    layout: &Layout,
    out: &Path,
    progress: &dyn Fn(&str),
) -> Result<usize, String> {
    if releases.len() <= 2 || report.candidates.is_empty() {
        return Ok(0);
    }
    let mut probes = Vec::new();
    for c in &report.candidates {
        let text = std::fs::read_to_string(&c.file).map_err(|e| format!("{}: {e}", c.file.display()))?;
        probes.push(crate::probe::parse(&c.file, &text).map_err(|e| format!("{}: {e}", c.file.display()))?);
    }
    progress(&format!(
        "bisecting {} candidate(s) over the {} release(s) between {} and {}",
        probes.len(),
        releases.len() - 2,
        report.a,
        report.b
    ));
    let mut said = |m: &str| progress(m);
    let bisected = crate::observatory::bisect::bisect(&probes, releases, layout, out, &mut said).await;
    let (found, cost) = bisected.map_err(|e| e.to_string())?;
    for (c, p) in report.candidates.iter_mut().zip(&probes) {
        match found.iter().find(|f| f.probe == p.id) {
            Some(f) => {
                c.boundary = f.boundary.clone();
                c.bisect_note = match (&f.boundary, c.kind) {
                    (Some(_), _) => String::new(),
                    // the bisection follows what the tools did and the checks' outcome: a request candidate
                    // is followed by its check of the newer side's request (`request_check`), when it has one
                    (None, Kind::Request) => format!(
                        "{} (a request difference: the bisection follows what the tools did and the candidate's \
                         check of the newer request, which holds on both ends or could not be written; \
                         `probelab diff` of its goldens shows the request)",
                        f.note
                    ),
                    (None, _) => f.note.clone(),
                };
            }
            None => c.bisect_note = "no answer from the bisection".into(),
        }
    }
    Ok(cost.versions.len())
}

/// A change known from outside the exploration (`docs/discover/known-changes.toml`).
#[derive(Debug, Clone, serde::Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KnownChange {
    /// The first release with it.
    pub release: String,
    /// What changed.
    pub what: String,
    /// Where it is known from.
    pub source: String,
    /// `result`, `file` or `request`.
    pub kind: String,
    /// A text on the newer side of a stable difference only.
    #[serde(default)]
    pub added: Option<String>,
    /// A text on the older side only.
    #[serde(default)]
    pub removed: Option<String>,
    /// Why the sessions cannot show it, when they cannot.
    #[serde(default)]
    pub reach: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
struct KnownFile {
    change: Vec<KnownChange>,
}

/// The known changes of a file in `known-changes.toml`'s form.
pub fn known_changes(path: &Path) -> Result<Vec<KnownChange>, String> {
    let text = crate::safe_fs::read_text(path).map_err(|e| format!("{}: {e}", path.display()))?;
    toml::from_str::<KnownFile>(&text).map(|f| f.change).map_err(|e| format!("{}: {e}", path.display()))
}

/// Whether an exploration found a known change.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Recall {
    /// The change.
    pub change: KnownChange,
    /// Found: a stable difference shows it.
    pub found: bool,
    /// The finding that shows it, or why not.
    pub note: String,
}

/// For each known change of release `r.b`, whether `r` found it.
pub fn recall(r: &Report, known: &[KnownChange]) -> Vec<Recall> {
    known
        .iter()
        .filter(|k| k.release == r.b)
        .map(|k| {
            let shows = |f: &&Finding| match (&k.added, &k.removed) {
                (Some(t), _) => f.right.contains(t.as_str()) && !f.left.contains(t.as_str()),
                (None, Some(t)) => f.left.contains(t.as_str()) && !f.right.contains(t.as_str()),
                (None, None) => false,
            };
            match r.stable.iter().find(shows) {
                Some(f) => Recall { change: k.clone(), found: true, note: format!("{:?} {}", f.kind, f.what) },
                None => {
                    let why = k.reach.clone().unwrap_or_else(|| "no stable difference shows it".into());
                    Recall { change: k.clone(), found: false, note: why }
                }
            }
        })
        .collect()
}

/// What an exploration found.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct Report {
    /// The older release.
    pub a: String,
    /// The newer release.
    pub b: String,
    /// The seed.
    pub seed: u64,
    /// Sessions run (each on both sides, twice).
    pub sessions: usize,
    /// Calls in them.
    pub calls: usize,
    /// Calls by tool.
    pub by_tool: BTreeMap<String, usize>,
    /// Calls by input class (its first part).
    pub by_class: BTreeMap<String, usize>,
    /// Fixture files in them.
    pub files: usize,
    /// The tools A's first request offers.
    pub offered: Vec<String>,
    /// Offered tools the generator never calls, each with why (`Agent (starts a sub-agent: …)`).
    pub not_explored: Vec<String>,
    /// Offered tools called only with inputs drawn from their schemas ([`schema_session`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from_schemas: Vec<String>,
    /// Stable differences.
    pub stable: Vec<Finding>,
    /// Differences between two runs of one side.
    pub noise: Vec<Finding>,
    /// Sessions that broke on a side (no evidence).
    pub broken: Vec<String>,
    /// Candidate probes written.
    pub candidates: Vec<Candidate>,
    /// The known changes of the newer release, found or not ([`recall`]).
    pub recall: Vec<Recall>,
    /// Runs of a subject made.
    pub runs: usize,
    /// Wall time.
    pub seconds: f64,
}

/// The record of an exploration ([`Published`]); `probes`, the diff of the catalogue's goldens of the
/// two releases judged by the committed cells, tells which findings a probe shows too (None: the
/// goldens of a side are not there, nothing is said of it).
pub fn published(r: &Report, probes: Option<&crate::transcript::diff::SetDiff>) -> Published {
    let mut stable: Vec<Stable> = Vec::new();
    for f in &r.stable {
        let said = statement(f, &r.a, &r.b);
        let shown = probes.map(|d| seen::shown_by(f, d));
        match stable.iter_mut().find(|s| s.kind == f.kind && s.said == said) {
            // the same words from another session: the probes that show either
            Some(s) => {
                if let (Some(have), Some(more)) = (s.shown_by.as_mut(), shown) {
                    have.extend(more);
                    have.sort();
                    have.dedup();
                }
            }
            None => stable.push(Stable { kind: f.kind, said, shown_by: shown }),
        }
    }
    Published {
        a: r.a.clone(),
        b: r.b.clone(),
        seed: r.seed,
        sessions: r.sessions,
        calls: r.calls,
        seconds: r.seconds.round() as u64,
        stable,
        noise: r.noise.len(),
        broken: r.broken.len(),
    }
}

/// A run of one side: its calls' outcomes, files (normalised), the first request's parts.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    outcomes: Vec<Option<Outcome>>,
    files: BTreeMap<String, String>,
    tools: Vec<String>,
    /// Each offered tool's description and input schema (the skill listing lives in Skill's at some
    /// releases, the Bash sandbox's path lists in Bash's).
    descriptions: BTreeMap<String, String>,
    /// The first request's model and max_tokens.
    model: String,
    first_texts: String,
    problem: Option<String>,
    /// Each offered tool's input schema, and whether it is deferred (offered for ToolSearch).
    schemas: BTreeMap<String, (Value, bool)>,
}

/// The session explored: the fidelity generator's, with Bash commands on the same files, `.claude/`
/// skills, agents and commands (byte-order marks, CRLF, front matter or none, a name apart from the
/// directory's), and two hooks that log
/// every payload they get into `hook-payloads.jsonl`.
pub fn session(rng: &mut Rng) -> Session {
    let mut s = sessions::session(rng);
    let bom = |t: &str| [&[0xEF, 0xBB, 0xBF][..], t.as_bytes()].concat();
    let claude_files: Vec<(&str, Vec<u8>)> = vec![
        (".claude/skills/plain/SKILL.md", b"---\nname: plain\ndescription: A plain skill\n---\nSay plain.\n".to_vec()),
        (
            ".claude/skills/bom/SKILL.md",
            bom("---\nname: bom\ndescription: A skill whose file starts with a BOM\n---\nSay bom.\n"),
        ),
        (
            ".claude/skills/crlf/SKILL.md",
            b"---\r\nname: crlf\r\ndescription: A CRLF skill\r\n---\r\nSay crlf.\r\n".to_vec(),
        ),
        (".claude/skills/bare/SKILL.md", b"No front matter at all.\n".to_vec()),
        // named apart from its directory: the listing showed only the directory's name, from 2.1.290 both
        // (found by the matrix of `skill.bom`, which exploration had missed for want of such a skill)
        (
            ".claude/skills/dir-named/SKILL.md",
            b"---\nname: other-name\ndescription: A skill named apart from its directory\n---\nSay other.\n".to_vec(),
        ),
        (".claude/commands/hello.md", bom("---\ndescription: A command with a BOM\n---\nSay hello.\n")),
        (".claude/agents/helper.md", bom("---\nname: helper\ndescription: An agent with a BOM\n---\nYou help.\n")),
    ];
    for (path, bytes) in claude_files {
        s.files.push(File { path: path.into(), class: "claude-config", bytes, cell_ids: Vec::new() });
    }
    // one byte past Read's size limit (256 KB), read whole
    let big: Vec<u8> = b"a line of the big file\n".iter().copied().cycle().take(262_145).collect();
    s.files.push(File { path: "big.txt".into(), class: "over-size-limit", bytes: big, cell_ids: Vec::new() });
    if let Some(first) = s.turns.first_mut() {
        first.push(Call {
            tool: "Read",
            input: json!({"file_path": "{cwd}/big.txt"}),
            target: Some("big.txt".into()),
            class: "over-size-limit/read".into(),
        });
    }
    let texts: Vec<String> = s.files.iter().filter(|f| f.class != "claude-config").map(|f| f.path.clone()).collect();
    for turn in s.turns.iter_mut().skip(1) {
        for _ in 0..1 + rng.below(2) {
            turn.push(bash_call(rng, &texts));
        }
    }
    s
}

/// A Bash command over the session's files: output of many shapes (stdout, stderr, both, none, an
/// exit code, a long output that is persisted, a missing command, a cd).
fn bash_call(rng: &mut Rng, files: &[String]) -> Call {
    let f = files.get(rng.below(files.len())).cloned().unwrap_or_else(|| "missing.txt".into());
    let q = format!("'{}'", f.replace('\'', "'\\''"));
    let (class, command) = match rng.below(11) {
        0 => ("cat", format!("cat {q}")),
        1 => ("wc", format!("wc -c -l {q}")),
        2 => ("head", format!("head -n 3 {q}")),
        3 => ("exit-code", "echo out; echo err >&2; exit 3".to_string()),
        4 => ("stderr", "echo only-err >&2".to_string()),
        5 => ("silent", "true".to_string()),
        6 => ("long-output", "head -c 40000 /dev/zero | tr '\\0' x; echo".to_string()),
        7 => ("missing-command", "probelab-no-such-command --flag".to_string()),
        8 => ("cd", "cd dir && pwd && ls".to_string()),
        9 => ("many-lines", "seq 1 3000".to_string()),
        _ => ("sort", format!("sort {q} | uniq -c | head -n 5")),
    };
    Call {
        tool: "Bash",
        input: json!({"command": command, "description": format!("bash {class}")}),
        target: None,
        class: format!("bash/{class}"),
    }
}

/// The probe of an explored session, on Claude Code at the default model.
fn probe(s: &Session, id: &str, about: &str) -> Result<crate::probe::Probe, String> {
    sessions::probe_shaped(s, &shape(id, about, s))
}

fn shape(id: &str, about: &str, s: &Session) -> sessions::Shape {
    let log = "cat >> hook-payloads.jsonl; echo >> hook-payloads.jsonl";
    let extra = json!({
        "deadline_secs": 180,
        "subject": {"claude-code": {"args": ["--allowedTools", "Grep,Glob"]}},
        "settings": {
            "permissions": {"deny": ["Read(secret/**)", "Edit(locked.txt)"]},
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": log}]}],
                "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": log}]}],
            },
        },
    });
    let mut claims: BTreeSet<String> = BTreeSet::new();
    for c in s.turns.iter().flatten() {
        claims.insert(claim_of(c.tool).to_string());
    }
    if claims.is_empty() {
        claims.insert("PIPE-1".into());
    }
    sessions::Shape {
        id: id.into(),
        about: about.into(),
        subjects: vec!["claude-code".into()],
        claims: claims.into_iter().collect(),
        extra: extra.as_object().cloned().unwrap_or_default(),
    }
}

/// The claim a tool's behaviour belongs to (docs/claims.md).
pub fn claim_of(tool: &str) -> &'static str {
    match tool {
        "Read" => "READ-1",
        "Edit" | "Write" => "EDIT-1",
        "NotebookEdit" => "NB-1",
        "Grep" => "GREP-1",
        "Glob" => "GLOB-1",
        "Bash" => "BASH-1",
        _ => "PIPE-1",
    }
}

/// What one run of `probe` on `cc` came to.
async fn run_one(probe: &crate::probe::Probe, cc: &ClaudeCode, layout: &Layout) -> Seen {
    let calls: usize = probe.script.turns.iter().map(|t| t.tool_use.len()).sum();
    let run = run_conversation(probe, cc, &layout.fixtures).await;
    // the first turn's request whole: after a prelude (request 0, the deferred tools loaded) the record
    // keeps it by reference to the prelude's, its model and tools left out as the same
    let first = run.as_ref().ok().and_then(|r| {
        let view = crate::transcript::View { exchanges: &r.exchanges, script: &r.script };
        view.request_index(1).and_then(|i| view.requests().whole(i))
    });
    // every tool any request offered, with its schema: a deferred tool's definition comes in the
    // requests after ToolSearch loaded it
    let mut schemas: BTreeMap<String, (Value, bool)> = BTreeMap::new();
    for req in run.as_ref().ok().into_iter().flat_map(|r| r.exchanges.iter()).filter_map(|e| e.request.as_ref()) {
        for t in req["tools"].as_array().into_iter().flatten() {
            let Some(name) = t["name"].as_str() else { continue };
            let deferred = t.get("defer_loading") == Some(&Value::Bool(true));
            let e = schemas.entry(name.to_string()).or_insert_with(|| (Value::Null, deferred));
            e.1 |= deferred;
            if e.0.is_null() {
                e.0 = t["input_schema"].clone();
            }
        }
    }
    let refused: Option<String> = run.as_ref().ok().and_then(|r| {
        r.exchanges.iter().find_map(|e| e.violation.as_ref().map(|v| format!("the stub refused a request: {}", v.kind)))
    });
    let places_norm = run.as_ref().ok().map(|r| {
        let root = r.sandbox.root.display().to_string();
        let cwd = r.sandbox.cwd.display().to_string();
        let home = r.sandbox.home.display().to_string();
        // the project's directory under ~/.claude/projects is named after the cwd's path
        let slug = cwd.replace(['/', '.'], "-");
        move |t: &str| {
            let t = t
                .replace(&cwd, "<cwd>")
                .replace(&home, "<home>")
                .replace(&root, "<sandbox>")
                .replace(&slug, "<cwd-slug>");
            volatile(&t)
        }
    });
    let ran: Ran = sessions::collect(run, calls, &crate::subject::id::claude_code_name(&cc.version));
    let files = ran
        .files
        .iter()
        .map(|(k, v)| {
            let text = String::from_utf8_lossy(v).into_owned();
            let mut text = places_norm.as_ref().map_or(text.clone(), |n| n(&text));
            // hooks of one turn's calls run side by side: their payloads are compared as a set
            if k.ends_with("hook-payloads.jsonl") {
                let mut lines: Vec<&str> = text.lines().collect();
                lines.sort_unstable();
                text = lines.join("\n");
            }
            (k.clone(), text)
        })
        .collect();
    let tools = first
        .as_ref()
        .and_then(|r| r["tools"].as_array())
        .map(|a| {
            a.iter()
                .filter_map(|t| {
                    let name = t["name"].as_str()?;
                    Some(if t.get("defer_loading") == Some(&Value::Bool(true)) {
                        format!("{name} (deferred)")
                    } else {
                        name.to_string()
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let descriptions: BTreeMap<String, String> = first
        .as_ref()
        .and_then(|r| r["tools"].as_array())
        .map(|a| {
            a.iter()
                .filter_map(|t| {
                    let text = format!(
                        "{}\ninput_schema: {}",
                        t["description"].as_str().unwrap_or_default(),
                        serde_json::to_string_pretty(&t["input_schema"]).unwrap_or_default()
                    );
                    Some((t["name"].as_str()?.to_string(), places_norm.as_ref().map_or(text.clone(), |n| n(&text))))
                })
                .collect()
        })
        .unwrap_or_default();
    // the first request's messages (the prompt, reminders, the skill and agent listings): strings, or
    // text blocks
    let first_texts = first
        .as_ref()
        .map(|r| {
            let messages = r["messages"].as_array().cloned().unwrap_or_default();
            let texts: Vec<&str> = messages
                .iter()
                .flat_map(|m| match m["content"].as_array() {
                    Some(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>(),
                    None => m["content"].as_str().into_iter().collect(),
                })
                .collect();
            texts
                .iter()
                .map(|t| places_norm.as_ref().map_or(t.to_string(), |n| n(t)))
                .collect::<Vec<_>>()
                .join("\n---\n")
        })
        .unwrap_or_default();
    let model = first.as_ref().map(|r| format!("{} max_tokens {}", r["model"], r["max_tokens"])).unwrap_or_default();
    // the tools the first request only names, deferred (announced for ToolSearch, no schema yet): their
    // interface there is that they are deferred, not that they are gone
    let mut descriptions = descriptions;
    for name in crate::transcript::diff::announced_deferred(&first_texts, "\n") {
        descriptions.entry(name.clone()).or_insert_with(|| DEFERRED.to_string());
        schemas.entry(name).or_insert((Value::Null, true)).1 = true;
    }
    Seen {
        outcomes: ran.outcomes,
        files,
        tools,
        descriptions,
        model,
        first_texts,
        problem: ran.problem.or(refused),
        schemas,
    }
}

/// The interface of a tool the first request announces by name for ToolSearch without defining it.
pub const DEFERRED: &str = "(deferred: named for ToolSearch, not defined in the first request)";

/// The interface of a tool the first request neither defines nor announces.
pub const NOT_OFFERED: &str = "(not offered)";

/// Values that change from run to run in what the lab does not normalise itself: UUIDs (a session's
/// id), dates and times, durations.
fn volatile(t: &str) -> String {
    static RES: std::sync::LazyLock<Vec<(regex::Regex, &'static str)>> = std::sync::LazyLock::new(|| {
        [
            (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>"),
            (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z?", "<time>"),
            (r#""duration_ms":\d+"#, r#""duration_ms":<n>"#),
            (r"toolu_[A-Za-z0-9_-]+", "<tool-use-id>"),
        ]
        .into_iter()
        .filter_map(|(r, w)| regex::Regex::new(r).ok().map(|r| (r, w)))
        .collect()
    });
    let mut out = t.to_string();
    for (re, with) in RES.iter() {
        out = re.replace_all(&out, *with).into_owned();
    }
    out
}

fn show(o: &Option<Outcome>) -> String {
    match o {
        None => "(no result)".into(),
        Some(o) if o.is_error => format!("[is_error] {}", o.text),
        Some(o) => o.text.clone(),
    }
}

/// The differences of one session between the two sides (each run twice): stable ones, and noise.
fn compare(session: usize, calls: &[Call], a: [&Seen; 2], b: [&Seen; 2]) -> (Vec<Finding>, Vec<Finding>) {
    let (mut stable, mut noise) = (Vec::new(), Vec::new());
    let mut push = |kind: Kind,
                    call: Option<usize>,
                    what: String,
                    class: String,
                    input: Option<Value>,
                    four: [String; 4]| {
        let [a1, a2, b1, b2] = four;
        let base =
            Finding { kind, session, call, what, class, input, left: String::new(), right: String::new(), side: None };
        if a1 != a2 {
            noise.push(Finding { left: a1, right: a2, side: Some("a".into()), ..base.clone() });
        } else if b1 != b2 {
            noise.push(Finding { left: b1, right: b2, side: Some("b".into()), ..base });
        } else if a1 != b1 {
            stable.push(Finding { left: a1, right: b1, ..base });
        }
    };
    for (i, c) in calls.iter().enumerate() {
        let four = [a[0], a[1], b[0], b[1]].map(|s| show(&s.outcomes.get(i).cloned().flatten()));
        push(Kind::Result, Some(i + 1), c.tool.to_string(), c.class.clone(), Some(c.input.clone()), four);
    }
    let paths: BTreeSet<&String> = [a[0], a[1], b[0], b[1]].iter().flat_map(|s| s.files.keys()).collect();
    for p in paths {
        let four = [a[0], a[1], b[0], b[1]].map(|s| s.files.get(p).cloned().unwrap_or_else(|| "(absent)".into()));
        push(Kind::File, None, p.clone(), "files".into(), None, four);
    }
    let four = [a[0], a[1], b[0], b[1]].map(|s| s.tools.join(" "));
    push(Kind::Request, None, "tools offered".into(), "request".into(), None, four);
    let named: BTreeSet<&String> = [a[0], a[1], b[0], b[1]].iter().flat_map(|s| s.descriptions.keys()).collect();
    for t in named {
        let four =
            [a[0], a[1], b[0], b[1]].map(|s| s.descriptions.get(t).cloned().unwrap_or_else(|| NOT_OFFERED.into()));
        push(Kind::Request, None, format!("interface of {t}"), "request".into(), None, four);
    }
    let four = [a[0], a[1], b[0], b[1]].map(|s| s.model.clone());
    push(Kind::Request, None, "model".into(), "request".into(), None, four);
    let four = [a[0], a[1], b[0], b[1]].map(|s| s.first_texts.clone());
    push(Kind::Request, None, "first request's messages".into(), "request".into(), None, four);
    (stable, noise)
}

/// Explores `a` → `b` (installed releases) with `opts`, on `layout`'s fixtures; `progress` hears each
/// step.
pub async fn explore(
    a: &ClaudeCode,
    b: &ClaudeCode,
    opts: &Options,
    layout: &Layout,
    progress: &dyn Fn(&str),
) -> Report {
    let started = Instant::now();
    let mut rng = Rng(opts.seed);
    let mut report = Report {
        a: a.version.clone(),
        b: b.version.clone(),
        seed: opts.seed,
        sessions: opts.sessions,
        ..Report::default()
    };
    let mut kept: Vec<(Session, Vec<Call>, Finding)> = Vec::new();
    let mut requests: Vec<(Session, Finding)> = Vec::new();
    // what both sides' first requests offer: name → (input schema, deferred on either side)
    let mut offered: BTreeMap<String, (Value, bool)> = BTreeMap::new();
    for i in 0..opts.sessions {
        let s = session(&mut rng);
        let calls: Vec<Call> = s.turns.iter().flatten().cloned().collect();
        report.calls += calls.len();
        report.files += s.files.len();
        for c in &calls {
            *report.by_tool.entry(c.tool.to_string()).or_default() += 1;
            *report.by_class.entry(c.class.split('/').next().unwrap_or("").to_string()).or_default() += 1;
        }
        let id = format!("discover.s{i}");
        let probe = match probe(&s, &id, "a generated session of probelab discover") {
            Ok(p) => p,
            Err(e) => {
                report.broken.push(format!("session {i}: {e}"));
                continue;
            }
        };
        progress(&format!("session {}/{}: {} calls, {} files", i + 1, opts.sessions, calls.len(), s.files.len()));
        let (a1, b1) = tokio::join!(run_one(&probe, a, layout), run_one(&probe, b, layout));
        let (a2, b2) = tokio::join!(run_one(&probe, a, layout), run_one(&probe, b, layout));
        report.runs += 4;
        if report.offered.is_empty() {
            report.offered = a1.tools.clone();
        }
        for (name, (schema, deferred)) in a1.schemas.iter().chain(b1.schemas.iter()) {
            let e = offered.entry(name.clone()).or_insert_with(|| (schema.clone(), false));
            e.1 |= *deferred;
        }
        let problems: Vec<String> = [(&a1, &a.version), (&a2, &a.version), (&b1, &b.version), (&b2, &b.version)]
            .iter()
            .filter_map(|(s, v)| s.problem.as_ref().map(|p| format!("session {i} on {v}: {p}")))
            .collect();
        if !problems.is_empty() {
            report.broken.extend(problems);
            continue;
        }
        let (stable, noise) = compare(i, &calls, [&a1, &a2], [&b1, &b2]);
        for f in &stable {
            match f.kind {
                Kind::Result => kept.push((s.clone(), calls.clone(), f.clone())),
                Kind::Request => requests.push((s.clone(), f.clone())),
                Kind::File => {}
            }
        }
        report.stable.extend(stable);
        report.noise.extend(noise);
    }
    // the offered tools the sessions do not call, with inputs drawn from their schemas (the union of
    // both sides' first requests: a tool on one side only is called on both)
    // a deferred tool only named (from 2.1.304: announced in a message, its schema not sent): loaded
    // with one ToolSearch on each side, its definition read from the request after it
    let unknown: Vec<String> = offered
        .iter()
        .filter(|(n, (schema, _))| schema.is_null() && !EXPLORED_TOOLS.contains(&n.as_str()))
        .filter(|(n, _)| !NOT_FROM_SCHEMAS.iter().any(|(x, _)| x == *n))
        .map(|(n, _)| n.clone())
        .collect();
    if !unknown.is_empty() {
        let load = Session {
            files: Vec::new(),
            empty_dirs: Vec::new(),
            turns: vec![vec![Call {
                tool: "ToolSearch",
                input: json!({"query": format!("select:{}", unknown.join(","))}),
                target: None,
                class: "schema/load".into(),
            }]],
        };
        if let Ok(p) = probe(&load, "discover.load", "load the deferred tools' schemas") {
            progress(&format!("loading the schemas of {} deferred tool(s) with ToolSearch", unknown.len()));
            let (la, lb) = tokio::join!(run_one(&p, a, layout), run_one(&p, b, layout));
            report.runs += 2;
            for (name, (schema, _)) in la.schemas.iter().chain(lb.schemas.iter()) {
                if let Some(e) = offered.get_mut(name).filter(|e| e.0.is_null()) {
                    e.0 = schema.clone();
                }
            }
        }
    }
    if !offered.is_empty() {
        let (s, called) = schema_session(&offered);
        let i = opts.sessions;
        let calls: Vec<Call> = s.turns.iter().flatten().cloned().collect();
        if !calls.is_empty() {
            report.calls += calls.len();
            report.files += s.files.len();
            for c in &calls {
                *report.by_tool.entry(c.tool.to_string()).or_default() += 1;
                *report.by_class.entry("schema".to_string()).or_default() += 1;
            }
            progress(&format!("session {} (from the schemas of {} tools): {} calls", i + 1, called.len(), calls.len()));
            match probe(&s, &format!("discover.schemas{i}"), "the offered tools, with inputs drawn from their schemas")
            {
                Ok(p) => {
                    let (a1, b1) = tokio::join!(run_one(&p, a, layout), run_one(&p, b, layout));
                    let (a2, b2) = tokio::join!(run_one(&p, a, layout), run_one(&p, b, layout));
                    report.runs += 4;
                    let problems: Vec<String> =
                        [(&a1, &a.version), (&a2, &a.version), (&b1, &b.version), (&b2, &b.version)]
                            .iter()
                            .filter_map(|(s, v)| s.problem.as_ref().map(|p| format!("session {i} on {v}: {p}")))
                            .collect();
                    if problems.is_empty() {
                        // its results only: the request's parts are the other sessions' to compare
                        let (stable, noise) = compare(i, &calls, [&a1, &a2], [&b1, &b2]);
                        report.stable.extend(stable.into_iter().filter(|f| f.kind == Kind::Result));
                        report.noise.extend(noise.into_iter().filter(|f| f.kind == Kind::Result));
                    } else {
                        report.broken.extend(problems);
                    }
                    report.from_schemas = called;
                }
                Err(e) => report.broken.push(format!("session {i}: {e}")),
            }
        }
    }
    report.not_explored = offered
        .keys()
        .filter(|t| !EXPLORED_TOOLS.contains(&t.as_str()) && !report.from_schemas.contains(t))
        .map(|t| match NOT_FROM_SCHEMAS.iter().find(|(n, _)| n == t) {
            Some((_, why)) => format!("{t} ({why})"),
            None if offered.get(t).is_some_and(|(schema, _)| schema.is_null()) => {
                format!("{t} (deferred, and its schema did not load through ToolSearch)")
            }
            None => t.clone(),
        })
        .collect();
    if opts.minimise {
        // one of each distinct difference (the same texts in another session are the same finding)
        let mut seen: BTreeSet<(String, String, String)> = BTreeSet::new();
        let mut n = 0;
        for (s, calls, f) in kept {
            if n >= MAX_MINIMISED || !seen.insert((f.what.clone(), f.left.clone(), f.right.clone())) {
                continue;
            }
            n += 1;
            progress(&format!(
                "minimising {} {} (session {}, call {})",
                f.what,
                f.class,
                f.session,
                f.call.unwrap_or(0)
            ));
            match minimise(&s, &calls, &f, a, b, layout, &mut report.runs).await {
                Some(mini) => match write_candidate(&mini, &f, &report.a, &report.b, &opts.out, n) {
                    Ok(c) => report.candidates.push(c),
                    Err(e) => report.broken.push(format!("candidate {n}: {e}")),
                },
                None => progress("  not reproduced alone (it depends on other calls of its session)"),
            }
        }
    }
    if opts.minimise {
        // a difference of the request: the smallest session is the `.claude/` files and one Read, run
        // once more on both sides to see it stays
        let mut seen: BTreeSet<String> = BTreeSet::new();
        for (s, f) in requests {
            if !seen.insert(f.what.clone()) {
                continue;
            }
            let read = Call {
                tool: "Read",
                input: json!({"file_path": "{cwd}/.claude/skills/plain/SKILL.md"}),
                target: Some(".claude/skills/plain/SKILL.md".into()),
                class: "claude-config/read".into(),
            };
            let files = s.files.iter().filter(|x| x.class == "claude-config").cloned().collect();
            let mini = Session { files, empty_dirs: Vec::new(), turns: vec![vec![read]] };
            let Ok(p) = probe(&mini, "discover.minimal", "minimising") else { continue };
            let (x, y) = tokio::join!(run_one(&p, a, layout), run_one(&p, b, layout));
            report.runs += 2;
            let (four, _) = compare(0, &[], [&x, &x], [&y, &y]);
            if !four.iter().any(|g| g.what == f.what) {
                progress(&format!("  {}: not reproduced by the minimal session", f.what));
                continue;
            }
            let n = report.candidates.len() + 1;
            match write_candidate(&mini, &f, &report.a, &report.b, &opts.out, n) {
                Ok(c) => report.candidates.push(c),
                Err(e) => report.broken.push(format!("candidate {n}: {e}")),
            }
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    report
}

/// The smallest session found that still shows `f` (the differing call last), or `None` when the call
/// with its file's history does not show it alone.
async fn minimise(
    s: &Session,
    calls: &[Call],
    f: &Finding,
    a: &ClaudeCode,
    b: &ClaudeCode,
    layout: &Layout,
    runs: &mut usize,
) -> Option<Session> {
    let n = f.call?;
    let call = calls.get(n - 1)?.clone();
    let build = |prior: &[Call]| {
        let mut all: Vec<Call> = prior.to_vec();
        all.push(call.clone());
        let searches = all.iter().any(|c| c.target.is_none());
        let targets: BTreeSet<&String> = all.iter().filter_map(|c| c.target.as_ref()).collect();
        let files: Vec<File> = s
            .files
            .iter()
            .filter(|file| searches || file.class == "claude-config" || targets.contains(&file.path))
            .cloned()
            .collect();
        Session { files, empty_dirs: s.empty_dirs.clone(), turns: all.into_iter().map(|c| vec![c]).collect() }
    };
    let mut prior: Vec<Call> =
        calls[..n - 1].iter().filter(|c| c.target.is_some() && c.target == call.target).cloned().collect();
    let mut best: Option<Session> = None;
    let mut drop_at: Option<usize> = None;
    for _ in 0..MINIMISE_RUNS {
        let candidate: Vec<Call> = match drop_at {
            None => prior.clone(),
            Some(i) if i < prior.len() => {
                let mut p = prior.clone();
                p.remove(i);
                p
            }
            Some(_) => break,
        };
        let mini = build(&candidate);
        let probe = probe(&mini, "discover.minimal", "minimising").ok()?;
        let (x, y) = tokio::join!(run_one(&probe, a, layout), run_one(&probe, b, layout));
        *runs += 2;
        let last = candidate.len();
        let still = x.problem.is_none()
            && y.problem.is_none()
            && show(&x.outcomes.get(last).cloned().flatten()) != show(&y.outcomes.get(last).cloned().flatten());
        if still {
            best = Some(mini);
        }
        drop_at = match (drop_at, still) {
            (None, false) => return None,
            (None, true) => Some(0),
            (Some(i), true) => {
                prior = candidate;
                Some(i)
            }
            (Some(i), false) => Some(i + 1),
        };
    }
    best
}

/// The one-line statement of a result difference: the tool, the input class, and the first line
/// where the two texts part.
pub fn statement(f: &Finding, a: &str, b: &str) -> String {
    let (l, r) = (f.left.lines().collect::<Vec<_>>(), f.right.lines().collect::<Vec<_>>());
    if l == r {
        // the same lines: what differs is line ends or the end of the text
        return format!(
            "{} ({}) differs from {a} to {b} in line ends or trailing text only ({} vs {} bytes)",
            f.what,
            f.class,
            f.left.len(),
            f.right.len()
        );
    }
    if f.kind != Kind::Result {
        // a listing or a file: the lines that came and went, whatever moved around them
        let (lset, rset): (BTreeSet<&str>, BTreeSet<&str>) = (l.iter().copied().collect(), r.iter().copied().collect());
        let cut = |s: &str| s.chars().take(100).collect::<String>();
        let added: Vec<String> =
            r.iter().filter(|x| !lset.contains(*x)).take(4).map(|x| format!("+ {:?}", cut(x))).collect();
        let removed: Vec<String> =
            l.iter().filter(|x| !rset.contains(*x)).take(4).map(|x| format!("- {:?}", cut(x))).collect();
        if !added.is_empty() || !removed.is_empty() {
            return format!(
                "{} ({}) from {a} to {b}: {}",
                f.what,
                f.class,
                removed.into_iter().chain(added).collect::<Vec<_>>().join("; ")
            );
        }
    }
    let at = l.iter().zip(&r).position(|(x, y)| x != y).unwrap_or(l.len().min(r.len()));
    // each side from a little before where the two lines part (a long line's change is seldom in its
    // first 120 characters: Read's added sentence comes after the whole refusal)
    let from = match (l.get(at), r.get(at)) {
        (Some(x), Some(y)) => x.chars().zip(y.chars()).take_while(|(p, q)| p == q).count().saturating_sub(40),
        _ => 0,
    };
    let cut = |s: Option<&&str>| {
        s.map_or("(nothing)".to_string(), |s| {
            let shown: String = s.chars().skip(from).take(120).collect();
            if from > 0 {
                format!("…{shown}")
            } else {
                shown
            }
        })
    };
    format!(
        "{} ({}) differs from {a} to {b}: line {} {a}: {:?}; {b}: {:?}",
        f.what,
        f.class,
        at + 1,
        cut(l.get(at)),
        cut(r.get(at))
    )
}

fn write_candidate(mini: &Session, f: &Finding, a: &str, b: &str, out: &Path, n: usize) -> Result<Candidate, String> {
    let statement = statement(f, a, b);
    let slug: String = f
        .what
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    let id = format!("discovered.{}-{}.{slug}-{n}", a.replace('.', "-"), b.replace('.', "-"));
    let mut shaped = shape(&id, &statement, mini);
    if f.kind == Kind::Request {
        // what the first request offers: the tool pool (PIPE-7), the skill and agent listings (SKILL-1)
        shaped.claims = vec!["PIPE-7".into(), "SKILL-1".into()];
        // a check that holds on B's side only: the candidate then comes out otherwise on A, and its
        // bisection has an outcome to follow where the tools do the same on both
        if let Some(check) = request_check(f) {
            shaped.extra.insert("check".into(), json!([check]));
        }
    }
    let text = sessions::probe_text(mini, &shaped)?;
    crate::probe::parse(Path::new("candidate.toml"), &text)
        .map_err(|e| format!("the candidate does not parse: {e}"))?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let file = out.join(format!("{slug}-{n}.toml"));
    let head = if f.kind == Kind::Result {
        format!(
            "# Found by `probelab discover {a} {b}`: {statement}\n# {a} gave:\n{}\n# {b} gave:\n{}\n",
            comment(&f.left),
            comment(&f.right)
        )
    } else {
        format!("# Found by `probelab discover {a} {b}`: {statement}\n")
    };
    crate::safe_fs::write_inside(out, &file, format!("{head}{text}").as_bytes())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let calls = mini.turns.iter().map(Vec::len).sum();
    Ok(Candidate { file, statement, calls, kind: f.kind, boundary: None, bisect_note: String::new() })
}

/// A check of the first request that holds on the newer side of a request difference and not on the
/// older: the tools it adds or drops, the model it names, or a piece of text only one side's tool
/// definition (or messages) holds — a piece the request's JSON carries verbatim (no quote, backslash
/// or placeholder of the normaliser in it), at least [`MIN_PIECE`] chars. None where nothing tells the
/// sides apart so (the candidate is then not bisected: its note says why).
pub fn request_check(f: &Finding) -> Option<Value> {
    let about = format!("holds on the newer side of: {}", f.what);
    if f.what == "tools offered" {
        let l: BTreeSet<&str> = f.left.split_whitespace().collect();
        let r: BTreeSet<&str> = f.right.split_whitespace().collect();
        let added: Vec<&str> = r.difference(&l).copied().collect();
        let dropped: Vec<&str> = l.difference(&r).copied().collect();
        if added.is_empty() && dropped.is_empty() {
            return None;
        }
        let mut c = json!({"about": about, "request": 1});
        if !added.is_empty() {
            c["tools_include"] = json!(added);
        }
        if !dropped.is_empty() {
            c["tools_exclude"] = json!(dropped);
        }
        return Some(c);
    }
    if f.what == "model" {
        return Some(json!({"about": about, "request": 1, "json": [{"pointer": "/model", "equals": f.right}]}));
    }
    let mut c = json!({"about": about, "request": 1});
    if f.what == "first request's messages" {
        // the messages only: a text the older release sent in its system prompt is no match
        c["part"] = json!("messages");
    }
    if let Some(tool) = f.what.strip_prefix("interface of ") {
        // not defined in the first request: not offered, or deferred (named for ToolSearch only)
        let undefined = |s: &str| s == NOT_OFFERED || s == DEFERRED;
        match (f.left.as_str(), f.right.as_str()) {
            (l, _) if undefined(l) => return Some(json!({"about": about, "request": 1, "tools_include": [tool]})),
            (_, r) if undefined(r) => return Some(json!({"about": about, "request": 1, "tools_exclude": [tool]})),
            _ => c["tool"] = json!(tool),
        }
    }
    match (piece_only_in(&f.right, &f.left), piece_only_in(&f.left, &f.right)) {
        (Some(p), _) => c["contains"] = json!(p),
        (None, Some(p)) => c["not_contains"] = json!(p),
        (None, None) => return None,
    }
    Some(c)
}

/// The shortest piece of text [`request_check`] takes.
pub const MIN_PIECE: usize = 16;

/// The longest piece of a line of `this` that `other` does not hold, cut at what a request's JSON
/// would not carry as written (quotes, backslashes, control characters) and at the normaliser's
/// placeholders (`<cwd>`, `<id-1>`).
fn piece_only_in(this: &str, other: &str) -> Option<String> {
    let placeholder = regex::Regex::new(r"<[a-z][a-z0-9-]*>").ok()?;
    let mut best: Option<&str> = None;
    for line in this.lines().filter(|l| !other.contains(*l)) {
        for part in placeholder.split(line) {
            for piece in part.split(|c: char| c == '"' || c == '\\' || c.is_control()) {
                let piece = piece.trim();
                let fits = piece.chars().count() >= MIN_PIECE && !other.contains(piece);
                if fits && best.is_none_or(|b| piece.len() > b.len()) {
                    best = Some(piece);
                }
            }
        }
    }
    best.map(str::to_string)
}

fn comment(text: &str) -> String {
    text.lines()
        .take(12)
        .map(|l| format!("#   {}", l.chars().take(160).collect::<String>()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The report in words.
pub fn render(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(o, "# probelab discover {} {}", r.a, r.b);
    let _ = writeln!(
        o,
        "\n{} sessions (seed {:#x}), {} calls, {} fixture files, {} runs, {:.0} s",
        r.sessions, r.seed, r.calls, r.files, r.runs, r.seconds
    );
    let tools: Vec<String> = r.by_tool.iter().map(|(t, n)| format!("{t} {n}")).collect();
    let _ = writeln!(o, "calls by tool: {}", tools.join(", "));
    let classes: Vec<String> = r.by_class.iter().map(|(t, n)| format!("{t} {n}")).collect();
    let _ = writeln!(o, "calls by input class: {}", classes.join(", "));
    if !r.from_schemas.is_empty() {
        let _ = writeln!(o, "called with inputs drawn from their schemas: {}", r.from_schemas.join(", "));
    }
    if !r.not_explored.is_empty() {
        let _ = writeln!(o, "offered and not explored: {}", r.not_explored.join(", "));
    }
    for b in &r.broken {
        let _ = writeln!(o, "broken (no evidence): {b}");
    }
    let distinct: BTreeSet<(Kind, &str, &str, &str)> =
        r.stable.iter().map(|f| (f.kind, f.what.as_str(), f.left.as_str(), f.right.as_str())).collect();
    let _ = writeln!(o, "\n## Stable differences: {} ({} distinct)", r.stable.len(), distinct.len());
    let mut shown = BTreeSet::new();
    for f in &r.stable {
        if !shown.insert((f.kind, f.what.clone(), f.left.clone(), f.right.clone())) {
            continue;
        }
        let _ = writeln!(
            o,
            "\n- {:?} {} [{}]{}",
            f.kind,
            f.what,
            f.class,
            f.call.map(|c| format!(" session {} call {c}", f.session)).unwrap_or_default()
        );
        if let Some(i) = &f.input {
            let _ = writeln!(o, "  input: {}", i.to_string().chars().take(300).collect::<String>());
        }
        let _ = writeln!(o, "  {}", statement(f, &r.a, &r.b));
    }
    let _ = writeln!(o, "\n## Noise (a side that varied between its own runs): {}", r.noise.len());
    for f in r.noise.iter().take(20) {
        let _ = writeln!(
            o,
            "- {:?} {} [{}] on {}",
            f.kind,
            f.what,
            f.class,
            if f.side.as_deref() == Some("a") { &r.a } else { &r.b }
        );
    }
    if !r.recall.is_empty() {
        let found = r.recall.iter().filter(|k| k.found).count();
        let _ = writeln!(o, "\n## Known changes of {}: {found} of {} found", r.b, r.recall.len());
        for k in &r.recall {
            let _ = writeln!(
                o,
                "- {} {} ({}): {}",
                if k.found { "found" } else { "NOT found" },
                k.change.what,
                k.change.source,
                k.note
            );
        }
    }
    let _ = writeln!(o, "\n## Candidate probes: {}", r.candidates.len());
    for c in &r.candidates {
        let first = match (&c.boundary, c.bisect_note.is_empty()) {
            (Some((last, first)), _) => {
                format!("; first on {first} (bisected over the releases between; the last as on {}: {last})", r.a)
            }
            (None, false) => format!("; not bisected to a release: {}", c.bisect_note),
            (None, true) => String::new(),
        };
        let _ = writeln!(o, "- {} ({} calls): {}{first}", c.file.display(), c.calls, c.statement);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_says_in_words_how_many_findings_a_probe_shows() {
        let record = |shown: &[Option<Vec<String>>]| Published {
            a: "2.1.1".into(),
            b: "2.1.2".into(),
            seed: 1,
            sessions: 2,
            calls: 10,
            seconds: 3,
            stable: shown
                .iter()
                .enumerate()
                .map(|(i, s)| Stable { kind: Kind::Result, said: format!("Read ({i}) differs"), shown_by: s.clone() })
                .collect(),
            noise: 0,
            broken: 0,
        };
        let by = |p: &str| Some(vec![p.to_string()]);
        for (shown, says) in [
            (vec![by("read.a")], "; it is shown by a probe of the catalogue too (each said below"),
            (vec![by("read.a"), by("read.b")], "; all 2 are shown by a probe of the catalogue too"),
            (vec![Some(vec![])], "; it is shown by no probe of the catalogue (each said below"),
            (vec![Some(vec![]), Some(vec![])], "; none of the 2 is shown by a probe of the catalogue"),
            (vec![Some(vec![]), by("read.b")], "; 1 shown by no probe of the catalogue, 1 by a probe too"),
            (vec![None, None], "; not compared with the probes (the goldens of a side were not there)"),
            (vec![Some(vec![]), None], "; 1 of the 1 compared with the probes shown by none, 1 not compared"),
        ] {
            let page = page_section(&record(&shown));
            assert!(page.contains(says), "{shown:?}: {page}");
        }
        let page = page_section(&record(&[Some(vec![]), None, by("read.b")]));
        assert!(page.contains("- result: Read (0) differs — shown by no probe\n"), "{page}");
        assert!(page.contains("- result: Read (1) differs — not compared with the probes\n"), "{page}");
        assert!(page.contains("- result: Read (2) differs — shown by `read.b` too\n"), "{page}");
    }

    #[test]
    fn the_tools_a_message_announces_as_deferred_are_read_by_name() {
        let text = "<system-reminder>\nThe following deferred tools are now available via ToolSearch. Their schemas are NOT loaded — use ToolSearch with query \"select:<name>\":\nCronCreate\nTaskGet\nmcp__x__y\n\nAfter the list.\n---\nThe following deferred tools are now available via ToolSearch. Load them:\nCronCreate\nMonitor\n";
        assert_eq!(
            crate::transcript::diff::announced_deferred(text, "\n"),
            ["CronCreate", "TaskGet", "mcp__x__y", "Monitor"]
        );
        assert!(crate::transcript::diff::announced_deferred("no such message", "\n").is_empty());
    }

    #[test]
    fn inputs_are_drawn_from_a_tool_s_schema_and_a_deferred_tool_is_loaded_first() {
        let schema = json!({
            "type": "object",
            "properties": {
                "cron": {"type": "string"},
                "prompt": {"type": "string"},
                "recurring": {"type": "boolean"},
                "durable": {"type": "boolean"},
                "kind": {"enum": ["a", "b"]},
                "limit": {"type": "integer", "minimum": 5},
            },
            "required": ["cron", "prompt"],
        });
        let inputs = schema_inputs(&schema);
        let classes: Vec<&str> = inputs.iter().map(|(c, _)| *c).collect();
        assert_eq!(classes, ["required", "every-property", "edges", "none-of-the-required"]);
        assert_eq!(inputs[0].1, json!({"cron": "*/5 * * * *", "prompt": "probe text"}));
        assert_eq!(inputs[1].1["limit"], json!(5));
        assert_eq!(inputs[1].1["kind"], json!("a"));
        assert_eq!(inputs[2].1, json!({"cron": "", "prompt": ""}));
        // nothing required: the empty input alone
        assert_eq!(schema_inputs(&json!({"type": "object", "properties": {}})), [("required", json!({}))]);
        let offered: BTreeMap<String, (Value, bool)> = [
            ("CronCreate".to_string(), (schema.clone(), true)),
            ("Agent".to_string(), (schema.clone(), false)),
            ("Read".to_string(), (schema.clone(), false)),
            ("mcp__fixture__echo".to_string(), (schema, false)),
        ]
        .into_iter()
        .collect();
        let (s, called) = schema_session(&offered);
        assert_eq!(called, ["CronCreate"], "Agent needs a sub-conversation, Read is explored, MCP is the probe's own");
        let calls: Vec<&Call> = s.turns.iter().flatten().collect();
        assert_eq!(calls[0].tool, "ToolSearch");
        assert_eq!(calls[0].input, json!({"query": "select:CronCreate"}));
        assert_eq!(calls.len(), 5);
        assert!(calls[1..].iter().all(|c| c.tool == "CronCreate"));
        // the session is a probe that parses
        assert!(probe(&s, "discover.schemas0", "t").is_ok());
    }

    #[test]
    fn a_request_difference_gets_a_check_that_holds_on_the_newer_side_only() {
        let f = |what: &str, left: &str, right: &str| Finding {
            kind: Kind::Request,
            session: 0,
            call: None,
            what: what.into(),
            class: "request".into(),
            input: None,
            left: left.into(),
            right: right.into(),
            side: None,
        };
        let c = request_check(&f("tools offered", "Bash Read", "Bash NotebookEdit")).unwrap_or_default();
        assert_eq!(
            (c["tools_include"].clone(), c["tools_exclude"].clone()),
            (json!(["NotebookEdit"]), json!(["Read"]))
        );
        let c = request_check(&f("interface of Skill", "(not offered)", "Skill: runs")).unwrap_or_default();
        assert_eq!(c["tools_include"], json!(["Skill"]));
        // a tool the newer release defers (named for ToolSearch, not defined in its first request) is not
        // defined there: the check is that its first request lacks it, never a text of its definition
        let c = request_check(&f("interface of CronCreate", "Schedules a prompt", DEFERRED)).unwrap_or_default();
        assert_eq!((c["tools_exclude"].clone(), c.get("tool")), (json!(["CronCreate"]), None));
        // a piece only the newer side has, cut at quotes and at the normaliser's placeholders
        let left = "Lists skills.\nRead <cwd>/a first";
        let right = "Lists skills.\n- bom-skill: a skill whose file starts with a BOM \"x\" at <cwd>/s";
        let c = request_check(&f("interface of Skill", left, right)).unwrap_or_default();
        assert_eq!(
            (c["tool"].clone(), c["contains"].clone()),
            (json!("Skill"), json!("- bom-skill: a skill whose file starts with a BOM"))
        );
        // only the older side has one: the check says it is gone
        let c =
            request_check(&f("first request's messages", "hello\nan older reminder line", "hello")).unwrap_or_default();
        assert_eq!(c["not_contains"], json!("an older reminder line"));
        assert_eq!(request_check(&f("model", "a", "b")).map(|c| c["json"][0]["equals"].clone()), Some(json!("b")));
        // nothing long enough to tell them apart: no check
        assert_eq!(request_check(&f("first request's messages", "a b", "a c")), None);
        // the check is one a probe takes: the candidate parses with it
        let mini = Session { turns: vec![vec![]], files: vec![], empty_dirs: vec![] };
        let mut shaped = shape("discovered.x", "s", &mini);
        shaped
            .extra
            .insert("check".into(), json!([request_check(&f("tools offered", "A", "A B")).unwrap_or_default()]));
        let text = sessions::probe_text(&mini, &shaped).unwrap_or_default();
        assert!(crate::probe::parse(Path::new("c.toml"), &text).is_ok(), "{text}");
    }

    #[test]
    fn a_bisected_candidate_names_its_first_release_and_one_that_was_not_says_why() {
        let mut r = Report {
            a: "2.1.319".into(),
            b: "2.1.322".into(),
            seed: 1,
            sessions: 1,
            calls: 2,
            files: 1,
            runs: 4,
            seconds: 1.0,
            ..Report::default()
        };
        let c = |name: &str, kind: Kind, boundary: Option<(&str, &str)>, note: &str| Candidate {
            file: PathBuf::from(name),
            statement: format!("{name} differs"),
            calls: 2,
            kind,
            boundary: boundary.map(|(a, b)| (a.to_string(), b.to_string())),
            bisect_note: note.into(),
        };
        r.candidates.push(c("nb.toml", Kind::Result, Some(("2.1.319", "2.1.321")), ""));
        r.candidates.push(c("req.toml", Kind::Request, None, "2.1.319 and 2.1.322 behave the same"));
        r.candidates.push(c("plain.toml", Kind::Result, None, ""));
        let text = render(&r);
        assert!(text.contains("- nb.toml (2 calls): nb.toml differs; first on 2.1.321 (bisected over the releases between; the last as on 2.1.319: 2.1.319)\n"), "{text}");
        assert!(text.contains("- req.toml (2 calls): req.toml differs; not bisected to a release: 2.1.319 and 2.1.322 behave the same\n"), "{text}");
        assert!(text.contains("- plain.toml (2 calls): plain.toml differs\n"), "{text}");
        // a report written before candidates had a kind reads as a result's
        let old: Candidate = serde_json::from_str(r#"{"file": "x.toml", "statement": "s", "calls": 1}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((old.kind, old.boundary), (Kind::Result, None));
    }

    fn seen(text: &str, file: &str, tools: &str) -> Seen {
        Seen {
            outcomes: vec![Some(Outcome { text: text.into(), is_error: false })],
            files: [("f.txt".to_string(), file.to_string())].into_iter().collect(),
            tools: tools.split(' ').map(str::to_string).collect(),
            descriptions: BTreeMap::new(),
            model: String::new(),
            first_texts: String::new(),
            problem: None,
            schemas: BTreeMap::new(),
        }
    }

    #[test]
    fn a_difference_is_stable_only_when_each_side_agrees_with_itself() {
        let call = Call { tool: "Read", input: json!({}), target: Some("f.txt".into()), class: "lf/read".into() };
        let calls = vec![call];
        let (x, y, z) = (seen("one", "a", "Read"), seen("two", "a", "Read Bash"), seen("three", "b", "Read"));
        // A says one, B says two, each twice: a stable result difference, and the tools offered differ
        let (stable, noise) = compare(0, &calls, [&x, &x], [&y, &y]);
        assert!(noise.is_empty());
        assert_eq!(
            stable.iter().map(|f| (f.kind, f.left.as_str(), f.right.as_str())).collect::<Vec<_>>(),
            vec![(Kind::Result, "one", "two"), (Kind::Request, "Read", "Read Bash")]
        );
        // B varies between its runs: noise, never a difference
        let (stable, noise) = compare(0, &calls, [&x, &x], [&y, &z]);
        assert!(stable.iter().all(|f| f.kind != Kind::Result && f.kind != Kind::File), "{stable:?}");
        assert!(noise.iter().any(|f| f.kind == Kind::Result && f.side.as_deref() == Some("b")));
        assert!(noise.iter().any(|f| f.kind == Kind::File));
        // the same on both sides: nothing
        let (stable, noise) = compare(0, &calls, [&x, &x], [&x, &x]);
        assert!(stable.is_empty() && noise.is_empty());
    }

    #[test]
    fn the_statement_names_the_first_line_that_differs() {
        let f = Finding {
            kind: Kind::Result,
            session: 0,
            call: Some(1),
            what: "Read".into(),
            class: "bom/read".into(),
            input: None,
            left: "a\nb\nc".into(),
            right: "a\nB\nc".into(),
            side: None,
        };
        assert_eq!(
            statement(&f, "2.1.1", "2.1.2"),
            "Read (bom/read) differs from 2.1.1 to 2.1.2: line 2 2.1.1: \"b\"; 2.1.2: \"B\""
        );
        assert!(volatile("id 123e4567-e89b-12d3-a456-426614174000 at 2026-12-05T01:02:03.456Z").contains("<uuid>"));
    }

    #[test]
    fn an_explored_session_makes_a_probe_that_parses_with_its_skills_and_hooks() {
        let mut rng = Rng(7);
        let s = session(&mut rng);
        assert!(s
            .files
            .iter()
            .any(|f| f.path == ".claude/skills/bom/SKILL.md" && f.bytes.starts_with(&[0xEF, 0xBB, 0xBF])));
        assert!(s.turns.iter().flatten().any(|c| c.tool == "Bash"));
        let p = probe(&s, "discover.t", "t").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.subjects, vec!["claude-code".to_string()]);
        assert!(p.claims.iter().any(|c| c == "BASH-1"));
    }
}
