//! Checks of a run: the probe's `[[check]]` blocks (on a result, a request, or a file after the run) and
//! the invariants every run must keep — every tool_use paired with exactly one tool_result, no request
//! refused by the stub, every scripted main turn served, the loop ended by the model within the deadline.

use crate::probe::checks::{Check, JsonCheck, Target, TextAssertions};
use crate::probe::sandbox::Sandbox;
use crate::probe::Probe;
use crate::run::RunOutput;
use crate::transcript::{result_text, View};
use serde_json::Value;

/// One verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Short, stable name (goes into the golden).
    pub name: String,
    /// Passed?
    pub pass: bool,
    /// Why it failed: place, expected, actual (never in the golden).
    pub detail: String,
    /// Not evaluated: the check is scoped to versions the subject's is not one of (it passes).
    pub skipped: bool,
    /// The failed text assertions with the whole texts compared (`detail` shows them cut).
    pub compared: Vec<Compared>,
    /// What the verdict says of what happened, apart from Claude Code's wording ([`Semantic`]). The
    /// conformance table tells a subject that does the same in other words from one that does not.
    pub semantic: Semantic,
}

/// What a verdict measures of what happened (the conformance table's marks rest on it): a check of
/// files, trees, searches or an LSP trace is semantic as a whole; a check of Claude Code's wording (a
/// result's texts, a request) has a semantic part only where it asserts `is_error` or needs the result
/// to be there; an invariant is the run's, not the probe's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Semantic {
    /// An invariant of every run (not one of the probe's checks).
    Invariant,
    /// A check that is semantic as a whole: its `pass` says.
    Whole,
    /// A check of wording with a semantic part: whether that part held.
    Part(bool),
    /// A check of wording and nothing else: it asserts texts only, so it says nothing of what happened.
    WordingOnly,
}

/// A failed text assertion of a check, with the whole texts: `--json` gives them as fields and `--keep`
/// writes them beside the sandbox, where `detail` shows a diff or the ends of a long text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Compared {
    /// The assertion: `equals`, `contains`, `not_contains`, `matches`, `stderr_equals`, `stderr_contains`.
    pub assertion: String,
    /// What the check expected (the text, the part or the regex, placeholders resolved).
    pub expected: String,
    /// The text it looked at.
    pub actual: String,
}

/// The failures of one check: messages, and the texts of the failed text assertions.
#[derive(Debug, Default)]
struct Fails {
    lines: Vec<String>,
    compared: Vec<Compared>,
}

impl Fails {
    fn push(&mut self, line: String) {
        self.lines.push(line);
    }

    /// A failed text assertion: its message, and the texts for `--json` / `--keep`.
    fn push_text(&mut self, line: String, assertion: &str, expected: &str, actual: &str) {
        self.lines.push(line);
        let (expected, actual) = (expected.to_string(), actual.to_string());
        self.compared.push(Compared { assertion: assertion.into(), expected, actual });
    }

    fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

impl Verdict {
    /// The verdict of check `index` (at `line` of the probe) on `target`, failed by `fails` if any.
    fn of_check(probe: &Probe, index: usize, line: usize, target: &str, about: Option<&str>, fails: Fails) -> Verdict {
        let about = about.map(|a| format!(" ({a})")).unwrap_or_default();
        let place = format!("{}:{line}", probe.path.display());
        Verdict {
            name: format!("check {}: {target}", index + 1),
            pass: fails.is_empty(),
            detail: if fails.is_empty() {
                String::new()
            } else {
                format!("{place}: check of {target}{about} failed:\n{}", fails.lines.join("\n"))
            },
            skipped: false,
            compared: fails.compared,
            semantic: Semantic::Whole,
        }
    }

    /// The verdict of a check scoped to `versions` (a semver range) on a subject version outside it (the
    /// line names the range, not the version: goldens of versions on one side of it read alike).
    pub fn skipped(index: usize, target: &str, versions: &str) -> Verdict {
        Verdict {
            name: format!("check {}: {target} (versions {versions})", index + 1),
            pass: true,
            detail: String::new(),
            skipped: true,
            compared: Vec::new(),
            semantic: Semantic::Whole,
        }
    }

    /// The golden line.
    pub fn line(&self) -> String {
        format!(
            "{} {}",
            if self.skipped {
                "skip"
            } else if self.pass {
                "pass"
            } else {
                "FAIL"
            },
            self.name
        )
    }
}

/// Chars of a long text a failure message shows at each end.
const SHOWN_CHARS: usize = 1500;
/// Lines of an expected-vs-actual diff a failure message shows.
const SHOWN_DIFF_LINES: usize = 80;

/// A long text is shown by its ends in failure messages, the cut stated.
fn shown(text: &str) -> String {
    let n = text.chars().count();
    if n <= 2 * SHOWN_CHARS {
        return text.to_string();
    }
    let head: String = text.chars().take(SHOWN_CHARS).collect();
    let tail: String = text.chars().skip(n - SHOWN_CHARS).collect();
    format!(
        "{head}\n[… {} of {n} chars not shown (the middle); --json has the whole text as `actual` …]\n{tail}",
        n - 2 * SHOWN_CHARS
    )
}

/// Expected vs actual as a unified diff (3 lines of context), cut after [`SHOWN_DIFF_LINES`] lines with
/// the cut stated.
pub fn unified_diff(expected: &str, actual: &str) -> String {
    let diff = similar::TextDiff::from_lines(expected, actual)
        .unified_diff()
        .context_radius(3)
        .header("expected", "actual")
        .to_string();
    let lines: Vec<&str> = diff.lines().collect();
    if lines.len() <= SHOWN_DIFF_LINES {
        return diff;
    }
    let mut out = lines[..SHOWN_DIFF_LINES].join("\n");
    out.push_str(&format!(
        "\n[… {} of {} diff lines not shown; --json has both texts as `expected` and `actual` …]\n",
        lines.len() - SHOWN_DIFF_LINES,
        lines.len()
    ));
    out
}

/// The failure message of `equals`: a unified diff, expected → actual (a missing final newline is
/// marked the way `diff -u` marks it).
fn equals_message(what: &str, expected: &str, actual: &str) -> String {
    format!(
        "expected {what} equal to the expected text; the diff, expected → actual:\n{}",
        unified_diff(expected, actual)
    )
}

fn text_assertions(c: &TextAssertions, text: &str, sb: &Sandbox, fails: &mut Fails) {
    if let Some(e) = &c.equals {
        let e = sb.resolve(e);
        if text != e {
            fails.push_text(equals_message("text", &e, text), "equals", &e, text);
        }
    }
    for s in &c.contains {
        let s = sb.resolve(s);
        if !text.contains(&s) {
            fails.push_text(format!("expected text to contain {s:?}\nactual:\n{}", shown(text)), "contains", &s, text);
        }
    }
    for s in &c.not_contains {
        let s = sb.resolve(s);
        if text.contains(&s) {
            let msg = format!("expected text not to contain {s:?}\nactual:\n{}", shown(text));
            fails.push_text(msg, "not_contains", &s, text);
        }
    }
    if let Some(re) = &c.matches {
        let resolved = sb.resolve_regex(re);
        match regex::Regex::new(&resolved) {
            Ok(r) if !r.is_match(text) => {
                let msg = format!("expected text to match /{re}/\nactual:\n{}", shown(text));
                fails.push_text(msg, "matches", &resolved, text);
            }
            Err(e) => fails.push(format!("bad regex: {e}")),
            _ => {}
        }
    }
}

fn json_assertions(json: &[JsonCheck], v: Option<&Value>, sb: &Sandbox, fails: &mut Fails) {
    for j in json {
        let got = v.and_then(|v| v.pointer(&j.pointer));
        if let Some(want) = &j.exists {
            if got.is_some() != *want {
                fails.push(format!("json {}: expected exists = {want}, got {got:?}", j.pointer));
            }
        }
        if let Some(want) = &j.equals {
            let mut want = want.clone();
            sb.resolve_json(&mut want);
            if got != Some(&want) {
                fails.push(format!(
                    "json {}: expected {want}, got {}",
                    j.pointer,
                    got.map(Value::to_string).unwrap_or_else(|| "nothing".into())
                ));
            }
        }
    }
}

/// The file a check names; a name with `*` is a glob over the sandbox (the first match in path order,
/// or the plain path when nothing matches).
/// The file a check names, with the sandbox's symlinks followed inside it only: what a subject left (a
/// link to a host file) never makes the lab read, list or show anything outside the sandbox.
fn find_file(sb: &Sandbox, f: &str) -> Result<std::path::PathBuf, String> {
    let p = sb.inside(f).map_err(|e| crate::exit::chain(&e))?;
    let p = if f.contains('*') { find_glob(sb, &p)? } else { p };
    sb.confine(&p, true).map_err(|e| format!("file {f}: {}", crate::exit::chain(&e)))
}

/// The first path under the sandbox matching the glob `p` (or `p` itself); the walk does not enter
/// symlinked directories.
fn find_glob(sb: &Sandbox, p: &std::path::Path) -> Result<std::path::PathBuf, String> {
    let glob = globset::GlobBuilder::new(&p.to_string_lossy())
        .literal_separator(true)
        .build()
        .map_err(|e| e.to_string())?
        .compile_matcher();
    let mut found = Vec::new();
    let mut stack = vec![sb.root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path.clone());
            }
            if glob.is_match(&path) {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found.into_iter().next().unwrap_or_else(|| p.to_path_buf()))
}

/// Evaluates check `index` on `subject`: skipped when the check is scoped to versions that do not
/// include the subject's ([`Probe::check_applies`]).
pub fn evaluate_on(
    probe: &Probe,
    index: usize,
    subject: &crate::subject::id::SubjectId,
    eval: impl FnOnce() -> Verdict,
) -> Verdict {
    match probe.check_applies(index, &subject.reference_version()) {
        Ok(()) => eval(),
        Err(range) => Verdict::skipped(index, &probe.checks[index].0.target.to_string(), &range),
    }
}

/// How a verdict's detail begins where a result's is_error was read from the agent's words.
pub const READ_FROM_WORDS: &str = "is_error read from words";

/// Evaluates one check of a loop probe (an exec target is refused when the probe is parsed: a loop
/// probe has no command). `dialect`: the subject's, whose refusals in words count as `is_error`
/// ([`crate::subject::dialect::Dialect::refusal`]; the verdict's detail says so even when it passes).
pub fn evaluate(
    probe: &Probe,
    index: usize,
    view: &View<'_>,
    sb: &Sandbox,
    dialect: Option<&crate::subject::dialect::Dialect>,
) -> Verdict {
    let (c, line, _) = &probe.checks[index];
    let mut fails = Fails::default();
    let text = &c.text;
    // the check's semantic part, when it is a check of wording (see `Verdict::semantic`): a result's
    // is_error when the check asserts it, the result being there; a request's texts have none
    let wording = is_wording(c);
    let mut semantic = semantic_of(c);
    let mut read_from_words: Option<String> = None;
    let mut semantic_failed = || {
        if wording {
            semantic = Semantic::Part(false);
        }
    };
    match &c.target {
        Target::Result { n, is_error, json, .. } => match view.result(*n) {
            None => {
                semantic_failed();
                fails.push(format!("no tool_result answers scripted tool_use {n} in any request"))
            }
            Some(block) => {
                let mut got = block.get("is_error") == Some(&Value::Bool(true));
                if let (false, Some(d), Some(_)) = (got, dialect, is_error) {
                    let tool = view.tool_use_names().into_iter().nth(n - 1).unwrap_or_default();
                    if let Some(p) = d.refusal(&tool, &result_text(&block)) {
                        got = true;
                        read_from_words = Some(format!(
                            "{READ_FROM_WORDS}: {}'s result to {tool} matches its dialect's refusal {p:?}",
                            d.agent
                        ));
                    }
                }
                if let Some(want) = *is_error {
                    if want != got {
                        semantic_failed();
                        let content = result_text(&block);
                        fails.push(format!("expected is_error = {want}, got {got}\ncontent:\n{content}"));
                    }
                }
                let shown = result_text(&block);
                text_assertions(text, crate::transcript::normalise::appended_reminders_off(&shown), sb, &mut fails);
                json_assertions(json, block.get("content"), sb, &mut fails);
            }
        },
        Target::Request { n, .. } => {
            let shape = c.kind.as_deref() == Some(crate::probe::checks::REQUEST_SHAPE);
            request_check((&c.target, shape), *n, text, view, sb, &mut fails)
        }
        Target::Side { select, json } => match side_request(view, &sb.resolve(select)) {
            None => fails.push(format!("no side request's last user message contains {:?}", sb.resolve(select))),
            Some((body, last)) => {
                text_assertions(text, &last, sb, &mut fails);
                json_assertions(json, Some(&body), sb, &mut fails);
            }
        },
        Target::Lsp { trace, json } => {
            // LSP-2, LSP-3: what a fake LSP server received, from its trace; read as the lab reads: a
            // FIFO the subject left in place of the file is an error, not a hang
            let read = |p: std::path::PathBuf| -> Result<String, String> {
                crate::safe_fs::read_capped(&p, crate::safe_fs::MAX_DATA_BYTES)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .map_err(|e| format!("cannot read {trace}: {e}"))
            };
            match sb.inside(trace).and_then(|p| sb.confine(&p, true)).map_err(|e| crate::exit::chain(&e)).and_then(read)
            {
                Err(e) => fails.push(e),
                Ok(t) => {
                    text_assertions(text, &crate::fake_lsp::trace_text(&t), sb, &mut fails);
                    json_assertions(json, Some(&crate::fake_lsp::trace_view(&t)), sb, &mut fails);
                }
            }
        }
        Target::File { path, exists, json } => file_check(path, *exists, json, text, sb, &mut fails),
        Target::Dir { path } => {
            match sb
                .inside(path)
                .and_then(|p| sb.confine(&p, true))
                .map_err(|e| crate::exit::chain(&e))
                .and_then(|p| tree(&p))
            {
                Err(e) => fails.push(format!("dir {path}: {e}")),
                Ok(listing) => text_assertions(text, &listing, sb, &mut fails),
            }
        }
        Target::Exec { n, .. } => fails.push(format!("exec {n}: a loop probe runs no command")),
    }
    let mut v = Verdict::of_check(probe, index, *line, &c.target.to_string(), c.about.as_deref(), fails);
    v.semantic = semantic;
    if let Some(note) = read_from_words {
        v.detail = if v.detail.is_empty() { note } else { format!("{}\n{note}", v.detail) };
    }
    v
}

/// What a check measures before it is evaluated ([`Semantic`]): a wording check's semantic part held
/// until it fails.
pub fn semantic_of(c: &Check) -> Semantic {
    match (&c.target, is_wording(c)) {
        (_, false) => Semantic::Whole,
        (Target::Result { is_error: Some(_), .. }, true) => Semantic::Part(true),
        (_, true) => Semantic::WordingOnly,
    }
}

/// Whether a check is one of Claude Code's wording (its `kind`, else: a result's text assertions, a
/// request check); its `is_error` stays semantic.
pub fn is_wording(c: &Check) -> bool {
    match c.kind.as_deref() {
        // a request's shape is not what happened either
        Some(k) => k == "wording" || k == crate::probe::checks::REQUEST_SHAPE,
        // a result's text assertions: `equals`, `contains`, `not_contains`, `matches`, `json`
        None => match &c.target {
            Target::Request { .. } => true,
            Target::Result { json, .. } => c.text.any() || !json.is_empty(),
            _ => false,
        },
    }
}

/// A run's standing on the semantic checks and on all of them (the conformance table's cell): every
/// check passed; a semantic check (a semantic part of a wording check) or an invariant failed; only
/// wording failed and at least one semantic check was evaluated and held; or only wording failed and
/// the probe has no semantic check to say what happened (an agent that answered with an error where
/// Claude Code read a file fails every text assertion of such a probe: that is no semantic match).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// Every check and invariant passed.
    Pass,
    /// What happened is Claude Code's; some of its texts are not.
    SemanticOnly,
    /// Texts differ and the probe checks nothing else: what happened is not measured.
    WordingOnly,
    /// What happened differs.
    Differs,
}

/// The standing of a run's verdicts (checks and invariants).
pub fn standing(verdicts: &[Verdict]) -> Standing {
    if verdicts.iter().all(|v| v.pass) {
        return Standing::Pass;
    }
    let semantic_failed =
        |v: &Verdict| !v.pass && matches!(v.semantic, Semantic::Invariant | Semantic::Whole | Semantic::Part(false));
    if verdicts.iter().any(semantic_failed) {
        return Standing::Differs;
    }
    let measured = verdicts.iter().any(|v| !v.skipped && matches!(v.semantic, Semantic::Whole | Semantic::Part(_)));
    if measured {
        Standing::SemanticOnly
    } else {
        Standing::WordingOnly
    }
}

/// The first side request whose last user message's text contains `select`: its whole body and that
/// text (its text blocks, joined by newlines).
fn side_request(view: &View<'_>, select: &str) -> Option<(Value, String)> {
    let requests = view.requests();
    view.exchanges.iter().enumerate().filter(|(_, e)| e.kind == stub_messages::ExchangeKind::Side).find_map(|(i, _)| {
        let body = requests.whole(i)?;
        let last =
            body.get("messages")?.as_array()?.iter().rev().find(|m| m.get("role") == Some(&Value::from("user")))?;
        let text = match last.get("content")? {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => {
                blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
            }
            _ => return None,
        };
        text.contains(select).then_some((body, text))
    })
}

/// A request check: `tools[]` as listed, then the text and `json` assertions on the body (or on the
/// definition of its `tool`).
fn request_check(
    (target, shape): (&Target, bool),
    n: usize,
    text: &TextAssertions,
    view: &View<'_>,
    sb: &Sandbox,
    fails: &mut Fails,
) {
    let Target::Request { tools_include, tools_exclude, tools_equal, tool, part, json, .. } = target else { return };
    let whole = view.request_index(n).and_then(|i| view.requests().whole(i));
    let Some(req) = whole.as_ref() else {
        fails.push(format!("main request {n} never arrived"));
        return;
    };
    let tools = || req.get("tools").and_then(Value::as_array).into_iter().flatten();
    let names: Vec<String> =
        tools().filter_map(|t| t.get("name").and_then(Value::as_str)).map(str::to_string).collect();
    for t in tools_include.iter().filter(|t| !names.contains(t)) {
        fails.push(format!("expected tool {t} in tools[], got {names:?}"));
    }
    for t in tools_exclude.iter().filter(|t| names.contains(t)) {
        fails.push(format!("expected tool {t} absent from tools[], got {names:?}"));
    }
    if let Some(order) = tools_equal.as_ref().filter(|order| **order != names) {
        fails.push(format!("expected tools[] = {order:?}, got {names:?}"));
    }
    let looked_at = match (tool, part) {
        (None, Some(member)) => {
            let got = req.get(member);
            if got.is_none() {
                let members: Vec<&String> = req.as_object().map(|o| o.keys().collect()).unwrap_or_default();
                fails.push(format!("request {n} has no member {member:?}, got {members:?}"));
            }
            got
        }
        (None, None) => Some(req),
        (Some(name), _) => {
            let def = tools().find(|t| t.get("name").and_then(Value::as_str) == Some(name));
            if def.is_none() {
                fails.push(format!("no tool {name} in tools[] of request {n}, got {names:?}"));
            }
            def
        }
    };
    if let Some(v) = looked_at {
        // a cache marker is no content: only a check of the request's shape sees where they sit (where
        // Claude Code puts `cache_control` moved at 2.1.237 and back at 2.1.248, with the default model)
        let v = if shape { v.clone() } else { without_cache_markers(v) };
        text_assertions(text, &v.to_string(), sb, fails);
        json_assertions(json, Some(&v), sb, fails);
    }
}

/// A request (or a part of one) without its `cache_control` members, wherever they are.
pub fn without_cache_markers(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, x)| (k.clone(), without_cache_markers(x)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_cache_markers).collect()),
        _ => v.clone(),
    }
}

/// A file check: whether it exists, then (read only when something asserts on it) its text and JSON.
fn file_check(
    f: &str,
    exists: Option<bool>,
    json: &[JsonCheck],
    text: &TextAssertions,
    sb: &Sandbox,
    fails: &mut Fails,
) {
    let p = match find_file(sb, f) {
        Err(e) => return fails.push(e),
        Ok(p) => p,
    };
    let got = p.exists();
    if let Some(want) = exists {
        if want != got {
            fails.push(format!("expected {f} exists = {want}, got {got}"));
        }
    }
    if !text.any() && json.is_empty() {
        return;
    }
    match crate::safe_fs::read_capped(&p, crate::safe_fs::MAX_DATA_BYTES) {
        Ok(bytes) => {
            text_assertions(text, &String::from_utf8_lossy(&bytes), sb, fails);
            if !json.is_empty() {
                let v: Option<Value> = serde_json::from_slice(&bytes).ok();
                json_assertions(json, v.as_ref(), sb, fails);
            }
        }
        Err(e) => fails.push(format!("cannot read {f}: {e}")),
    }
}

/// Files a check's text shows in full up to this many characters; beyond, its size and hash.
pub const SHOWN_FILE_CHARS: usize = crate::transcript::INLINE_RESULT_CHARS;

/// The section of a transcript that keeps what each file a check reads held after the run (each path
/// once, in check order): its text in full up to [`SHOWN_FILE_CHARS`], beyond (or not UTF-8) its size
/// and the SHA-256 of its text normalised by `norm` (the bytes' for a file that is not text); a file that
/// is not there says so. The evidence of a change a file check sees (the TaskCompleted hook's payload):
/// without it a golden had only the verdict.
pub fn files_read(probe: &Probe, sb: &Sandbox, norm: &dyn Fn(&str) -> String) -> Vec<String> {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for (c, _, _) in &probe.checks {
        let Some(f) = c.file() else { continue };
        if seen.contains(&f) {
            continue;
        }
        seen.push(f);
        let named = match find_file(sb, f) {
            Err(e) => {
                out.push(format!("file {f}: {e}"));
                continue;
            }
            Ok(p) => p,
        };
        // a glob's match is named by the pattern alone: the name it found may be made up at random (a
        // file-history entry's hash) and is no behaviour
        let name = f.to_string();
        if !named.exists() {
            out.push(format!("file {name}: absent"));
            continue;
        }
        let log = is_log(f);
        match crate::safe_fs::read_capped(&named, crate::safe_fs::MAX_DATA_BYTES) {
            Err(e) => out.push(format!("file {name}: cannot be read ({e})")),
            Ok(bytes) => match String::from_utf8(bytes).map(|t| {
                let t = epoch_times_off(&t);
                if log {
                    sorted_lines(&t)
                } else {
                    t.into_owned()
                }
            }) {
                Ok(text) if text.chars().count() <= SHOWN_FILE_CHARS => {
                    // the text as it is (the transcript's normalisation comes over it, with the results')
                    out.push(format!("file {name}{}:", if log { " (lines sorted)" } else { "" }));
                    out.push(crate::transcript::indent(&text));
                }
                Ok(_) if log => {
                    // a log's lines hold ids the run made up, numbered in the order they were written
                    // (`<id-N>`), and records whose length moves with the run (a session log's timings,
                    // 214,750 then 214,599 chars on one release): neither its hash nor its size is the
                    // subject's behaviour, so that it is there and long; its checks' verdicts say the rest
                    out.push(format!(
                        "file {name}: over {SHOWN_FILE_CHARS} chars (a log: not shown, its ids numbered and its length set by the run)"
                    ));
                }
                Ok(text) => {
                    let text = norm(&text);
                    let hash = crate::transcript::sha256(text.as_bytes());
                    out.push(format!(
                        "file {name}: {} chars, over {SHOWN_FILE_CHARS}: sha256 {} of its text",
                        text.chars().count(),
                        &hash[..16],
                    ));
                }
                Err(e) => {
                    let hash = crate::transcript::sha256(e.as_bytes());
                    out.push(format!("file {name}: {} bytes, not text: sha256 {}", e.as_bytes().len(), &hash[..16]));
                }
            },
        }
    }
    out
}

/// A file appended to line by line by whatever runs at once (a session log, a hook's log, a service's
/// request log: `.jsonl`, `.log`, `log.txt`): the order of its lines is the order parallel calls ended
/// in, no decision of the subject's, so a transcript shows its lines sorted.
/// A shown file's epoch-millisecond times under a key ending in `Time` (a workflow record's
/// `"startTime":1796441863875`) as `<epoch-ms>`: the clock of the run, in the files a golden shows (the
/// normaliser's `epoch-times` step takes those ending in `At`).
fn epoch_times_off(text: &str) -> std::borrow::Cow<'_, str> {
    static TIME: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"("[A-Za-z]*Time": ?)1\d{12}\b"#).unwrap_or_else(|e| panic!("{e}"))
    });
    TIME.replace_all(text, "${1}<epoch-ms>")
}

fn is_log(path: &str) -> bool {
    path.ends_with(".jsonl") || path.ends_with(".log") || path.ends_with("log.txt")
}

/// The lines of a text sorted (a final newline kept where there was one).
fn sorted_lines(text: &str) -> String {
    let (body, nl) = match text.strip_suffix('\n') {
        Some(b) => (b, "\n"),
        None => (text, ""),
    };
    let mut lines: Vec<&str> = body.split('\n').collect();
    lines.sort_unstable();
    lines.join("\n") + nl
}

/// The tree under `dir` as a dir check sees it: one line per entry below it, its path relative to `dir`
/// in path order, a directory's with a final `/`, a symlink's as `path -> target` (never followed: the
/// walk stays in the sandbox).
fn tree(dir: &std::path::Path) -> Result<String, String> {
    if !dir.is_dir() {
        return Err("not a directory".into());
    }
    let mut lines = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| format!("cannot list {}: {e}", d.display()))?;
        for e in entries {
            let e = e.map_err(|e| format!("cannot list {}: {e}", d.display()))?;
            let path = e.path();
            let rel = path.strip_prefix(dir).unwrap_or(&path).to_string_lossy().into_owned();
            let kind = e.file_type().map_err(|e| format!("{rel}: {e}"))?;
            if kind.is_symlink() {
                let to = std::fs::read_link(&path).map_err(|e| format!("{rel}: {e}"))?;
                lines.push(format!("{rel} -> {}", to.display()));
            } else if kind.is_dir() {
                lines.push(format!("{rel}/"));
                stack.push(path);
            } else {
                lines.push(rel);
            }
        }
    }
    lines.sort();
    Ok(lines.iter().map(|l| format!("{l}\n")).collect())
}

/// Evaluates one check of an exec probe (a target other than exec is refused when the probe is parsed:
/// an exec probe runs no session).
pub fn evaluate_exec(
    probe: &Probe,
    index: usize,
    records: &[crate::subject::exec::ExecRecord],
    sb: &Sandbox,
) -> Verdict {
    let (c, line, _) = &probe.checks[index];
    let mut fails = Fails::default();
    let Target::Exec { n, exit, stderr_equals, stderr_contains, max_duration_ms, max_cpu_ms, max_rss_mib } = &c.target
    else {
        fails.push(format!("{}: an exec probe checks its commands only", c.target));
        return Verdict::of_check(probe, index, *line, &c.target.to_string(), c.about.as_deref(), fails);
    };
    match records.get(n.wrapping_sub(1)) {
        None => fails.push(format!("exec {n} did not run")),
        Some(r) => {
            text_assertions(&c.text, &r.stdout, sb, &mut fails);
            if let Some(want) = *exit {
                if r.measured.exit != Some(want) {
                    fails.push(format!(
                        "expected exit {want}, got {:?} (signal {:?})",
                        r.measured.exit, r.measured.signal
                    ));
                }
            }
            if let Some(want) = stderr_equals {
                if &r.stderr != want {
                    fails.push_text(equals_message("stderr", want, &r.stderr), "stderr_equals", want, &r.stderr);
                }
            }
            for s in stderr_contains {
                if !r.stderr.contains(s.as_str()) {
                    let msg = format!("expected stderr to contain {s:?}\nactual:\n{}", shown(&r.stderr));
                    fails.push_text(msg, "stderr_contains", s, &r.stderr);
                }
            }
            if let Some(max) = *max_duration_ms {
                if r.timed_out || r.measured.duration_ms > max {
                    fails.push(format!(
                        "expected at most {max} ms, took {} ms (timed out: {})",
                        r.measured.duration_ms, r.timed_out
                    ));
                }
            }
            if let Some(max) = *max_cpu_ms {
                if r.timed_out || r.measured.cpu_ms > max {
                    fails.push(format!(
                        "expected at most {max} ms of CPU, spent {} ms (timed out: {})",
                        r.measured.cpu_ms, r.timed_out
                    ));
                }
            }
            if let Some(max) = *max_rss_mib {
                if r.measured.max_rss_kib > max * 1024 {
                    fails
                        .push(format!("expected at most {max} MiB resident, peaked at {} KiB", r.measured.max_rss_kib));
                }
            }
        }
    }
    Verdict::of_check(probe, index, *line, &c.target.to_string(), c.about.as_deref(), fails)
}

/// The invariant of every exec probe: each command ended by itself within its deadline.
pub fn exec_invariant(probe: &Probe, records: &[crate::subject::exec::ExecRecord]) -> Verdict {
    let mut late: Vec<String> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.timed_out)
        .map(|(i, r)| format!("exec {} {:?} was killed at its deadline", i + 1, r.argv))
        .collect();
    let ran = records.len() == probe.execs.len();
    if !ran {
        let (n, secs) = (probe.execs.len() - records.len(), probe.deadline_secs);
        late.push(format!("{n} command(s) never started: the probe's deadline of {secs}s had passed"));
    }
    Verdict {
        name: "invariant: every command ended within its deadline".into(),
        pass: late.is_empty() && ran,
        detail: late.join("\n"),
        skipped: false,
        compared: Vec::new(),
        semantic: Semantic::Invariant,
    }
}

/// The invariants of every run.
pub fn invariants(run: &RunOutput, view: &View<'_>) -> Vec<Verdict> {
    let mut out = Vec::new();
    let violations: Vec<String> = run
        .exchanges
        .iter()
        .filter_map(|e| {
            e.violation
                .as_ref()
                .map(|v| format!("exchange {} ({} {}): {} — {}", e.seq, e.method, e.path, v.kind, v.message))
        })
        .collect();
    let pairing: Vec<&String> = violations.iter().filter(|v| v.contains("tool_pairing")).collect();
    out.push(Verdict {
        name: "invariant: every tool_use answered by exactly one tool_result".into(),
        pass: pairing.is_empty(),
        detail: pairing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n"),
        skipped: false,
        compared: Vec::new(),
        semantic: Semantic::Invariant,
    });
    out.push(Verdict {
        name: "invariant: no request refused by the stub".into(),
        pass: violations.is_empty(),
        detail: violations.join("\n"),
        skipped: false,
        compared: Vec::new(),
        semantic: Semantic::Invariant,
    });
    let mut unserved: Vec<String> = run
        .progress
        .iter()
        .filter(|(_, served, total)| served < total)
        .map(|(n, s, t)| format!("conversation {n}: {s} of {t} turns served"))
        .collect();
    if run.exchanges.is_empty() && !unserved.is_empty() {
        unserved.insert(0, format!("{} never called the stub (no request came)", run.subject));
    }
    out.push(Verdict {
        name: "invariant: every scripted turn served".into(),
        pass: unserved.is_empty(),
        detail: unserved.join("\n"),
        skipped: false,
        compared: Vec::new(),
        semantic: Semantic::Invariant,
    });
    let ended = matches!(run.end, crate::run::RunEnd::Finished) && run.within_deadline;
    out.push(Verdict {
        name: "invariant: the run ended by the model within its deadline".into(),
        pass: ended,
        detail: if ended { String::new() } else { format!("the run ended with {:?}", run.end) },
        skipped: false,
        compared: Vec::new(),
        semantic: Semantic::Invariant,
    });
    // only where a limit was reached: a run within them keeps the transcript it always had
    if !run.limits_reached.is_empty() {
        out.push(Verdict {
            name: "invariant: the subject stayed within its limits".into(),
            pass: false,
            detail: run.limits_reached.join("\n"),
            skipped: false,
            compared: Vec::new(),
            semantic: Semantic::Invariant,
        });
    }
    let _ = view;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_s_clock_times_are_taken_off_and_nothing_else() {
        let t = r#"{"startTime":1796441863875,"endTime": 1796441863999,"count":1796441863875,"startedAt":1}"#;
        assert_eq!(
            super::epoch_times_off(t),
            r#"{"startTime":<epoch-ms>,"endTime": <epoch-ms>,"count":1796441863875,"startedAt":1}"#
        );
    }

    #[test]
    fn an_exec_check_bounds_the_command_s_cpu_time_not_the_host_s_wall_time() {
        use crate::subject::exec::{ExecRecord, Measured};
        let text = "id = \"p.cpu\"\nclaims = [\"GREP-6\"]\nsubjects = [\"builtin\"]\nabout = \"a\"\n\n[[exec]]\nargv = [\"true\"]\n\n[[check]]\nexec = 1\nmax_cpu_ms = 3000\n";
        let probe = crate::probe::parse(std::path::Path::new("p.toml"), text).expect("parses");
        let fixtures = tempfile::tempdir().expect("tempdir");
        let sb = Sandbox::create(&probe, fixtures.path()).expect("sandbox");
        let record = |duration_ms, cpu_ms| ExecRecord {
            argv: vec!["true".into()],
            measured: Measured { exit: Some(0), signal: None, duration_ms, max_rss_kib: 1024, cpu_ms },
            timed_out: false,
            stdout: String::new(),
            stderr: String::new(),
        };
        // a slow start on a busy host (9 s of wall, 40 ms of CPU) holds; 3,001 ms of CPU does not
        assert!(evaluate_exec(&probe, 0, &[record(9_000, 40)], &sb).pass);
        let v = evaluate_exec(&probe, 0, &[record(3_100, 3_001)], &sb);
        assert!(!v.pass && v.detail.contains("expected at most 3000 ms of CPU, spent 3001 ms"), "{}", v.detail);
    }

    #[test]
    fn equals_fails_with_a_unified_diff_that_shows_a_missing_final_newline_too() {
        let m = equals_message("text", "a\nb\nc\n", "a\nB\nc\n");
        assert!(m.contains("--- expected\n+++ actual\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"), "{m}");
        let m = equals_message("text", "a\n", "a");
        assert!(m.ends_with("@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n"), "{m}");
    }

    #[test]
    fn long_texts_and_diffs_are_cut_with_the_cut_stated() {
        let long = "x".repeat(2 * SHOWN_CHARS + 10);
        assert!(shown(&long).contains(&format!("[… 10 of {} chars not shown (the middle)", long.len())));
        assert_eq!(shown("short"), "short");
        let (a, b): (String, String) = (0..200).map(|i| (format!("{i}\n"), format!("{i}!\n"))).unzip();
        let d = unified_diff(&a, &b);
        assert_eq!(d.lines().count(), SHOWN_DIFF_LINES + 1, "{d}");
        assert!(
            d.ends_with("[… 323 of 403 diff lines not shown; --json has both texts as `expected` and `actual` …]\n"),
            "{d}"
        );
    }
}
