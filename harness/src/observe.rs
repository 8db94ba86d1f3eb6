//! What a run shows, layer by layer, for comparing versions: an [`Observation`] of one (probe, subject
//! version) run.
//!
//! - **behaviour**: what the tools did — each scripted call's tool name, its result text and `is_error`
//!   (normalised, every byte the model sees — trailing white space, where one block ends — but what
//!   [`crate::transcript::normalise::FINGERPRINT_STEPS`] name: the reminders a subject appends to
//!   results), the files in the working directory after the
//!   run (a SHA-256 each, text normalised first), and for exec probes the exit, stdout and stderr. Its
//!   SHA-256 is the run's *behaviour fingerprint*: two versions whose fingerprints are equal behaved the
//!   same on the probe.
//! - **interface**: the tools the first request offered, each as the hash of its name, description and
//!   schema (the request-only fields `defer_loading` and `cache_control` left out).
//! - **prompt**: the hash of the first request's system blocks (the same blob hash a golden names).
//! - **request shape**: the first request's top-level fields, model, `max_tokens`, the `anthropic-beta`
//!   list, the header names, `anthropic-version`, and the extra fields tools carry (`defer_loading`…).
//!
//! Version strings (the billing header's `cc_version`, the User-Agent's), ids, dates and paths are
//! noise, taken out by the named steps of [`crate::transcript::normalise`]. The outcome of the run — pass,
//! changed, n/a — comes with it ([`Outcome`]), and per claim the probe cites, what that outcome says of
//! the claim ([`ClaimVerdict`]).

use crate::check::Verdict;
use crate::probe::Probe;
use crate::subject::exec::ExecRecord;
use crate::transcript::normalise::{fingerprint_text, BLOCK_SEPARATOR};
use crate::transcript::{sha256, View};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use stub_messages::script::MAIN;
use stub_messages::ExchangeKind;

/// Why the observatory's files (its cells, the conformance table) could not be read or written (the
/// message names the file; the cause is its source, never repeated in the message).
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// A file or directory could not be read.
    #[error("{}", path.display())]
    Read {
        /// The file or directory.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A cell file does not parse as an observation.
    #[error("{}: not an observation of probelab matrix", path.display())]
    NotAnObservation {
        /// The file.
        path: std::path::PathBuf,
        /// The parser's error (line and column in it).
        source: serde_json::Error,
    },
    /// A file that does not parse as what it should hold (the conformance table).
    #[error("{}", path.display())]
    Parse {
        /// The file.
        path: std::path::PathBuf,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// A cell that does not name itself: its probe is no probe id, or it is filed under another
    /// version or probe than it says (a cell names the files written from it).
    #[error("{}: {why}", path.display())]
    Misfiled {
        /// The file.
        path: std::path::PathBuf,
        /// What it says against where it is.
        why: String,
    },
    /// A directory given as cells holds none.
    #[error(
        "{} holds no cells (<dir>/<version>/<probe>.json, as `probelab matrix --out DIR` or a matrix test shard \
         writes them)",
        dir.display()
    )]
    NoCells {
        /// The directory.
        dir: std::path::PathBuf,
    },
    /// A directory could not be created.
    #[error("cannot create {}", path.display())]
    Create {
        /// The directory.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A value could not be made into JSON.
    #[error("cannot make JSON")]
    Json(#[source] serde_json::Error),
}

/// How a (probe, version) run came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Every check that applies to the version, and every invariant, passed.
    Pass,
    /// A check failed: the behaviour the probe records is not this version's.
    Changed,
    /// A tool the probe calls is not offered by this version (said in the reason).
    NotApplicable,
    /// The lab could not run the probe (an install, a set-up failure): no verdict.
    Error,
    /// The run broke an invariant of every run (a request refused by the stub, a scripted turn not
    /// served, the deadline, a script exhausted, the subject gone before the model ended the run): the
    /// probe's script did not fit this version, so what the run shows is no behaviour of the subject —
    /// never a change, never the source of an interface, budget, claim or timeline fact. The probe needs
    /// repair on this version (the reason says which invariant and why).
    Broken,
}

impl Outcome {
    /// The word of the matrix.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Changed => "changed",
            Outcome::NotApplicable => "n/a",
            Outcome::Error => "error",
            Outcome::Broken => "broken",
        }
    }

    /// Its name in a cell's JSON (`not-applicable`, where the matrix writes `n/a`).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Changed => "changed",
            Outcome::NotApplicable => "not-applicable",
            Outcome::Error => "error",
            Outcome::Broken => "broken",
        }
    }

    /// A verdict about the subject (pass, changed, n/a): neither an error of the lab nor a broken run.
    pub fn is_verdict(self) -> bool {
        !matches!(self, Outcome::Error | Outcome::Broken)
    }
}

/// What a run says of a claim it cites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimVerdict {
    /// The probe passed and states no divergence from the claim.
    Holds,
    /// The probe passed and states (documents) a divergence from the claim on this subject.
    Diverges,
    /// A check written for another version fails here.
    Changed,
    /// The probe cannot run on this version.
    NotApplicable,
    /// No verdict (the run failed to start).
    Error,
    /// No verdict: the run broke an invariant ([`Outcome::Broken`]), the probe needs repair here.
    Broken,
}

impl ClaimVerdict {
    /// The word of the matrix.
    pub fn word(self) -> &'static str {
        match self {
            ClaimVerdict::Holds => "holds",
            ClaimVerdict::Diverges => "diverges",
            ClaimVerdict::Changed => "changed",
            ClaimVerdict::NotApplicable => "n/a",
            ClaimVerdict::Error => "error",
            ClaimVerdict::Broken => "broken",
        }
    }

    /// Several probes' verdicts on one claim: the most telling wins (changed over diverges over holds
    /// over n/a), a broken run or an error only when nothing else is known.
    pub fn combine(verdicts: impl IntoIterator<Item = ClaimVerdict>) -> Option<ClaimVerdict> {
        let rank = |v: &ClaimVerdict| match v {
            ClaimVerdict::Changed => 5,
            ClaimVerdict::Diverges => 4,
            ClaimVerdict::Holds => 3,
            ClaimVerdict::NotApplicable => 2,
            ClaimVerdict::Broken => 1,
            ClaimVerdict::Error => 0,
        };
        verdicts.into_iter().max_by_key(rank)
    }
}

/// One scripted call's result, as behaviour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallResult {
    /// The tool called.
    pub tool: String,
    /// The result text (normalised, subject-added reminders taken off).
    pub text: String,
    /// `is_error`.
    pub is_error: bool,
}

/// One exec command's outcome, as behaviour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecResult {
    /// Exit status (`None`: killed or signalled).
    pub exit: Option<i32>,
    /// Stdout (normalised).
    pub stdout: String,
    /// Stderr (normalised).
    pub stderr: String,
}

/// What the tools did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Behaviour {
    /// Each scripted call, in script order (`None`: never answered).
    pub results: Vec<Option<CallResult>>,
    /// Files under the working directory after the run: path → SHA-256 (VCS internals left out).
    pub files: BTreeMap<String, String>,
    /// Exec commands.
    pub execs: Vec<ExecResult>,
}

/// The first request's shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    /// Top-level fields of the body, sorted.
    pub fields: Vec<String>,
    /// `model`.
    pub model: String,
    /// `max_tokens`.
    pub max_tokens: Option<u64>,
    /// `anthropic-beta`, in the order sent.
    pub betas: Vec<String>,
    /// Header names, sorted.
    pub headers: Vec<String>,
    /// `anthropic-version`.
    pub anthropic_version: String,
    /// `user-agent`, its version normalised.
    pub user_agent: String,
    /// Tool name → the fields beside name / description / input_schema it carries (`defer_loading`…).
    pub tool_fields: BTreeMap<String, Vec<String>>,
}

/// One (probe, subject version) run, layer by layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    /// Probe id.
    pub probe: String,
    /// Subject kind (`claude-code`, `builtin`).
    pub subject: String,
    /// The version (`None` for the built-in subject).
    pub version: Option<String>,
    /// How it came out.
    pub outcome: Outcome,
    /// Why, when not a pass: the failing checks, the tools not offered, the error.
    pub reason: String,
    /// The claims the probe cites, with the verdict this run gives each.
    pub claims: BTreeMap<String, ClaimVerdict>,
    /// The verdict lines (pass / FAIL / skip per check and invariant).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<String>,
    /// SHA-256 of [`Observation::behaviour`].
    pub fingerprint: String,
    /// What the tools did (left out of a slim cell: [`Observation::slim`]).
    #[serde(default, skip_serializing_if = "Behaviour::is_empty")]
    pub behaviour: Behaviour,
    /// The first request's tools: name → hash of its name, description and schema.
    #[serde(default)]
    pub interface: BTreeMap<String, String>,
    /// The first request's system blocks, as a blob hash (empty when none).
    #[serde(default)]
    pub prompt: String,
    /// The first request's shape.
    #[serde(default)]
    pub shape: Shape,
    /// Golden comparison (`same`, `differs`, `missing`, `blessed`; empty when not compared).
    #[serde(default)]
    pub golden: String,
    /// SHA-256 of the probe file the cell ran: a resumed matrix runs a cell again when its probe
    /// changed since, and a report names the probes whose cells ran different files.
    #[serde(default)]
    pub probe_sha256: String,
    /// The stamp of the normaliser that made the fingerprint ([`crate::transcript::normalise::stamp`];
    /// empty in cells made before stamps): a resumed matrix runs a cell of another stamp again, and a
    /// report says when its cells were made by more than one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub normaliser: String,
    /// How many times the cell was run again and gave the same outcome and fingerprint (the matrix runs
    /// both sides of every candidate change again: [`crate::observatory::matrix`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reproduced: u32,
    /// What varied when the cell was run again on the same version (empty: nothing did, or it was not
    /// run again): the probe is *unstable* there, and its fingerprint says nothing of a change.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unstable: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[cfg(test)]
impl Observation {
    /// A claude-code cell for tests: the probe, version, outcome and fingerprint given, nothing else.
    pub(crate) fn for_test(probe: &str, version: &str, outcome: Outcome, fingerprint: &str) -> Observation {
        Observation {
            probe: probe.into(),
            subject: "claude-code".into(),
            version: Some(version.into()),
            outcome,
            reason: String::new(),
            claims: BTreeMap::new(),
            verdicts: Vec::new(),
            fingerprint: fingerprint.into(),
            behaviour: Behaviour::default(),
            interface: BTreeMap::new(),
            prompt: String::new(),
            shape: Shape::default(),
            golden: String::new(),
            probe_sha256: String::new(),
            normaliser: String::new(),
            reproduced: 0,
            unstable: String::new(),
        }
    }
}

impl Behaviour {
    /// The behaviour with each result text, exec output and error as `sha256:<16 hex>` (files are hashes
    /// already): what a slim cell keeps. Hashing twice gives the same: a hashed text is kept as it is.
    pub fn hashed(&self) -> Behaviour {
        let h = |t: &str| {
            if t.starts_with("sha256:") && t.len() == 23 {
                t.to_string()
            } else {
                format!("sha256:{}", sha256(t.as_bytes()).get(..16).unwrap_or_default())
            }
        };
        Behaviour {
            results: self
                .results
                .iter()
                .map(|r| r.as_ref().map(|r| CallResult { text: h(&r.text), ..r.clone() }))
                .collect(),
            files: self.files.clone(),
            execs: self
                .execs
                .iter()
                .map(|e| ExecResult { stdout: h(&e.stdout), stderr: h(&e.stderr), ..e.clone() })
                .collect(),
        }
    }

    /// Nothing recorded (a slim cell, an error).
    pub fn is_empty(&self) -> bool {
        self.results.is_empty() && self.files.is_empty() && self.execs.is_empty()
    }

    /// What differs between two behaviours, a short phrase each (`result 2 (Read) text`, `file
    /// .rv/123 only in one run`, `exec 1 stdout`), for saying what varies or what changed.
    pub fn differences(&self, other: &Behaviour) -> Vec<String> {
        let mut out = Vec::new();
        for i in 0..self.results.len().max(other.results.len()) {
            let (a, b) = (self.results.get(i).cloned().flatten(), other.results.get(i).cloned().flatten());
            if a == b {
                continue;
            }
            let n = i + 1;
            out.push(match (a, b) {
                (Some(a), Some(b)) if a.tool != b.tool => format!("result {n} tool {} / {}", a.tool, b.tool),
                (Some(a), Some(b)) if a.is_error != b.is_error => format!("result {n} ({}) is_error", a.tool),
                (Some(a), Some(_)) => format!("result {n} ({}) text", a.tool),
                (Some(a), None) | (None, Some(a)) => format!("result {n} ({}) answered in one run only", a.tool),
                (None, None) => continue,
            });
        }
        for path in self.files.keys().chain(other.files.keys()).collect::<std::collections::BTreeSet<_>>() {
            match (self.files.get(path), other.files.get(path)) {
                (Some(a), Some(b)) if a != b => out.push(format!("file {path} content")),
                (Some(_), None) | (None, Some(_)) => out.push(format!("file {path} only in one run")),
                _ => {}
            }
        }
        for i in 0..self.execs.len().max(other.execs.len()) {
            match (self.execs.get(i), other.execs.get(i)) {
                (Some(a), Some(b)) if a != b => {
                    let part = if a.exit != b.exit {
                        "exit"
                    } else if a.stdout != b.stdout {
                        "stdout"
                    } else {
                        "stderr"
                    };
                    out.push(format!("exec {} {part}", i + 1));
                }
                (Some(_), None) | (None, Some(_)) => out.push(format!("exec {} in one run only", i + 1)),
                _ => {}
            }
        }
        out
    }
}

/// SHA-256 of a probe's file: of the text it was parsed from ([`Probe::source`], the file's bytes), so
/// no second read can fail or see another version of the file.
pub fn probe_sha256(probe: &Probe) -> String {
    sha256(probe.source.as_bytes())
}

impl Observation {
    /// An observation of a run that could not be made (install failed, set-up failed).
    pub fn error(probe: &Probe, subject: &str, version: Option<&str>, why: &str) -> Observation {
        Observation {
            probe: probe.id.clone(),
            subject: subject.to_string(),
            version: version.map(str::to_string),
            outcome: Outcome::Error,
            reason: why.to_string(),
            claims: probe.claims.iter().map(|c| (c.clone(), ClaimVerdict::Error)).collect(),
            verdicts: Vec::new(),
            fingerprint: String::new(),
            behaviour: Behaviour::default(),
            interface: BTreeMap::new(),
            prompt: String::new(),
            shape: Shape::default(),
            golden: String::new(),
            probe_sha256: probe_sha256(probe),
            normaliser: String::new(),
            reproduced: 0,
            unstable: String::new(),
        }
    }

    /// The cell as the repository keeps it (docs/matrix/cells): everything the matrix and its timeline
    /// are made of — outcome, reason, claims, fingerprint, interface and prompt hashes, reproduction, the
    /// behaviour with each text as its hash ([`Behaviour::hashed`]: enough to say which result or file
    /// changed) — without the texts and the verdict lines (the version's goldens hold those).
    pub fn slim(&self) -> Observation {
        Observation { behaviour: self.behaviour.hashed(), verdicts: Vec::new(), ..self.clone() }
    }

    /// The key of the matrix cell: `<version or subject>/<probe>`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.version.as_deref().unwrap_or(&self.subject), self.probe)
    }
}

/// The behaviour fingerprint: SHA-256 of the behaviour as canonical JSON.
pub fn fingerprint(b: &Behaviour) -> String {
    sha256(serde_json::to_string(b).unwrap_or_default().as_bytes())
}

/// The outcome of a run from its verdicts, and the tools the probe called that the subject did not
/// offer: a failure with a tool not offered is n/a (the probe cannot run here: what breaks after a call
/// to a missing tool follows from it); otherwise a failed invariant makes the run broken (the probe
/// needs repair on this version: its reason names each invariant and why, then the checks that failed
/// with it), and any other failure is a change. A probe that passes although a tool was not offered
/// (it expects the tool's absence) passes.
pub fn outcome_of(verdicts: &[Verdict], not_offered: &[String]) -> (Outcome, String) {
    let failed: Vec<&Verdict> = verdicts.iter().filter(|v| !v.pass).collect();
    if failed.is_empty() {
        return (Outcome::Pass, String::new());
    }
    if !not_offered.is_empty() {
        return (Outcome::NotApplicable, not_offered.join("; "));
    }
    let (invariants, checks): (Vec<&Verdict>, Vec<&Verdict>) =
        failed.iter().partition(|v| v.name.starts_with(INVARIANT));
    if !invariants.is_empty() {
        let mut why: Vec<String> = invariants.iter().map(|v| invariant_why(v)).collect();
        if !checks.is_empty() {
            let names: Vec<&str> = checks.iter().map(|v| v.name.as_str()).collect();
            why.push(format!("failed with it: {}", names.join(", ")));
        }
        return (Outcome::Broken, format!("needs repair: {}", why.join("; ")));
    }
    let names: Vec<&str> = failed.iter().map(|v| v.name.as_str()).collect();
    (Outcome::Changed, format!("failed: {}", names.join(", ")))
}

/// How the verdict of an invariant is named (`invariant: no request refused by the stub`).
pub const INVARIANT: &str = "invariant: ";

/// A failed invariant in a few words: its name, then what broke it — the stub's refusals counted by
/// kind (`20 refused: script_exhausted`), else the first line of its detail.
fn invariant_why(v: &Verdict) -> String {
    let lines: Vec<&str> = v.detail.lines().filter(|l| !l.trim().is_empty()).collect();
    // a refusal's line: `exchange N (POST /v1/messages): KIND — message`
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for l in &lines {
        if let Some(kind) = l.split_once("): ").and_then(|(_, rest)| rest.split(" — ").next()) {
            *kinds.entry(kind).or_default() += 1;
        }
    }
    let detail = if !kinds.is_empty() && kinds.values().sum::<usize>() == lines.len() {
        let counted: Vec<String> = match kinds.len() {
            1 => kinds.keys().map(|k| k.to_string()).collect(),
            _ => kinds.iter().map(|(k, n)| format!("{n} {k}")).collect(),
        };
        let s = if lines.len() == 1 { "" } else { "s" };
        format!("{} request{s} refused: {}", lines.len(), counted.join(", "))
    } else {
        lines.first().map(|l| l.to_string()).unwrap_or_default()
    };
    if detail.is_empty() {
        v.name.clone()
    } else {
        format!("{} ({detail})", v.name)
    }
}

/// The verdict of each claim a probe cites, from the run's outcome and the divergences it states on the
/// subject.
pub fn claim_verdicts(
    probe: &Probe,
    subject: &crate::subject::id::SubjectId,
    outcome: Outcome,
) -> BTreeMap<String, ClaimVerdict> {
    let diverging: Vec<&str> = probe.divergences_on(subject).iter().map(|d| d.claim.as_str()).collect();
    probe
        .claims
        .iter()
        .map(|c| {
            let v = match outcome {
                Outcome::Pass if diverging.contains(&c.as_str()) => ClaimVerdict::Diverges,
                Outcome::Pass => ClaimVerdict::Holds,
                Outcome::Changed => ClaimVerdict::Changed,
                Outcome::NotApplicable => ClaimVerdict::NotApplicable,
                Outcome::Error => ClaimVerdict::Error,
                Outcome::Broken => ClaimVerdict::Broken,
            };
            (c.clone(), v)
        })
        .collect()
}

/// The tools the probe's main turns called that the request they answered did not offer: `Grep not
/// offered in request 1` (deferred tools that were loaded are offered).
pub fn not_offered(view: &View<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let requests = view.requests();
    // the exchange that served each main turn, found in one pass
    let mut served: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, e) in view.exchanges.iter().enumerate() {
        if e.kind == ExchangeKind::Turn
            && e.conversation.as_deref() == Some(MAIN)
            && e.fault.is_none()
            && e.status == 200
        {
            if let Some(t) = e.turn {
                served.entry(t).or_insert(i);
            }
        }
    }
    for (t, turn) in view.script.turns.iter().enumerate() {
        let Some(&i) = served.get(&t) else { continue };
        let offered: Vec<&str> = requests
            .field(i, "tools")
            .and_then(Value::as_array)
            .map(|ts| ts.iter().filter_map(|t| t.get("name").and_then(Value::as_str)).collect())
            .unwrap_or_default();
        for u in &turn.tool_use {
            if !offered.contains(&u.name.as_str()) {
                let line = format!("{} not offered in request {}", u.name, t + 1);
                if !out.contains(&line) {
                    out.push(line);
                }
            }
        }
    }
    out
}

/// Separates the texts of one run while they are normalised together (ids a subject made up are numbered
/// across the run, as in a golden).
const SEP: &str = "\n\u{1e}\u{1e}\n";

/// The texts normalised as one (ids numbered across them), then split again.
fn normalise_together(texts: &[String], norm: &dyn Fn(&str) -> String) -> Vec<String> {
    let joined = norm(&texts.join(SEP));
    let out: Vec<String> = joined.split(SEP).map(str::to_string).collect();
    if out.len() == texts.len() {
        out
    } else {
        texts.iter().map(|t| norm(t)).collect()
    }
}

/// A tool_result's content as the model reads it, for the fingerprint: a string as it is; a list of
/// blocks with [`BLOCK_SEPARATOR`] where one ends and the next begins (a text split in two is not the
/// text whole), each block as [`crate::transcript::result_text`] shows it.
pub fn seen_text(block: &Value) -> String {
    match block.get("content") {
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| crate::transcript::result_text(&serde_json::json!({ "content": [p] })))
            .collect::<Vec<_>>()
            .join(&BLOCK_SEPARATOR.to_string()),
        _ => crate::transcript::result_text(block),
    }
}

/// The behaviour of a loop run: each scripted call's result, and the files of `cwd` after it (see
/// [`files`]; `known` are the paths whose content counts: the fixture's and those the probe checks).
pub fn behaviour(
    view: &View<'_>,
    cwd: &Path,
    known: &[String],
    unordered: &[usize],
    norm: &dyn Fn(&str) -> String,
) -> Behaviour {
    let names: Vec<String> = view.script.turns.iter().flat_map(|t| t.tool_use.iter().map(|u| u.name.clone())).collect();
    let mut blocks: Vec<Option<Value>> = view.results_of(&view.tool_use_ids());
    blocks.resize(names.len(), None);
    let mut texts: Vec<String> = blocks.iter().map(|b| b.as_ref().map(seen_text).unwrap_or_default()).collect();
    let files = file_hashes(files_after(cwd, known), &mut texts, norm);
    let results = blocks
        .iter()
        .zip(texts)
        .zip(names)
        .enumerate()
        .map(|(i, ((b, text), tool))| {
            let mut text = fingerprint_text(&text);
            if unordered.contains(&(i + 1)) {
                let mut lines: Vec<&str> = text.lines().collect();
                lines.sort_unstable();
                text = lines.join("\n");
            }
            b.as_ref().map(|b| CallResult { tool, text, is_error: b.get("is_error") == Some(&Value::Bool(true)) })
        })
        .collect();
    Behaviour { results, files, execs: Vec::new() }
}

/// The behaviour of an exec probe: each command's exit and output.
pub fn exec_behaviour(
    records: &[ExecRecord],
    cwd: &Path,
    known: &[String],
    norm: &dyn Fn(&str) -> String,
) -> Behaviour {
    let mut outs: Vec<String> = records.iter().flat_map(|r| [r.stdout.clone(), r.stderr.clone()]).collect();
    let files = file_hashes(files_after(cwd, known), &mut outs, norm);
    let execs = records
        .iter()
        .zip(outs.chunks(2))
        .map(|(r, o)| ExecResult {
            exit: if r.timed_out { None } else { r.measured.exit },
            stdout: o.first().cloned().unwrap_or_default(),
            stderr: o.get(1).cloned().unwrap_or_default(),
        })
        .collect();
    Behaviour { results: Vec::new(), files, execs }
}

/// The paths of a probe whose content counts in its fingerprint: the fixture's inline files and the
/// files its checks look at.
pub fn known_files(probe: &Probe) -> Vec<String> {
    let mut out: Vec<String> = probe.fixture.files.keys().cloned().collect();
    out.extend(probe.checks.iter().filter_map(|(c, _, _)| c.file().map(str::to_string)));
    out
}

/// Directories whose content is the VCS's bookkeeping (object ids, index stamps), not a tool's doing.
const SKIPPED_DIRS: &[&str] = &[".git"];

/// A file of the working directory after a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileAfter {
    /// A file the run made: only its being there counts.
    Made,
    /// A file whose content counts (the fixture's, or one the probe checks): its bytes.
    Content(Vec<u8>),
    /// A symlink and its target.
    Symlink(String),
}

impl FileAfter {
    /// A known file's entry from its read. One the lab cannot read (a probe's `chmod` fault took its
    /// read bit, where the lab does not run as root) counts as empty: a decision, kept because every committed
    /// fingerprint of such a probe was taken so — what the subject could read shows in its results.
    pub fn content(read: std::io::Result<Vec<u8>>) -> FileAfter {
        FileAfter::Content(read.unwrap_or_else(|_| Vec::new()))
    }

    /// A symlink's entry from its read: one that cannot be read (it was replaced between the listing
    /// and the read) has the empty target, as a content that cannot be read is empty.
    pub fn link(read: std::io::Result<std::path::PathBuf>) -> FileAfter {
        FileAfter::Symlink(read.map(|t| t.to_string_lossy().into_owned()).unwrap_or_else(|_| String::new()))
    }
}

/// Every file under `dir` after the run, sorted by path (VCS internals left out): for the fixture's
/// files and those the probe checks (`known`) their content, for the others the run made only that they
/// exist — their content (a pid file, a log with times) is the subject's world, not its decision, and
/// would make the fingerprint differ from run to run.
pub fn files_after(dir: &Path, known: &[String]) -> BTreeMap<String, FileAfter> {
    fn walk(root: &Path, dir: &Path, known: &[String], out: &mut BTreeMap<String, FileAfter>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            let rel = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().into_owned();
            if meta.is_dir() {
                if !SKIPPED_DIRS.contains(&e.file_name().to_string_lossy().as_ref()) {
                    walk(root, &path, known, out);
                }
            } else if meta.file_type().is_symlink() {
                out.insert(rel, FileAfter::link(std::fs::read_link(&path)));
            } else if meta.is_file() && known.contains(&rel) {
                out.insert(rel, FileAfter::content(std::fs::read(&path)));
            } else if meta.is_file() {
                out.insert(rel, FileAfter::Made);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, known, &mut out);
    out
}

/// The files' entries of a fingerprint: `made`, `symlink <target>`, or the SHA-256 of the content with
/// the text normalised together with `texts` (the run's results: an id the subject made up is numbered
/// the same in a result and in a file).
/// Files larger than this are fingerprinted by their bytes, not normalised first: a file that large is
/// generated content (a search budget's 64 MiB log), and every normalisation step over it took seconds
/// of a probe's run.
pub const NORMALISED_FILE_MAX_BYTES: usize = 1 << 20;

fn file_hashes(
    files: BTreeMap<String, FileAfter>,
    texts: &mut Vec<String>,
    norm: &dyn Fn(&str) -> String,
) -> BTreeMap<String, String> {
    let first_file = texts.len();
    let mut textual = Vec::new();
    for (path, f) in &files {
        if let FileAfter::Content(bytes) = f {
            if bytes.len() > NORMALISED_FILE_MAX_BYTES {
                continue;
            }
            if let Ok(t) = std::str::from_utf8(bytes) {
                textual.push(path.clone());
                texts.push(t.to_string());
            }
        }
    }
    *texts = normalise_together(texts, norm);
    let normalised: BTreeMap<String, String> = textual.into_iter().zip(texts.drain(first_file..)).collect();
    files
        .into_iter()
        .map(|(path, f)| {
            let v = match f {
                FileAfter::Made => "made".to_string(),
                FileAfter::Symlink(t) => format!("symlink {}", norm(&t)),
                FileAfter::Content(bytes) => match normalised.get(&path) {
                    Some(t) => sha256(t.as_bytes()),
                    None => sha256(&bytes),
                },
            };
            (path, v)
        })
        .collect()
}

/// The interface, prompt and request shape of the first main request.
pub fn first_request_layers(
    view: &View<'_>,
    norm: &dyn Fn(&str) -> String,
) -> (BTreeMap<String, String>, String, Shape) {
    let Some(i) = view
        .exchanges
        .iter()
        .position(|e| e.kind == ExchangeKind::Turn && e.conversation.as_deref() == Some(MAIN) && e.request.is_some())
    else {
        return (BTreeMap::new(), String::new(), Shape::default());
    };
    let e = &view.exchanges[i];
    let req = view.requests().whole(i).unwrap_or_default();
    let hash = |v: &Value| sha256(norm(&format!("{v:#}\n")).as_bytes());
    let mut interface = BTreeMap::new();
    let mut tool_fields = BTreeMap::new();
    for t in req.get("tools").and_then(Value::as_array).into_iter().flatten() {
        let name = t.get("name").and_then(Value::as_str).unwrap_or("?").to_string();
        let mut core = t.clone();
        let mut extra = Vec::new();
        if let Some(o) = core.as_object_mut() {
            for k in ["defer_loading", "cache_control"] {
                if o.remove(k).is_some() {
                    extra.push(k.to_string());
                }
            }
            extra.extend(o.keys().filter(|k| !matches!(k.as_str(), "name" | "description" | "input_schema")).cloned());
        }
        extra.sort();
        if !extra.is_empty() {
            tool_fields.insert(name.clone(), extra);
        }
        interface.insert(name, hash(&core)[..12].to_string());
    }
    let prompt = req.get("system").map(|s| hash(s)[..12].to_string()).unwrap_or_default();
    let header = |k: &str| e.headers.get(k).cloned().unwrap_or_default();
    let mut fields: Vec<String> = req.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
    fields.sort();
    let mut headers: Vec<String> = e.headers.keys().cloned().collect();
    headers.sort();
    let shape = Shape {
        fields,
        model: req.get("model").and_then(Value::as_str).unwrap_or_default().to_string(),
        max_tokens: req.get("max_tokens").and_then(Value::as_u64),
        betas: header("anthropic-beta").split(',').map(|b| b.trim().to_string()).filter(|b| !b.is_empty()).collect(),
        headers,
        anthropic_version: header("anthropic-version"),
        user_agent: norm(&header("user-agent")),
        tool_fields,
    };
    (interface, prompt, shape)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_known_file_or_link_the_lab_cannot_read_fingerprints_as_empty() {
        use super::FileAfter;
        let denied = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(FileAfter::content(Err(denied())), FileAfter::Content(Vec::new()));
        assert_eq!(FileAfter::content(Ok(b"x".to_vec())), FileAfter::Content(b"x".to_vec()));
        assert_eq!(FileAfter::link(Err(denied())), FileAfter::Symlink(String::new()));
        assert_eq!(FileAfter::link(Ok("../t".into())), FileAfter::Symlink("../t".into()));
    }

    #[test]
    fn a_probes_hash_is_of_the_text_it_was_parsed_from_with_no_second_read() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = d.path().join("p.toml");
        let text = "id = \"x.y\"\nclaims = [\"READ-1\"]\nabout = \"a\"\n[[turn]]\n\
                    tool_use = [{ name = \"Read\", input = { file_path = \"{cwd}/f\" } }]\n[[turn]]\ntext = \"done\"\n\
                    [[check]]\nresult = 1\nis_error = false\n";
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        let probe = crate::probe::load(&path).unwrap_or_else(|e| panic!("{e}"));
        std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
        // the file is gone (or changed) since it was loaded: the hash is still that of the probe that runs
        assert_eq!(super::probe_sha256(&probe), super::sha256(text.as_bytes()));
    }

    #[test]
    fn differences_name_the_part_that_differs() {
        let r = |tool: &str, text: &str, is_error| Some(CallResult { tool: tool.into(), text: text.into(), is_error });
        let a = Behaviour {
            results: vec![r("Read", "x", false), r("Write", "ok", false), None],
            files: BTreeMap::from([("a.txt".to_string(), "h1".to_string()), (".rv/1".to_string(), "made".to_string())]),
            execs: Vec::new(),
        };
        assert!(a.differences(&a.clone()).is_empty());
        let b = Behaviour {
            results: vec![r("Read", "y", false), r("Write", "ok", true), r("Bash", "", false)],
            files: BTreeMap::from([("a.txt".to_string(), "h2".to_string()), (".rv/2".to_string(), "made".to_string())]),
            execs: Vec::new(),
        };
        assert_eq!(
            a.differences(&b),
            [
                "result 1 (Read) text",
                "result 2 (Write) is_error",
                "result 3 (Bash) answered in one run only",
                "file .rv/1 only in one run",
                "file .rv/2 only in one run",
                "file a.txt content"
            ]
        );
    }

    use super::*;

    fn v(name: &str, pass: bool) -> Verdict {
        Verdict {
            name: name.into(),
            pass,
            detail: String::new(),
            skipped: false,
            compared: Vec::new(),
            semantic: crate::check::Semantic::Whole,
        }
    }

    #[test]
    fn outcomes_tell_a_change_from_a_missing_tool() {
        assert_eq!(outcome_of(&[v("check 1", true)], &[]).0, Outcome::Pass);
        assert_eq!(outcome_of(&[v("check 1", true)], &["Grep not offered in request 1".into()]).0, Outcome::Pass);
        assert_eq!(outcome_of(&[v("check 1", false)], &[]), (Outcome::Changed, "failed: check 1".into()));
        assert_eq!(
            outcome_of(&[v("check 1", false)], &["Grep not offered in request 1".into()]),
            (Outcome::NotApplicable, "Grep not offered in request 1".into())
        );
    }

    #[test]
    fn a_failed_invariant_makes_the_run_broken_never_a_change() {
        let refused = |n: usize| Verdict {
            detail: (0..n)
                .map(|i| {
                    format!("exchange {i} (POST /v1/messages): script_exhausted — stub-messages: script exhausted: …")
                })
                .collect::<Vec<_>>()
                .join("\n"),
            ..v("invariant: no request refused by the stub", false)
        };
        let (o, why) =
            outcome_of(&[v("check 2", false), refused(20), v("invariant: every scripted turn served", true)], &[]);
        assert_eq!(o, Outcome::Broken);
        assert_eq!(
            why,
            "needs repair: invariant: no request refused by the stub (20 requests refused: script_exhausted); failed \
             with it: check 2"
        );
        let late = Verdict {
            detail: "the run ended with Deadline".into(),
            ..v("invariant: the run ended by the model within its deadline", false)
        };
        assert_eq!(
            outcome_of(&[v("check 1", true), late], &[]),
            (
                Outcome::Broken,
                "needs repair: invariant: the run ended by the model within its deadline (the run ended with Deadline)"
                    .into()
            )
        );
        // a tool not offered decides: what broke after a call to it follows from its absence
        assert_eq!(
            outcome_of(&[refused(1)], &["TaskOutput not offered in request 2".into()]).0,
            Outcome::NotApplicable
        );
        let probe = crate::probe::parse(
            Path::new("t.toml"),
            "id = \"p\"\nclaims = [\"READ-1\"]\nabout = \"x\"\n[[turn]]\ntext = \"done\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let cc = crate::subject::id::SubjectId::claude_code(crate::subject::id::Version::new(2, 1, 1));
        assert_eq!(claim_verdicts(&probe, &cc, Outcome::Broken)["READ-1"], ClaimVerdict::Broken);
        assert!(!Outcome::Broken.is_verdict() && !Outcome::Error.is_verdict() && Outcome::Changed.is_verdict());
        // the name is the cell's word for it
        for o in [Outcome::Pass, Outcome::Changed, Outcome::NotApplicable, Outcome::Error, Outcome::Broken] {
            assert_eq!(serde_json::to_value(o).ok(), Some(serde_json::Value::from(o.name())), "{o:?}");
        }
        assert_eq!(ClaimVerdict::combine([ClaimVerdict::Broken, ClaimVerdict::Holds]), Some(ClaimVerdict::Holds));
        assert_eq!(ClaimVerdict::combine([ClaimVerdict::Broken, ClaimVerdict::Error]), Some(ClaimVerdict::Broken));
    }

    #[test]
    fn the_most_telling_claim_verdict_wins() {
        use ClaimVerdict::*;
        assert_eq!(ClaimVerdict::combine([Holds, Changed, NotApplicable]), Some(Changed));
        assert_eq!(ClaimVerdict::combine([Holds, Diverges]), Some(Diverges));
        assert_eq!(ClaimVerdict::combine([NotApplicable, Error]), Some(NotApplicable));
        assert_eq!(ClaimVerdict::combine([]), None);
    }

    #[test]
    fn files_are_hashed_after_normalisation_and_vcs_internals_left_out() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(d.path().join(".git")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.path().join(".git/index"), "x").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.path().join("a.txt"), format!("{}/a\n", d.path().display())).unwrap_or_else(|e| panic!("{e}"));
        let root = d.path().to_string_lossy().into_owned();
        std::fs::write(d.path().join("made.pid"), "4242\n").unwrap_or_else(|e| panic!("{e}"));
        let mut texts = vec![format!("result naming {root}")];
        let f = file_hashes(files_after(d.path(), &["a.txt".to_string()]), &mut texts, &|s: &str| {
            s.replace(&root, "<cwd>")
        });
        assert_eq!(texts, ["result naming <cwd>"], "the results normalised with the files");
        assert_eq!(f.keys().collect::<Vec<_>>(), ["a.txt", "made.pid"]);
        assert_eq!(f["a.txt"], sha256(b"<cwd>/a\n"));
        assert_eq!(f["made.pid"], "made", "a file the run made counts by its being there");
    }
}
