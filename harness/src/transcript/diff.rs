//! Semantic diff of two golden sets (two versions of a subject, or two subjects), per probe and in
//! layers, so a user sees which *behaviours* changed apart from what only the model is told:
//!
//! - **behaviour**: the tool_result changes (text / is_error, a diff of the result sections) and the
//!   verdict changes (a check that passed and now fails);
//! - **interface**: tools added / removed / changed (same name, another schema + description blob, shown
//!   as a text diff of the blobs);
//! - **prompt**: a changed system prompt (text diff of its blob);
//! - **request shape**: the model / max_tokens / stream line and which tools are deferred;
//! - **other**: the rest of the transcript (the subject's own messages, the responses, side traffic).
//!
//! Version strings, dates, ids and paths never reach the comparison: the goldens are normalised by the
//! named steps of [`super::normalise`]. A blob change (a tool's schema, the system prompt) is usually the
//! same in every probe, so its text diff is kept once per set and the probes name it. The claims matrix
//! of the HTML report speaks of behaviour only: a prompt-only change never shows as a claim that differs.

use super::normalise::fingerprint_text;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A tool offered from the first request now, only from a later one before ([`ProbeDiff::tools_into_first`]).
pub const INTO_FIRST: &str = "now offered in the first request (before: only from a later request on)";
/// A tool offered only from a later request now ([`ProbeDiff::tools_out_of_first`]).
pub const OUT_OF_FIRST: &str = "now offered only from a later request on (before: in the first request)";

/// One probe's differences.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProbeDiff {
    /// Probe id.
    pub probe: String,
    /// Tool names only on the right.
    pub tools_added: Vec<String>,
    /// Tool names only on the left.
    pub tools_removed: Vec<String>,
    /// Tools on both sides with another blob: keys of [`SetDiff::blob_changes`].
    pub tools_changed: Vec<String>,
    /// A changed system prompt: its key in [`SetDiff::blob_changes`].
    pub system: Option<String>,
    /// Unified diff of the tool_result lines (texts and is_error), when they differ.
    pub results: Option<String>,
    /// Unified diff of the verdict lines, when they differ.
    pub verdicts: Option<String>,
    /// Unified diff of the files the checks read (the transcripts' `## files the checks read`), when
    /// they differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<String>,
    /// Each verdict that moved, in words (`check 5: file hook.log pass → FAIL`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdict_changes: Vec<String>,
    /// Unified diff of the request-shape lines (model, max_tokens, stream; deferred tools), when they differ.
    pub shape: Option<String>,
    /// Unified diff of everything else, when it differs.
    pub rest: Option<String>,
    /// Tools on the left's list that the right defers (announced for ToolSearch, or marked `deferred`):
    /// not removed, only loaded on demand. Not in [`ProbeDiff::tools_removed`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools_deferred: Vec<String>,
    /// Tools the left deferred that the right lists in full. Not in [`ProbeDiff::tools_added`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools_undeferred: Vec<String>,
    /// Tools both sides offer, deferred on neither, that the right offers in its first request and the
    /// left only from a later one (LSP at 2.1.239: offered once its server had started, then from the
    /// start).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools_into_first: Vec<String>,
    /// Tools both sides offer that the left offers in its first request and the right only later.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools_out_of_first: Vec<String>,
    /// Each tool result that differs, as the words that changed ([`word_diff`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<ResultChange>,
    /// What the observatory's committed cells of both sides say (when both sides are measured versions):
    /// the behaviour verdict then is theirs — the one fingerprint the matrix and its timeline use — and
    /// the goldens are its evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprints: Option<Fingerprints>,
}

/// One probe's behaviour fingerprints on both sides, from the observatory's cells
/// (`crate::observatory::judge`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Fingerprints {
    /// Outcome and fingerprint, left (`pass 3f0b01b323d9`).
    pub left: String,
    /// The same, right.
    pub right: String,
    /// Both sides agree (the timeline has no change between them).
    pub same: bool,
    /// A side did not agree with itself when run again: its fingerprint is noise, never a change.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unstable: String,
    /// What differs in the cells' behaviour (`file .hooks/PreToolUse.json content`, `result 2 (Read)
    /// text`): the parts the goldens may not show (files are in the cells, not in the transcripts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<String>,
    /// A side's run broke an invariant (`the probe needs repair on 2.1.334 (…)`): nothing of the probe is
    /// compared — no behaviour, no interface — until it is repaired.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub broken: String,
}

/// One tool result that differs between the sides, in words.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ResultChange {
    /// The result's header on the left (`tool_result <id>` and `is_error`), or the right's when the left
    /// has none.
    pub call: String,
    /// `is_error` changed: `false → true`.
    pub is_error: Option<String>,
    /// The changed words with a little context: `[-old-]{+new+}`, `…` where text is left out.
    pub words: String,
    /// The same as segments ([`word_segments`]), for the HTML report.
    #[serde(skip)]
    pub segments: Vec<(char, String)>,
    /// The tool whose call the result answers (the transcripts' `tool_use <id> <Tool>` line), where a
    /// side has it; None for a file.
    #[serde(skip)]
    pub tool: Option<String>,
}

impl ProbeDiff {
    /// A side of the probe broke an invariant (the observatory's cells say so: [`Fingerprints::broken`]):
    /// nothing of it is compared, neither its behaviour nor the interface its requests show.
    pub fn is_broken(&self) -> bool {
        self.fingerprints.as_ref().is_some_and(|f| !f.broken.is_empty())
    }

    /// No difference at all.
    pub fn is_same(&self) -> bool {
        self.tools_added.is_empty()
            && self.tools_removed.is_empty()
            && self.tools_changed.is_empty()
            && self.tools_deferred.is_empty()
            && self.tools_undeferred.is_empty()
            && self.tools_into_first.is_empty()
            && self.tools_out_of_first.is_empty()
            && self.system.is_none()
            && self.results.is_none()
            && self.verdicts.is_none()
            && self.files.is_none()
            && self.shape.is_none()
            && self.rest.is_none()
            && self.fingerprints.as_ref().is_none_or(|f| f.same)
    }

    /// The same behaviour: the observatory's fingerprints of both sides when they are known
    /// ([`ProbeDiff::fingerprints`]), else the tool results and verdicts of the goldens (whatever the
    /// interface, prompt or shape did).
    pub fn same_behaviour(&self) -> bool {
        match &self.fingerprints {
            Some(f) => f.same,
            None => self.results.is_none() && self.verdicts.is_none() && self.files.is_none(),
        }
    }

    /// The lines saying what the cells know that the goldens' texts do not: a file-only change, or
    /// goldens that differ where the measured runs agree.
    fn fingerprint_notes(&self) -> Vec<String> {
        let Some(f) = &self.fingerprints else { return Vec::new() };
        if !f.broken.is_empty() {
            return vec![format!("not compared: {}", f.broken)];
        }
        let mut out = Vec::new();
        if !f.same {
            if self.changes.is_empty() && self.verdicts.is_none() && self.files.is_none() {
                out.push(format!("cells {} → {}: {}", f.left, f.right, f.parts.join("; ")));
            }
        } else if self.results.is_some() || self.verdicts.is_some() || self.files.is_some() {
            let why = if f.unstable.is_empty() {
                "the measured runs of both versions agree: these goldens come from runs that varied".to_string()
            } else {
                format!("unstable: {}", f.unstable)
            };
            out.push(format!("same behaviour per the matrix (cells {} = {}); {why}", f.left, f.right));
        }
        out
    }
}

/// The whole comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SetDiff {
    /// Left label.
    pub left: String,
    /// Right label.
    pub right: String,
    /// Probes only on the left.
    pub only_left: Vec<String>,
    /// Probes only on the right.
    pub only_right: Vec<String>,
    /// Probes on both sides, in id order.
    pub probes: Vec<ProbeDiff>,
    /// Each changed blob once: `tool NAME OLD → NEW` / `system OLD → NEW` → text diff of the blobs.
    pub blob_changes: BTreeMap<String, String>,
}

impl SetDiff {
    /// Conformance: share of the common probes whose tool results (texts and is_error, in call order)
    /// are the same, in percent.
    pub fn results_same_percent(&self) -> f64 {
        if self.probes.is_empty() {
            return 100.0;
        }
        100.0 * self.probes.iter().filter(|p| p.results.is_none()).count() as f64 / self.probes.len() as f64
    }

    /// Share of the common probes with the same behaviour (results and verdicts), in percent.
    pub fn behaviour_same_percent(&self) -> f64 {
        if self.probes.is_empty() {
            return 100.0;
        }
        100.0 * self.probes.iter().filter(|p| p.same_behaviour()).count() as f64 / self.probes.len() as f64
    }

    /// Share of the common probes that are the same, in percent.
    pub fn same_percent(&self) -> f64 {
        if self.probes.is_empty() {
            return 100.0;
        }
        100.0 * self.probes.iter().filter(|p| p.is_same()).count() as f64 / self.probes.len() as f64
    }
}

/// Why two golden sets cannot be diffed ([`diff_dirs`], [`diff_dirs_with`]).
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    /// A set's directory or one of its goldens could not be read.
    #[error("{}", path.display())]
    Read {
        /// The directory or the file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A golden that is empty or cut.
    #[error("{}: not a whole golden transcript: {why}", path.display())]
    Cut {
        /// The golden.
        path: PathBuf,
        /// What is wrong with its body ([`super::golden::body_problem`]).
        why: String,
    },
    /// A directory without goldens.
    #[error(
        "{} holds no golden transcripts (<probe-id>.snap): name a golden set such as golden/builtin or \
         golden/claude-code@2.1.235",
        .0.display()
    )]
    Empty(PathBuf),
    /// Two sets with no probe in common.
    #[error("{left} and {right} have no probe in common: nothing to compare")]
    Disjoint {
        /// The left set.
        left: String,
        /// The right set.
        right: String,
    },
}

fn read_set(dir: &Path) -> Result<BTreeMap<String, String>, SetError> {
    let mut out = BTreeMap::new();
    let read = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SetError::Read { path, source }
    };
    for e in std::fs::read_dir(dir).map_err(read(dir))? {
        let p = e.map_err(read(dir))?.path();
        if let Some(id) = p.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".snap")) {
            let text = crate::safe_fs::read_text(&p).map_err(read(&p))?;
            // an empty or cut golden is an error, never read as a transcript that did nothing
            if let Some(why) = super::golden::body_problem(super::golden::body(&text)) {
                return Err(SetError::Cut { path: p, why });
            }
            // an inserted notebook cell's id is made up (Claude Code: at random; the built-in runtime
            // derives it, and its goldens keep it): numbered alike on both sides before comparing
            out.insert(id.to_string(), super::normalise::cell_ids(super::golden::body(&text)).into_owned());
        }
    }
    // a directory without goldens is a wrong path (or a set never blessed), never "100% the same"
    if out.is_empty() {
        return Err(SetError::Empty(dir.to_path_buf()));
    }
    Ok(out)
}

/// `Name@hash` pairs of every `tools:` line.
fn tools(t: &str) -> BTreeMap<String, String> {
    t.lines()
        .filter_map(|l| l.strip_prefix("tools: "))
        .flat_map(|l| l.split(' '))
        .filter_map(|t| t.split_once('@').map(|(n, h)| (n.to_string(), h.split(' ').next().unwrap_or(h).to_string())))
        .collect()
}

/// The tools of the first request (its `tools:` line), deferred ones included.
fn first_request_tools(t: &str) -> BTreeSet<String> {
    t.lines()
        .find_map(|l| l.strip_prefix("tools: "))
        .into_iter()
        .flat_map(|l| l.split(' '))
        .filter_map(|t| t.split_once('@').map(|(n, _)| n.to_string()))
        .collect()
}

fn system(t: &str) -> Option<String> {
    // the prompt's blob, not a system-role message's quoted text
    t.lines().find_map(|l| l.strip_prefix("system: ").filter(|r| !r.starts_with('"'))).map(str::to_string)
}

/// The request-shape lines: the model line, where each request's cache markers sit (`cache_control:`,
/// after the request's heading), and per `tools:` line the deferred tools.
fn shape_lines(t: &str) -> String {
    let mut heading = "";
    t.lines()
        .filter_map(|l| {
            if l.starts_with("## request ") {
                heading = l;
                return None;
            }
            if l.starts_with("model: ") {
                return Some(l.to_string());
            }
            if l.starts_with("cache_control: ") {
                return Some(format!("{} {l}", heading.trim_start_matches("## ")));
            }
            let tools = l.strip_prefix("tools: ")?;
            let deferred: Vec<&str> = tools
                .split(' ')
                .collect::<Vec<_>>()
                .windows(2)
                .filter(|w| w[1] == "(deferred)")
                .map(|w| w[0].split('@').next().unwrap_or(w[0]))
                .collect();
            Some(format!("deferred: {}", deferred.join(" ")))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The verdict lines.
/// One probe's change between two of its transcripts, in words: each tool result that differs (paired
/// by tool_use id, [`ResultChange`]) with the tool that made it (the transcripts' `tool_use <id> <Tool>`
/// lines), and each verdict that moved (`check 5: file hook.log: pass → FAIL`). `unordered`: the tool_use
/// ids whose result lines come in any order (compared as sets).
pub fn transcript_changes(
    left: &str,
    right: &str,
    unordered: &BTreeSet<String>,
) -> (Vec<(Option<String>, ResultChange)>, Vec<String>) {
    let (rx, ry) = (result_lines(left, unordered), result_lines(right, unordered));
    let changes = if rx == ry { Vec::new() } else { named(result_changes(&rx, &ry), left, right) };
    let named = changes.into_iter().map(|c| (c.tool.clone(), c)).collect();
    (named, verdict_changes(&verdict_lines(left), &verdict_lines(right)))
}

/// `changes` with the tool of each result's call, from the `tool_use <id> <Tool>` lines of either side.
fn named(mut changes: Vec<ResultChange>, left: &str, right: &str) -> Vec<ResultChange> {
    let calls: BTreeMap<&str, &str> = left
        .lines()
        .chain(right.lines())
        .filter_map(|l| l.strip_prefix("tool_use "))
        .filter_map(|l| {
            let mut it = l.split(' ');
            Some((it.next()?, it.next()?))
        })
        .collect();
    for c in &mut changes {
        // `tool_result <id>` or `tool_result <id> is_error`
        let id = c.call.split(' ').nth(1).unwrap_or("").trim_end_matches(':');
        c.tool = calls.get(id).map(|t| t.to_string());
    }
    changes
}

fn verdict_lines(t: &str) -> String {
    t.split("\n## verdicts\n").nth(1).unwrap_or_default().trim_end().to_string()
}

/// Lines of tool_result sections (a result line and its indented content), each result's text without
/// the `<system-reminder>` blocks a subject appends to it (Claude Code does with some models, e.g.
/// `--model claude-sonnet-4-5`: `<total_tokens>N tokens left</total_tokens>`, a count that moves with
/// the prompt's size) — the fingerprint's own step ([`fingerprint_text`]: every other byte kept, trailing
/// white space too): the reminders are context for the model, not what the tool answered. The content of a result whose tool_use id is in `unordered` (the probe's
/// `unordered`: a subject's parallel search prints its lines in any order) is sorted, as the behaviour
/// fingerprint counts those lines as a set ([`crate::observe::behaviour`]).
fn result_lines(t: &str, unordered: &BTreeSet<String>) -> String {
    let mut out: Vec<String> = Vec::new();
    // the current result's `  | ` lines, and whether they are a set
    let mut text: Option<Vec<&str>> = None;
    let mut as_set = false;
    let flush = |text: &mut Option<Vec<&str>>, out: &mut Vec<String>, as_set: bool| {
        if let Some(lines) = text.take() {
            let raw = lines.iter().map(|l| l.strip_prefix("  | ").unwrap_or("")).collect::<Vec<_>>().join("\n");
            let mut shown: Vec<String> =
                super::indent(&fingerprint_text(&raw)).split('\n').map(str::to_string).collect();
            if as_set {
                shown.sort_unstable();
            }
            out.extend(shown);
        }
    };
    let mut inside = false;
    for l in t.lines() {
        let header = l.starts_with("tool_result ");
        if header || !(inside && l.starts_with("  |")) {
            flush(&mut text, &mut out, as_set);
        }
        // the lab's own prelude (deferred tools loaded) is not the subject's behaviour
        if header && l.contains("_prelude_") {
            inside = false;
        } else if header {
            inside = true;
            out.push(l.to_string());
            let id = l.split(' ').nth(1).unwrap_or_default().trim_end_matches(':');
            as_set = unordered.contains(id);
        } else if inside && l.starts_with("  |") {
            text.get_or_insert_with(Vec::new).push(l);
        } else if inside && l.starts_with("  [") {
            out.push(l.to_string());
        } else {
            inside = false;
        }
    }
    flush(&mut text, &mut out, as_set);
    out.join("\n")
}

/// A transcript with the content lines (`  | `) of each tool_result whose id is in `ids` sorted, every
/// other line as it is: two transcripts equal after it differ at most in the order of those results'
/// lines (a probe's `unordered`: a subject's parallel search prints them in any order). `run`'s golden
/// comparison uses it, as `diff` ([`result_lines`]) and the fingerprint do.
pub fn unordered_sorted(t: &str, ids: &BTreeSet<String>) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let mut as_set = false;
    for l in t.split('\n') {
        if as_set && l.starts_with("  | ") {
            run.push(l);
            continue;
        }
        run.sort_unstable();
        out.append(&mut run);
        if l.starts_with("tool_result ") {
            let id = l.split(' ').nth(1).unwrap_or_default().trim_end_matches(':');
            as_set = ids.contains(id);
        } else if !l.starts_with("  ") {
            as_set = false;
        }
        out.push(l);
    }
    run.sort_unstable();
    out.append(&mut run);
    out.join("\n")
}

/// A blob's text by the short hash a golden names (`(blob … not in the store)` when it is missing).
pub fn blob_text(blobs: &Path, short: &str) -> String {
    std::fs::read_dir(blobs)
        .into_iter()
        .flatten()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(short))
        .map(|e| {
            super::golden::read_blob(&e.path()).unwrap_or_else(|why| format!("(blob {short} in the store is {why})\n"))
        })
        .unwrap_or_else(|| format!("(blob {short} not in the store)\n"))
}

/// The tools a golden defers: marked `(deferred)` on its `tools:` line, or named in the list a subject
/// announces for ToolSearch ("The following deferred tools are now available via ToolSearch. … :\n
/// NAME\nNAME\n\n", inside a request's text).
fn deferred(t: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in t.lines().filter_map(|l| l.strip_prefix("tools: ")) {
        let mut tokens = line.split(' ').peekable();
        while let Some(tok) = tokens.next() {
            if let Some((name, _)) = tok.split_once('@') {
                if tokens.peek() == Some(&"(deferred)") {
                    out.insert(name.to_string());
                }
            }
        }
    }
    // a golden writes a message's line breaks escaped
    out.extend(announced_deferred(t, "\\n"));
    out
}

/// The tools a message announces as deferred ("The following deferred tools are now available via
/// ToolSearch. …:" then a name a line, up to an empty line), in order; `line_break` is how the text
/// writes one (`\n`, or `\\n` in a golden, which escapes them).
pub fn announced_deferred(text: &str, line_break: &str) -> Vec<String> {
    const ANNOUNCE: &str = "The following deferred tools are now available via ToolSearch.";
    let mut out: Vec<String> = Vec::new();
    let after_colon = format!(":{line_break}");
    for (i, _) in text.match_indices(ANNOUNCE) {
        let rest = &text[i..];
        let Some(colon) = rest.find(&after_colon) else { continue };
        for name in rest[colon + after_colon.len()..].split(line_break) {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                break;
            }
            if !out.iter().any(|n| n == name) {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// The section of the files the checks read (empty when the transcript has none).
fn files_part(t: &str) -> &str {
    let heading = format!("\n{}\n", super::FILES_HEADING);
    let Some(at) = t.find(&heading) else { return "" };
    let rest = &t[at + heading.len()..];
    rest.split("\n## verdicts\n").next().unwrap_or(rest).trim_end()
}

/// The files of [`files_part`]: (the path the check names, what the transcript shows of it: its text,
/// or the line that stands for it — absent, its size and hash).
fn file_blocks(part: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, Vec<&str>)> = Vec::new();
    for l in part.lines() {
        if let Some(rest) = l.strip_prefix("file ") {
            // `file NAME:` then its lines, or `file NAME: what` on one line; a glob's `PATTERN = PATH`
            let (name, text) = match rest.strip_suffix(':') {
                Some(name) => (name, Vec::new()),
                None => rest.split_once(": ").map(|(n, t)| (n, vec![t])).unwrap_or((rest, Vec::new())),
            };
            out.push((name.split(" = ").next().unwrap_or(name).to_string(), text));
        } else if let Some((_, text)) = out.last_mut() {
            text.push(l.strip_prefix("  | ").or_else(|| l.strip_prefix("  |")).unwrap_or(l));
        }
    }
    out.into_iter().map(|(name, lines)| (name, lines.join("\n"))).collect()
}

/// Each file whose content differs between the sides, in words, paired by the path its check names.
fn file_changes(left: &str, right: &str) -> Vec<ResultChange> {
    let (a, b) = (file_blocks(left), file_blocks(right));
    let mut out = Vec::new();
    for (name, ta) in &a {
        let call = format!("file {name}");
        match b.iter().find(|(n, _)| n == name) {
            Some((_, tb)) if ta != tb => out.push(ResultChange {
                call,
                is_error: None,
                words: word_diff(ta, tb),
                segments: word_segments(ta, tb),
                tool: None,
            }),
            Some(_) => {}
            None => out.push(one_side(call, ta, '-')),
        }
    }
    for (name, tb) in b.iter().filter(|(n, _)| !a.iter().any(|(m, _)| m == n)) {
        out.push(one_side(format!("file {name}"), tb, '+'));
    }
    out
}

/// A result or file on one side only.
fn one_side(call: String, text: &str, side: char) -> ResultChange {
    let shown = cut(text, WORD_CONTEXT * 2);
    let words = match side {
        '-' => format!("[-{shown}-] (not on the right)"),
        _ => format!("{{+{shown}+}} (not on the left)"),
    };
    ResultChange { call, is_error: None, words, segments: vec![(side, shown)], tool: None }
}

/// Each verdict that moved, in words: `check 5: file hook.log pass → FAIL`, paired by the check's name
/// (a check on one side only said so).
fn verdict_changes(left: &str, right: &str) -> Vec<String> {
    let parse = |t: &str| -> Vec<(String, String)> {
        t.lines().filter_map(|l| l.split_once(' ').map(|(w, name)| (name.to_string(), w.to_string()))).collect()
    };
    let (a, b) = (parse(left), parse(right));
    let mut out = Vec::new();
    for (name, wa) in &a {
        match b.iter().find(|(n, _)| n == name) {
            Some((_, wb)) if wa != wb => out.push(format!("{name}: {wa} → {wb}")),
            Some(_) => {}
            None => out.push(format!("{name}: {wa} → (no such check)")),
        }
    }
    for (name, wb) in b.iter().filter(|(n, _)| !a.iter().any(|(m, _)| m == n)) {
        out.push(format!("{name}: (no such check) → {wb}"));
    }
    out
}

/// The result blocks of [`result_lines`], by header id: (header, text).
fn result_blocks(lines: &str) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    for l in lines.lines() {
        if let Some(rest) = l.strip_prefix("tool_result ") {
            let id = rest.split([' ', ':']).next().unwrap_or_default().to_string();
            out.push((id, l.trim_end_matches(':').to_string(), String::new()));
        } else if let Some((_, _, text)) = out.last_mut() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(l.strip_prefix("  | ").or_else(|| l.strip_prefix("  |")).unwrap_or(l));
        }
    }
    out
}

/// Each result whose text or `is_error` differs, with its words — paired by tool_use id, never by
/// position: each call's first answer on one side with its first answer on the other (a compaction
/// request repeats earlier results in its history: those copies are not the answers), every call
/// answered on both sides compared; a call answered on one side only said so.
fn result_changes(left: &str, right: &str) -> Vec<ResultChange> {
    let first = |lines: &str| {
        let mut seen: Vec<(String, String, String)> = Vec::new();
        for b in result_blocks(lines) {
            if !seen.iter().any(|s| s.0 == b.0) {
                seen.push(b);
            }
        }
        seen
    };
    let (a, b) = (first(left), first(right));
    let mut out = Vec::new();
    for (id, ha, ta) in &a {
        match b.iter().find(|(j, _, _)| j == id) {
            Some((_, hb, tb)) if ha != hb || ta != tb => {
                let (ea, eb) = (ha.ends_with(" is_error"), hb.ends_with(" is_error"));
                out.push(ResultChange {
                    call: ha.trim_end_matches(" is_error").to_string(),
                    is_error: (ea != eb).then(|| format!("{ea} → {eb}")),
                    words: if ta == tb { String::new() } else { word_diff(ta, tb) },
                    segments: if ta == tb { Vec::new() } else { word_segments(ta, tb) },
                    tool: None,
                });
            }
            Some(_) => {}
            None => out.push(one_side(ha.clone(), ta, '-')),
        }
    }
    for (_, hb, tb) in b.iter().filter(|(j, _, _)| !a.iter().any(|(i, _, _)| i == j)) {
        out.push(one_side(hb.clone(), tb, '+'));
    }
    out
}

/// How many characters of unchanged text a word diff keeps on each side of a change.
const WORD_CONTEXT: usize = 40;
/// The longest word diff shown for one result (the whole is in `--full`).
const WORD_DIFF_MAX: usize = 600;

fn cut(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The words that changed between two texts, `[-removed-]{+added+}`, with [`WORD_CONTEXT`] characters of
/// unchanged text around each change (`…` for what is left out), at most [`WORD_DIFF_MAX`] characters;
/// line breaks shown as `⏎`.
pub fn word_diff(old: &str, new: &str) -> String {
    let mut out = String::new();
    for (tag, v) in word_segments(old, new) {
        match tag {
            '-' => out.push_str(&format!("[-{v}-]")),
            '+' => out.push_str(&format!("{{+{v}+}}")),
            _ => out.push_str(&v),
        }
    }
    if out.chars().count() > WORD_DIFF_MAX {
        out = cut(&out, WORD_DIFF_MAX) + " (cut; --full shows it all)";
    }
    out
}

/// A text as the word diff's tokens: runs of letters, digits and `_`, runs of white space, and every
/// other character alone.
fn tokens(s: &str) -> Vec<&str> {
    let class = |c: char| {
        if c.is_alphanumeric() || c == '_' {
            1
        } else if c.is_whitespace() {
            2
        } else {
            3
        }
    };
    let mut out = Vec::new();
    let mut start = 0;
    let mut prev: Option<u8> = None;
    for (i, c) in s.char_indices() {
        let k = class(c);
        if prev.is_some_and(|p| p != k || k == 3) {
            out.push(&s[start..i]);
            start = i;
        }
        prev = Some(k);
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// The segments of a word diff: `=` unchanged (shortened to [`WORD_CONTEXT`] characters each side of a
/// change, `…` where cut), `-` removed, `+` added; line breaks as `⏎`.
pub fn word_segments(old: &str, new: &str) -> Vec<(char, String)> {
    use similar::ChangeTag;
    // words of letters and digits, each other character on its own (a JSON payload's `"First"` is the
    // quote, the word, the quote: the word is what changed, not the whole line), white space in runs
    let (a, b) = (tokens(old), tokens(new));
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &a, &b);
    let mut runs: Vec<(char, String)> = Vec::new();
    for (tag, v) in ops.iter().flat_map(|op| {
        op.iter_changes(&a, &b).map(|c| {
            let tag = match c.tag() {
                ChangeTag::Equal => '=',
                ChangeTag::Delete => '-',
                ChangeTag::Insert => '+',
            };
            (tag, c.value())
        })
    }) {
        let v = v.replace('\n', "⏎");
        match runs.last_mut() {
            Some((t, s)) if *t == tag => s.push_str(&v),
            _ => runs.push((tag, v)),
        }
    }
    // a change that spans words reads as one: the spaces between changed words join the removed and
    // the added text (`[-is disabled for-]{+is not among the+}`, not word by word)
    let mut grouped: Vec<(char, String)> = Vec::new();
    let (mut del, mut ins) = (String::new(), String::new());
    let last = runs.len().saturating_sub(1);
    for (i, (tag, v)) in runs.into_iter().enumerate() {
        let pending = !del.is_empty() || !ins.is_empty();
        match tag {
            '-' => del.push_str(&v),
            '+' => ins.push_str(&v),
            _ if pending && i < last && v.chars().all(char::is_whitespace) => {
                del.push_str(&v);
                ins.push_str(&v);
            }
            _ => {
                if !del.is_empty() {
                    grouped.push(('-', std::mem::take(&mut del)));
                }
                if !ins.is_empty() {
                    grouped.push(('+', std::mem::take(&mut ins)));
                }
                grouped.push((tag, v));
            }
        }
    }
    if !del.is_empty() {
        grouped.push(('-', del));
    }
    if !ins.is_empty() {
        grouped.push(('+', ins));
    }
    let n = grouped.len();
    grouped
        .into_iter()
        .enumerate()
        .map(|(i, (tag, v))| {
            if tag != '=' {
                return (tag, v);
            }
            let chars: Vec<char> = v.chars().collect();
            let (first, last) = (i == 0, i + 1 == n);
            if chars.len() <= 2 * WORD_CONTEXT {
                return (tag, v);
            }
            let mut s = String::new();
            if !first {
                s.extend(&chars[..WORD_CONTEXT]);
            }
            s.push('…');
            if !last {
                s.extend(&chars[chars.len() - WORD_CONTEXT..]);
            }
            (tag, s)
        })
        .collect()
}

fn udiff(a: &str, b: &str, left: &str, right: &str) -> Option<String> {
    (a != b)
        .then(|| similar::TextDiff::from_lines(a, b).unified_diff().context_radius(2).header(left, right).to_string())
}

/// Compares two golden directories; blobs are looked up in `blobs`.
pub fn diff_dirs(left: &Path, right: &Path, blobs: &Path) -> Result<SetDiff, SetError> {
    diff_dirs_with(left, right, blobs, &BTreeMap::new())
}

/// The tool_use ids of a probe's `unordered` results (the N-th scripted call of the main conversation:
/// its explicit `id`, else the stub's `toolu_<probe>_<N>`), for [`diff_dirs_with`].
pub fn unordered_ids(probe: &crate::probe::Probe) -> BTreeSet<String> {
    let script = &probe.script;
    script
        .turns
        .iter()
        .flat_map(|t| t.tool_use.iter())
        .enumerate()
        .filter(|(i, _)| probe.unordered.contains(&(i + 1)))
        .map(|(i, u)| u.id.clone().unwrap_or_else(|| format!("toolu_{}_{}", script.id, i + 1)))
        .collect()
}

/// [`unordered_ids`] of every probe that marks results `unordered`, by probe id: what
/// [`diff_dirs_with`] takes.
pub fn unordered_of(probes: &[crate::probe::Probe]) -> BTreeMap<String, BTreeSet<String>> {
    probes.iter().filter(|p| !p.unordered.is_empty()).map(|p| (p.id.clone(), unordered_ids(p))).collect()
}

/// [`diff_dirs`], with the results whose lines come in any order given per probe id (the tool_use ids
/// of [`unordered_ids`]): their lines are compared as sets, as the behaviour fingerprint does.
pub fn diff_dirs_with(
    left: &Path,
    right: &Path,
    blobs: &Path,
    unordered: &BTreeMap<String, BTreeSet<String>>,
) -> Result<SetDiff, SetError> {
    let none = BTreeSet::new();
    let (a, b) = (read_set(left)?, read_set(right)?);
    let (ln, rn) = (left.display().to_string(), right.display().to_string());
    let mut out = SetDiff { left: ln.clone(), right: rn.clone(), ..SetDiff::default() };
    if !a.keys().any(|k| b.contains_key(k)) {
        return Err(SetError::Disjoint { left: ln, right: rn });
    }
    let ids: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for id in ids {
        let (Some(x), Some(y)) = (a.get(id), b.get(id)) else {
            if a.contains_key(id) {
                out.only_left.push(id.clone());
            } else {
                out.only_right.push(id.clone());
            }
            continue;
        };
        let (tx, ty) = (tools(x), tools(y));
        let mut d = ProbeDiff { probe: id.clone(), ..ProbeDiff::default() };
        let (dx, dy) = (deferred(x), deferred(y));
        for k in ty.keys().filter(|k| !tx.contains_key(*k)) {
            if dx.contains(k) {
                d.tools_undeferred.push(k.clone());
            } else {
                d.tools_added.push(k.clone());
            }
        }
        for k in tx.keys().filter(|k| !ty.contains_key(*k)) {
            if dy.contains(k) {
                d.tools_deferred.push(k.clone());
            } else {
                d.tools_removed.push(k.clone());
            }
        }
        // listed on both sides, deferred on one only; offered from the first request on one only
        let (fx, fy) = (first_request_tools(x), first_request_tools(y));
        for (k, _) in tx.iter().filter(|(k, _)| ty.contains_key(*k)) {
            match (dx.contains(k), dy.contains(k)) {
                (false, true) => d.tools_deferred.push(k.clone()),
                (true, false) => d.tools_undeferred.push(k.clone()),
                _ => {}
            }
            // a deferred tool comes in a later request once ToolSearch loaded it: said as deferred
            if dx.contains(k) || dy.contains(k) {
                continue;
            }
            match (fx.contains(k), fy.contains(k)) {
                (false, true) => d.tools_into_first.push(k.clone()),
                (true, false) => d.tools_out_of_first.push(k.clone()),
                _ => {}
            }
        }
        let mut change = |key: String, hx: &str, hy: &str| -> String {
            out.blob_changes
                .entry(key.clone())
                .or_insert_with(|| udiff(&blob_text(blobs, hx), &blob_text(blobs, hy), &ln, &rn).unwrap_or_default());
            key
        };
        for (name, hx) in &tx {
            if let Some(hy) = ty.get(name).filter(|hy| *hy != hx) {
                d.tools_changed.push(change(format!("tool {name} {hx} → {hy}"), hx, hy));
            }
        }
        if let (Some(sx), Some(sy)) = (system(x), system(y)) {
            if sx != sy {
                d.system = Some(change(format!("system {sx} → {sy}"), &sx, &sy));
            }
        }
        let set = unordered.get(id).unwrap_or(&none);
        let (rx, ry) = (result_lines(x, set), result_lines(y, set));
        d.results = udiff(&rx, &ry, &ln, &rn);
        if d.results.is_some() {
            d.changes = named(result_changes(&rx, &ry), x, y);
        }
        let (fx, fy) = (files_part(x), files_part(y));
        d.files = udiff(fx, fy, &ln, &rn);
        if d.files.is_some() {
            d.changes.extend(file_changes(fx, fy));
        }
        d.verdicts = udiff(&verdict_lines(x), &verdict_lines(y), &ln, &rn);
        if d.verdicts.is_some() {
            d.verdict_changes = verdict_changes(&verdict_lines(x), &verdict_lines(y));
        }
        d.shape = udiff(&shape_lines(x), &shape_lines(y), &ln, &rn);
        let results: BTreeSet<String> =
            result_lines(x, &none).lines().chain(result_lines(y, &none).lines()).map(str::to_string).collect();
        let strip = |t: &str| {
            let body = t.split("\n## verdicts\n").next().unwrap_or(t);
            let files = format!("\n{}\n", super::FILES_HEADING);
            let body = body.split(files.as_str()).next().unwrap_or(body);
            body.lines()
                .filter(|l| {
                    !l.starts_with("subject: ")
                        && !l.starts_with("tools: ")
                        // the system prompt's blob (`system: 5f96ca5215c0`, its own layer); a system-role
                        // message's text (`system: "Available agent types…"`) is the rest's
                        && (!l.starts_with("system: ") || l.starts_with("system: \""))
                        && !l.starts_with("model: ")
                        && !l.starts_with("cache_control: ")
                        && !results.contains(*l)
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        d.rest = udiff(&strip(x), &strip(y), &ln, &rn);
        out.probes.push(d);
    }
    Ok(out)
}

fn indented(o: &mut Vec<String>, head: String, text: &str) {
    o.push(head);
    o.extend(text.lines().map(|l| format!("      {l}")));
}

/// One probe's lines (blob changes by name; their diffs are in the set's blob changes).
fn render_probe(p: &ProbeDiff, o: &mut Vec<String>) {
    if p.is_same() {
        o.push(format!("same  {}", p.probe));
        return;
    }
    let word = if p.same_behaviour() { "same behaviour" } else { "BEHAVIOUR DIFFERS" };
    o.push(format!("DIFF  {} ({word})", p.probe));
    o.extend(p.fingerprint_notes().into_iter().map(|n| format!("  behaviour: {n}")));
    if let Some(r) = &p.results {
        indented(o, "  behaviour: tool results:".into(), r);
    }
    if let Some(r) = &p.files {
        indented(o, "  behaviour: files the checks read:".into(), r);
    }
    if let Some(r) = &p.verdicts {
        indented(o, "  behaviour: verdicts:".into(), r);
    }
    o.extend(p.tools_added.iter().map(|t| format!("  interface: + tool {t}")));
    o.extend(p.tools_removed.iter().map(|t| format!("  interface: - tool {t}")));
    o.extend(p.tools_deferred.iter().map(|t| format!("  interface: > tool {t} deferred (loaded through ToolSearch)")));
    o.extend(p.tools_undeferred.iter().map(|t| format!("  interface: < tool {t} no longer deferred")));
    o.extend(p.tools_into_first.iter().map(|t| format!("  interface: ^ tool {t} {INTO_FIRST}")));
    o.extend(p.tools_out_of_first.iter().map(|t| format!("  interface: v tool {t} {OUT_OF_FIRST}")));
    o.extend(p.tools_changed.iter().map(|k| format!("  interface: ~ {k} (schema or description, see blob changes)")));
    if let Some(k) = &p.system {
        o.push(format!("  prompt: ~ {k} (see blob changes)"));
    }
    if let Some(r) = &p.shape {
        indented(o, "  request shape:".into(), r);
    }
    if let Some(r) = &p.rest {
        indented(o, "  other:".into(), r);
    }
}

/// The summary a diff leads with: the figures, the interface over the whole set (tools added, removed,
/// deferred, no longer deferred, changed — each with how many probes saw it), then each probe whose
/// behaviour differs with the words that changed in each differing tool result; the probes whose
/// behaviour is the same are counted. Every layer in full: [`render_text`] (`probelab diff --full`).
pub fn render_summary(d: &SetDiff) -> String {
    let mut o = vec![format!("diff {} → {}", d.left, d.right)];
    o.push(format!(
        "{} probes in common: {:.0}% same behaviour, {:.0}% same tool results (conformance); {} only left, {} only right",
        d.probes.len(),
        d.behaviour_same_percent(),
        d.results_same_percent(),
        d.only_left.len(),
        d.only_right.len()
    ));
    let mut interface: BTreeMap<String, usize> = BTreeMap::new();
    // a broken run's requests are no interface of the subject's (a script that ran out makes it retry
    // without tool search: its tools would read as no longer deferred)
    for p in d.probes.iter().filter(|p| !p.is_broken()) {
        let lines = p
            .tools_added
            .iter()
            .map(|t| format!("+ {t}"))
            .chain(p.tools_removed.iter().map(|t| format!("- {t}")))
            .chain(p.tools_deferred.iter().map(|t| format!("> {t} deferred")))
            .chain(p.tools_undeferred.iter().map(|t| format!("< {t} no longer deferred")))
            .chain(p.tools_into_first.iter().map(|t| format!("^ {t} {INTO_FIRST}")))
            .chain(p.tools_out_of_first.iter().map(|t| format!("v {t} {OUT_OF_FIRST}")))
            .chain(p.tools_changed.iter().map(|k| {
                let name = k.strip_prefix("tool ").and_then(|r| r.split(' ').next()).unwrap_or(k);
                format!("~ {name} schema or description")
            }));
        for l in lines {
            *interface.entry(l).or_default() += 1;
        }
    }
    if !interface.is_empty() {
        o.push("interface (the tools the requests offer; in how many probes):".into());
        o.extend(interface.iter().map(|(l, n)| format!("  {l} ({n})")));
    }
    if let Some(k) = d.blob_changes.keys().find(|k| k.starts_with("system ")) {
        o.push(format!("prompt: the system prompt changed ({k}; --full shows the text diff)"));
    }
    let differs: Vec<&ProbeDiff> = d.probes.iter().filter(|p| !p.same_behaviour()).collect();
    o.push(format!("behaviour differs in {} of {} probes:", differs.len(), d.probes.len()));
    for p in &differs {
        o.push(format!("  {}", p.probe));
        for c in &p.changes {
            let err = c.is_error.as_deref().map(|e| format!(" is_error {e}")).unwrap_or_default();
            if c.words.is_empty() {
                o.push(format!("    {}{err}", c.call));
            } else {
                o.push(format!("    {}{err}: {}", c.call, c.words));
            }
        }
        // what the checks saw move, when no result or file shows it (a request's text, a wait)
        if p.changes.is_empty() {
            o.extend(p.verdict_changes.iter().map(|v| format!("    {v}")));
        }
        o.extend(p.fingerprint_notes().into_iter().map(|n| format!("    {n}")));
    }
    for p in d.probes.iter().filter(|p| p.same_behaviour()) {
        for n in p.fingerprint_notes() {
            o.push(format!("  {}: {n}", p.probe));
        }
    }
    let same_other = d.probes.iter().filter(|p| p.same_behaviour() && !p.is_same()).count();
    o.push(format!(
        "same behaviour in {} probes ({} of them with other layers changed: interface, prompt, request shape)",
        d.probes.len() - differs.len(),
        same_other
    ));
    o.push("(--full: every layer of every probe)".into());
    o.join("\n") + "\n"
}

/// Text for a terminal: every layer of every probe (`probelab diff --full`).
pub fn render_text(d: &SetDiff) -> String {
    let mut o = vec![format!("diff {} → {}", d.left, d.right)];
    for p in &d.only_left {
        o.push(format!("- probe {p} (only in {})", d.left));
    }
    for p in &d.only_right {
        o.push(format!("+ probe {p} (only in {})", d.right));
    }
    for (k, text) in &d.blob_changes {
        indented(&mut o, format!("blob change: {k}"), text);
    }
    for p in &d.probes {
        render_probe(p, &mut o);
    }
    let count = |f: &dyn Fn(&ProbeDiff) -> bool| d.probes.iter().filter(|p| f(p)).count();
    o.push(format!(
        "layers: behaviour differs in {}, interface in {}, prompt in {}, request shape in {}, other in {} (of {} probes)",
        count(&|p| !p.same_behaviour()),
        count(&|p| !(p.tools_added.is_empty() && p.tools_removed.is_empty() && p.tools_changed.is_empty())),
        count(&|p| p.system.is_some()),
        count(&|p| p.shape.is_some()),
        count(&|p| p.rest.is_some()),
        d.probes.len()
    ));
    o.push(format!(
        "{} probes in common: {:.0}% same behaviour, {:.0}% same tool results (conformance), {:.0}% same transcripts; {} only left, {} only right",
        d.probes.len(),
        d.behaviour_same_percent(),
        d.results_same_percent(),
        d.same_percent(),
        d.only_left.len(),
        d.only_right.len()
    ));
    o.join("\n") + "\n"
}

fn esc(s: &str) -> String {
    crate::html::escape(s)
}

/// A static HTML page: the claims × sides matrix (which probe of which claim differs) and the diffs.
pub fn render_html(d: &SetDiff, claims_of: &BTreeMap<String, Vec<String>>) -> String {
    let mut rows = String::new();
    let mut by_claim: BTreeMap<&str, Vec<&ProbeDiff>> = BTreeMap::new();
    for p in &d.probes {
        for c in claims_of.get(&p.probe).into_iter().flatten() {
            by_claim.entry(c.as_str()).or_default().push(p);
        }
    }
    for (claim, ps) in &by_claim {
        let cells: Vec<String> = ps
            .iter()
            .map(|p| {
                // behaviour only: a probe whose prompt or interface changed but whose results and
                // verdicts did not is the same behaviour
                let (class, word) = match (p.same_behaviour(), p.is_same()) {
                    (true, true) => ("same", "same"),
                    (true, false) => ("same", "same behaviour (other layers changed)"),
                    (false, _) => ("diff", "behaviour differs"),
                };
                format!("<a class=\"{class}\" href=\"#{}\">{} — {word}</a>", esc(&p.probe), esc(&p.probe))
            })
            .collect();
        rows.push_str(&format!("<tr><th>{}</th><td>{}</td></tr>\n", esc(claim), cells.join("<br>")));
    }
    let mut summary = String::new();
    for p in d.probes.iter().filter(|p| !p.same_behaviour()) {
        summary.push_str(&format!("<li><a href=\"#{0}\">{0}</a><ul>\n", esc(&p.probe)));
        for c in &p.changes {
            let words: String = c
                .segments
                .iter()
                .map(|(tag, v)| match tag {
                    '-' => format!("<del>{}</del>", esc(v)),
                    '+' => format!("<ins>{}</ins>", esc(v)),
                    _ => esc(v),
                })
                .collect();
            let err = c.is_error.as_deref().map(|e| format!(" <b>is_error {}</b>", esc(e))).unwrap_or_default();
            summary.push_str(&format!(
                "<li><code>{}</code>{err}: <span class=\"words\">{words}</span></li>\n",
                esc(&c.call)
            ));
        }
        summary.push_str("</ul></li>\n");
    }
    let mut details = String::new();
    for (k, text) in &d.blob_changes {
        details.push_str(&format!("<h3>blob change: {}</h3>\n<pre>{}</pre>\n", esc(k), esc(text)));
    }
    for p in &d.probes {
        let mut lines = Vec::new();
        render_probe(p, &mut lines);
        details.push_str(&format!("<h3 id=\"{0}\">{0}</h3>\n<pre>{1}</pre>\n", esc(&p.probe), esc(&lines.join("\n"))));
    }
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>probelab diff</title><style>\
body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}} td,th{{border:1px solid #999;padding:4px 8px;text-align:left}}\
.same{{color:#060}} .diff{{color:#b00;font-weight:bold}} pre{{background:#f4f4f4;padding:8px;white-space:pre-wrap;overflow-wrap:anywhere}}\
del{{background:#fcc}} ins{{background:#cfc;text-decoration:none}} .words{{white-space:pre-wrap;overflow-wrap:anywhere;font-family:monospace}}</style></head><body>\n\
<h1>probelab diff</h1><p>{} → {}: {} probes in common, {:.0}% the same; only left: {}; only right: {}</p>\n\
<h2>Claims × probes</h2><table><tr><th>claim</th><td>{} vs {}</td></tr>\n{}</table>\n\
<h2>What changed (the words of each differing tool result)</h2>\n<ul id=\"summary\">\n{}</ul>\n<h2>Per probe</h2>\n{}</body></html>\n",
        esc(&d.left),
        esc(&d.right),
        d.probes.len(),
        d.same_percent(),
        esc(&d.only_left.join(", ")),
        esc(&d.only_right.join(", ")),
        esc(&d.left),
        esc(&d.right),
        rows,
        summary,
        details
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two sides' golden directories and a blob store, made in a temporary directory that lives as
    /// long as the returned `TempDir`.
    fn sides() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (l, r, b) = (d.path().join("l"), d.path().join("r"), d.path().join("blobs"));
        for p in [&l, &r, &b] {
            std::fs::create_dir_all(p).unwrap_or_else(|e| panic!("{e}"));
        }
        (d, l, r, b)
    }

    #[test]
    fn an_unordered_result_s_lines_are_sorted_and_nothing_else_moves() {
        let t = "tool_result t_1:\n  | b.rs\n  | a.rs\ntool_result t_2:\n  | z\n  | y\n## verdicts\npass x\n";
        let ids: BTreeSet<String> = ["t_1".to_string()].into();
        let sorted = unordered_sorted(t, &ids);
        assert_eq!(
            sorted,
            "tool_result t_1:\n  | a.rs\n  | b.rs\ntool_result t_2:\n  | z\n  | y\n## verdicts\npass x\n"
        );
        let other = t.replace("  | b.rs\n  | a.rs", "  | a.rs\n  | b.rs");
        assert_eq!(unordered_sorted(&other, &ids), sorted, "the other order of t_1 is the same");
        let t2_moved = t.replace("  | z\n  | y", "  | y\n  | z");
        assert_ne!(unordered_sorted(&t2_moved, &ids), sorted, "t_2 is ordered");
        let changed = t.replace("a.rs", "c.rs");
        assert_ne!(unordered_sorted(&changed, &ids), sorted, "a line changed is a difference");
        assert_eq!(unordered_sorted(t, &BTreeSet::new()), t);
    }

    #[test]
    fn unordered_results_compare_as_sets_of_lines() {
        let (_d, l, r, b) = sides();
        let left = "probe: p\ntool_result t_1:\n  | a:1\n  | b:1\ntool_result t_2:\n  | x\n  | y\n## verdicts\npass invariant: i\n";
        std::fs::write(l.join("p.snap"), left).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(r.join("p.snap"), left.replace("  | a:1\n  | b:1", "  | b:1\n  | a:1"))
            .unwrap_or_else(|e| panic!("{e}"));
        let set = BTreeMap::from([("p".to_string(), BTreeSet::from(["t_1".to_string()]))]);
        // without `unordered` the order counts; with it, t_1's lines are a set
        assert!(diff_dirs(&l, &r, &b).unwrap_or_else(|e| panic!("{e}")).probes[0].results.is_some());
        let s = diff_dirs_with(&l, &r, &b, &set).unwrap_or_else(|e| panic!("{e}"));
        assert!(s.probes[0].results.is_none() && s.probes[0].is_same(), "{:?}", s.probes[0]);
        // the other results keep their order, and another line still differs
        std::fs::write(r.join("p.snap"), left.replace("  | x\n  | y", "  | y\n  | x"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(diff_dirs_with(&l, &r, &b, &set).unwrap_or_else(|e| panic!("{e}")).probes[0].results.is_some());
        std::fs::write(r.join("p.snap"), left.replace("  | b:1", "  | c:1")).unwrap_or_else(|e| panic!("{e}"));
        assert!(diff_dirs_with(&l, &r, &b, &set).unwrap_or_else(|e| panic!("{e}")).probes[0].results.is_some());
    }

    /// Two golden sets of one probe each, diffed.
    fn diff_of(left: &str, right: &str) -> SetDiff {
        let (_d, l, r, b) = sides();
        for (p, text) in [(&l, left), (&r, right)] {
            std::fs::write(p.join("p.snap"), format!("probe: p\n{text}")).unwrap_or_else(|e| panic!("{e}"));
        }
        diff_dirs(&l, &r, &b).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn results_are_paired_by_tool_use_id_never_by_position() {
        // the right compacts earlier: its compaction request repeats result 1 in its history first, and
        // result 2 comes only after it — by position every pair would be shifted
        let left = "## request 2\ntool_result t_1:\n  | reported 190000\n## request 3\ntool_result t_2:\n  | reported 500000\n\
                    ## request 4\ntool_result t_3:\n  | \"preTokens\":967005\n## verdicts\npass invariant: i\n";
        let right = "## request 2\ntool_result t_1:\n  | reported 190000\n## request 1 (conversation compact)\n\
                     tool_result t_1:\n  | reported 190000\n## request 3\ntool_result t_2:\n  | reported 500000\n\
                     ## request 4\ntool_result t_3:\n  | \"preTokens\":500005\n## verdicts\npass invariant: i\n";
        let s = diff_of(left, right);
        let changes = &s.probes[0].changes;
        assert_eq!(changes.len(), 1, "{changes:#?}");
        assert_eq!(changes[0].call, "tool_result t_3");
        assert_eq!(changes[0].words, "\"preTokens\":[-967005-]{+500005+}");
        // a call answered on one side only is said, with the others still compared
        let s = diff_of(left, &right.replace("## request 3\ntool_result t_2:\n  | reported 500000\n", ""));
        let words: Vec<&str> = s.probes[0].changes.iter().map(|c| c.words.as_str()).collect();
        assert_eq!(words, ["[-reported 500000-] (not on the right)", "\"preTokens\":[-967005-]{+500005+}"]);
        assert!(!render_summary(&s).contains("no such result"), "{}", render_summary(&s));
    }

    #[test]
    fn a_file_a_check_reads_and_a_verdict_are_said_in_words_never_verdicts_only() {
        let golden = |subject: &str, verdict: &str| {
            format!(
                "## request 1\ntool_result t_1:\n  | ok\n\n## files the checks read\nfile hook.log:\n  | {{\"task_subject\":\"{subject}\"}}\n  |\n\
                 file gone.txt: absent\n\n## verdicts\npass check 1: result 1\n{verdict} check 2: file hook.log\npass invariant: i\n"
            )
        };
        let s = diff_of(&golden("First", "pass"), &golden("Done one", "FAIL"));
        let p = &s.probes[0];
        assert!(p.results.is_none() && p.files.is_some() && p.rest.is_none(), "{p:#?}");
        assert_eq!(p.changes.len(), 1);
        assert_eq!(p.changes[0].call, "file hook.log");
        assert_eq!(p.changes[0].words, "{\"task_subject\":\"[-First-]{+Done one+}\"}⏎");
        assert_eq!(p.verdict_changes, ["check 2: file hook.log: pass → FAIL"]);
        let text = render_summary(&s);
        assert!(text.contains("    file hook.log: {\"task_subject\":\"[-First-]{+Done one+}\"}⏎"), "{text}");
        assert!(!text.contains("verdicts only"), "{text}");
        // only a verdict moved (a request check): the verdict in words
        let only = golden("First", "pass").replace("pass check 1", "FAIL check 1");
        let text = render_summary(&diff_of(&golden("First", "pass"), &only));
        assert!(text.contains("    check 1: result 1: pass → FAIL"), "{text}");
        assert!(!text.contains("verdicts only"), "{text}");
        // a cache marker that moved is the request's shape, not the rest
        let marked = |place: &str| format!("## request 1\ncache_control: {place}\n## verdicts\npass invariant: i\n");
        let s = diff_of(&marked("system[3]"), &marked("message 1 block 2"));
        assert!(s.probes[0]
            .shape
            .as_deref()
            .is_some_and(|d| d.contains("+request 1 cache_control: message 1 block 2")));
        assert!(s.probes[0].rest.is_none() && s.probes[0].same_behaviour());
    }

    #[test]
    fn a_system_role_message_is_the_rest_and_the_prompt_blob_is_not() {
        // `system: <blob>` is the prompt's layer; `system: "…"` a system-role message (the agent types
        // listed, which 2.1.239 extended with an agent file that starts with a byte-order mark)
        let golden = |prompt: &str, types: &str| {
            format!("## request 1\nsystem: {prompt}\nsystem: \"Available agent types:\\n{types}\"\n## verdicts\npass invariant: i\n")
        };
        let s = diff_of(&golden("5f96ca5215c0", "- claude"), &golden("5f96ca5215c0", "- claude\\n- helper"));
        let p = &s.probes[0];
        assert!(p.system.is_none(), "{p:#?}");
        assert!(p.rest.as_deref().is_some_and(|r| r.contains("- helper")), "{p:#?}");
        let s = diff_of(&golden("5f96ca5215c0", "- claude"), &golden("0123456789ab", "- claude"));
        let p = &s.probes[0];
        assert!(p.system.as_deref().is_some_and(|k| k.starts_with("system 5f96ca5215c0 → 0123456789ab")), "{p:#?}");
        assert!(p.rest.is_none(), "{p:#?}");
    }

    #[test]
    fn appended_reminders_are_not_results() {
        let plain = "tool_result t1:\n  | 1\tone\n  | 2\t\ntool_result t2 is_error:\n  | <tool_use_error>x</tool_use_error>\n## verdicts\npass invariant: i\n";
        let reminded = "tool_result t1:\n  | 1\tone\n  | 2\n  |\n  | <system-reminder>\n  | <total_tokens>14999874 tokens left</total_tokens>\n  | </system-reminder>\ntool_result t2 is_error:\n  | <tool_use_error>x</tool_use_error>\n  |\n  | <system-reminder>\n  | <total_tokens>1 tokens left</total_tokens>\n  | </system-reminder>\n## verdicts\npass invariant: i\n";
        // the reminders come off with the separator before them; every other byte stays: Claude Code trims
        // the text it appends them to (`2` where it would send `2\t`), and that is what the model sees
        assert_eq!(
            result_lines(reminded, &BTreeSet::new()),
            "tool_result t1:\n  | 1\tone\n  | 2\ntool_result t2 is_error:\n  | <tool_use_error>x</tool_use_error>"
        );
        assert_eq!(
            result_lines(plain, &BTreeSet::new()),
            "tool_result t1:\n  | 1\tone\n  | 2\t\ntool_result t2 is_error:\n  | <tool_use_error>x</tool_use_error>"
        );
        // a text that differs still differs
        assert_ne!(result_lines(plain, &BTreeSet::new()), result_lines(&plain.replace("one", "two"), &BTreeSet::new()));
    }

    #[test]
    fn tools_systems_and_results_are_told_apart() {
        let (_d, l, r, b) = sides();
        // blobs are named by the SHA-256 of their bytes (and checked against it when read)
        let (old, new) = ("{\"d\": \"old\"}\n", "{\"d\": \"new\"}\n");
        let (ha, hb) = (crate::transcript::sha256(old.as_bytes()), crate::transcript::sha256(new.as_bytes()));
        std::fs::write(b.join(format!("{ha}.json")), old).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(b.join(format!("{hb}.json")), new).unwrap_or_else(|e| panic!("{e}"));
        let (a12, b12) = (&ha[..12], &hb[..12]);
        let left = format!("probe: p\ntools: Read@{a12} Grep@cccccccccccc\nsystem: s1\ntool_result t1:\n  | one\n## verdicts\npass invariant: i\n");
        let right = format!(
            "probe: p\ntools: Read@{b12} Bash@dddddddddddd\nsystem: s1\ntool_result t1 is_error:\n  | one\n## verdicts\npass invariant: i\n"
        );
        std::fs::write(l.join("p.snap"), &left).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(r.join("p.snap"), &right).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(l.join("gone.snap"), "probe: gone\n## verdicts\npass invariant: i\n")
            .unwrap_or_else(|e| panic!("{e}"));
        // a second probe with the same tool change: its diff is kept and printed once
        std::fs::write(l.join("q.snap"), &left).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(r.join("q.snap"), &right).unwrap_or_else(|e| panic!("{e}"));
        let s = diff_dirs(&l, &r, &b).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.only_left, ["gone"]);
        let p = &s.probes[0];
        assert_eq!(
            (p.tools_added.clone(), p.tools_removed.clone()),
            (vec!["Bash".to_string()], vec!["Grep".to_string()])
        );
        let key = format!("tool Read {a12} → {b12}");
        assert_eq!(p.tools_changed, std::slice::from_ref(&key));
        let text = &s.blob_changes[&key];
        assert!(text.contains("-{\"d\": \"old\"}") && text.contains("+{\"d\": \"new\"}"));
        // a blob that is not what its name says is never taken for it
        std::fs::write(b.join(format!("{hb}.json")), "garbage\n").unwrap_or_else(|e| panic!("{e}"));
        let again = diff_dirs(&l, &r, &b).unwrap_or_else(|e| panic!("{e}"));
        assert!(again.blob_changes[&key].contains(&format!("+(blob {b12} in the store is corrupt: its SHA-256 is")));
        assert_eq!(crate::transcript::golden::corrupt_blobs(&b).len(), 1);
        assert!(p.system.is_none());
        assert!(p.results.as_deref().is_some_and(|r| r.contains("+tool_result t1 is_error:")));
        assert_eq!(s.blob_changes.len(), 1);
        assert_eq!(s.probes[1].tools_changed, p.tools_changed);
        assert_eq!(render_text(&s).matches("-{\"d\": \"old\"}").count(), 1);
        assert!(render_text(&s).contains("0% same behaviour, 0% same tool results (conformance), 0% same transcripts"));
        // a prompt-only change is not a behaviour change
        let prompt_only = diff_dirs(&l, &l, &b).unwrap_or_else(|e| panic!("{e}"));
        assert!(prompt_only.probes.iter().all(ProbeDiff::is_same));
        std::fs::write(r.join("p.snap"), left.replace("system: s1", "system: s2").replace("model: m", "model: n"))
            .unwrap_or_else(|e| panic!("{e}"));
        let s2 = diff_dirs(&l, &r, &b).unwrap_or_else(|e| panic!("{e}"));
        assert!(s2.probes[0].system.is_some() && s2.probes[0].same_behaviour(), "{:?}", s2.probes[0]);
        assert!(render_html(&s2, &BTreeMap::from([("p".to_string(), vec!["READ-1".to_string()])]))
            .contains("same behaviour (other layers changed)"));
        assert!(render_html(&s, &BTreeMap::new()).contains("<h3 id=\"p\">"));
    }

    #[test]
    fn a_word_diff_shows_the_changed_words_in_context_and_joins_a_changed_phrase() {
        let old = "Error: No such tool available: Edit. Edit is disabled for this session, here.";
        let new = "Error: No such tool available: Edit. Edit is not among the tools available here.";
        assert_eq!(
            word_diff(old, new),
            "Error: No such tool available: Edit. Edit is [-disabled for this session,-]{+not among the tools available+} here."
        );
        let long = "x ".repeat(100);
        let w = word_diff(&format!("{long}old tail"), &format!("{long}new tail"));
        assert!(w.starts_with('…') && w.ends_with("[-old-]{+new+} tail"), "{w}");
        assert_eq!(word_diff("a\nb", "a\nc"), "a⏎[-b-]{+c+}");
    }

    #[test]
    fn a_tool_that_moves_into_the_first_request_is_said_so_and_not_added() {
        let (_d, l, r, b) = sides();
        let later = "probe: p\n## request 1\ntools: Read@aaaaaaaaaaaa\n## request 2\ntools: Read@aaaaaaaaaaaa LSP@bbbbbbbbbbbb\n## verdicts\npass invariant: i\n";
        let first = "probe: p\n## request 1\ntools: Read@aaaaaaaaaaaa LSP@bbbbbbbbbbbb\n## request 2\n## verdicts\npass invariant: i\n";
        std::fs::write(l.join("p.snap"), later).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(r.join("p.snap"), first).unwrap_or_else(|e| panic!("{e}"));
        let p = diff_dirs(&l, &r, &b).unwrap_or_else(|e| panic!("{e}")).probes.remove(0);
        assert_eq!((p.tools_into_first.as_slice(), p.tools_added.as_slice()), (&["LSP".to_string()][..], &[][..]));
        assert!(!p.is_same());
        let back = diff_dirs(&r, &l, &b).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.probes[0].tools_out_of_first, ["LSP"]);
        assert!(render_summary(&back).contains(&format!("v LSP {OUT_OF_FIRST} (1)")), "{}", render_summary(&back));
    }

    #[test]
    fn tools_that_became_deferred_are_not_removed_and_the_summary_names_what_changed() {
        let (_d, l, r, b) = sides();
        let left = "probe: p\ntools: Read@aaaaaaaaaaaa WebFetch@bbbbbbbbbbbb TaskOutput@cccccccccccc Monitor@dddddddddddd (deferred)\ntool_result t1:\n  | Auto-expires after 7 days.\n## verdicts\npass invariant: i\n";
        let right = "probe: p\ntools: Read@aaaaaaaaaaaa ToolSearch@eeeeeeeeeeee Monitor@dddddddddddd\ntext: \"The following deferred tools are now available via ToolSearch. Use it to load them:\\nWebFetch\\n\\nAfter\"\ntool_result t1:\n  | Auto-expires after 30 days.\n## verdicts\npass invariant: i\n";
        std::fs::write(l.join("p.snap"), left).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(r.join("p.snap"), right).unwrap_or_else(|e| panic!("{e}"));
        let s = diff_dirs(&l, &r, &b).unwrap_or_else(|e| panic!("{e}"));
        let p = &s.probes[0];
        assert_eq!(p.tools_added, ["ToolSearch"]);
        assert_eq!(p.tools_removed, ["TaskOutput"], "WebFetch only became deferred");
        assert_eq!(p.tools_deferred, ["WebFetch"]);
        assert_eq!(p.tools_undeferred, ["Monitor"]);
        let summary = render_summary(&s);
        for line in [
            "  + ToolSearch (1)",
            "  - TaskOutput (1)",
            "  > WebFetch deferred (1)",
            "  < Monitor no longer deferred (1)",
            "behaviour differs in 1 of 1 probes:",
            "    tool_result t1: Auto-expires after [-7-]{+30+} days.",
        ] {
            assert!(summary.lines().any(|l| l == line), "no {line:?} in:\n{summary}");
        }
        let html = render_html(&s, &BTreeMap::new());
        assert!(html.contains("Auto-expires after <del>7</del><ins>30</ins> days."), "{html}");
        assert!(html.contains("white-space:pre-wrap"), "long lines wrap");
    }

    #[test]
    fn sets_without_goldens_or_without_a_probe_in_common_are_errors() {
        let (_d, l, r, b) = sides();
        let e = diff_dirs(&l, &r, &b).err().map(|e| crate::exit::chain(&e)).unwrap_or_default();
        assert!(e.ends_with("holds no golden transcripts (<probe-id>.snap): name a golden set such as golden/builtin or golden/claude-code@2.1.235"), "{e}");
        std::fs::write(l.join("p.snap"), "probe: p\ntool_result t1:\n  | one\n## verdicts\npass invariant: i\n")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(r.join("q.snap"), "probe: p\ntool_result t1:\n  | one\n## verdicts\npass invariant: i\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let e = diff_dirs(&l, &r, &b).err().map(|e| crate::exit::chain(&e)).unwrap_or_default();
        assert!(e.ends_with("have no probe in common: nothing to compare"), "{e}");
        std::fs::write(r.join("p.snap"), "probe: p\ntool_result t1:\n  | one\n## verdicts\npass invariant: i\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(diff_dirs(&l, &r, &b).is_ok_and(|s| s.probes.len() == 1));
    }
}
