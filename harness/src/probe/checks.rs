//! The `[[check]]` table: as written ([`RawCheck`]: every key of every target, read strictly by serde,
//! its keys the doc's table) and typed ([`Check`]: one [`Target`] holding the assertions only it takes,
//! beside the text assertions every target takes). Which assertion fits which target is said once, in
//! [`TARGETS`]: [`RawCheck::typed`] refuses a key its target does not take, at the key.
//!
//! A new kind of check is a row of [`TARGETS`], its keys in [`RawCheck`], a variant of [`Target`] built in
//! [`RawCheck::typed`], its evaluation in `crate::check`, and its rows in `docs/probe-format.md`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One or several strings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// One.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl OneOrMany {
    /// As a list.
    pub fn items(&self) -> Vec<&str> {
        match self {
            OneOrMany::One(s) => vec![s.as_str()],
            OneOrMany::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }

    /// Empty: `""` or `[]` (it asserts nothing).
    fn is_empty(&self) -> bool {
        match self {
            OneOrMany::One(s) => s.is_empty(),
            OneOrMany::Many(v) => v.is_empty(),
        }
    }
}

/// A JSON-pointer check on a result's content or a file's JSON.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JsonCheck {
    /// RFC 6901 pointer (`/0/type`, `/blocks`).
    pub pointer: String,
    /// The value expected there.
    #[serde(default)]
    pub equals: Option<Value>,
    /// The pointer must resolve (true) or not (false).
    #[serde(default)]
    pub exists: Option<bool>,
}

/// The tool_use whose tool_result a check looks at: its number (the N-th scripted tool_use of the main
/// conversation, 1-based, across turns) or the `id` the probe gave it (`tool_use = [{ id = "edit", … }]`,
/// then `result = "edit"`: inserting a turn renumbers nothing).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum ResultRef {
    /// `result = 2`.
    Number(usize),
    /// `result = "edit"`.
    Id(String),
}

impl std::fmt::Display for ResultRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResultRef::Number(n) => write!(f, "{n}"),
            ResultRef::Id(id) => write!(f, "{id}"),
        }
    }
}

/// A `[[check]]` as written: every key any target takes (each documented in `docs/probe-format.md`);
/// [`RawCheck::typed`] gives each to its target.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCheck {
    /// The tool_result answering a scripted tool_use of the main conversation: `N` (1-based, across
    /// turns) or the tool_use's `id`.
    #[serde(default)]
    pub result: Option<ResultRef>,
    /// The N-th main-conversation request (1-based).
    #[serde(default)]
    pub request: Option<usize>,
    /// The first side request (one the subject makes besides the main conversation: WebFetch's reading
    /// of a page, a title) whose last user message contains this text: text assertions apply to that
    /// message's text, `json` pointers to the request's body.
    #[serde(default)]
    pub side: Option<String>,
    /// A file in the sandbox after the run (relative to the cwd, or `{home}/…`; `*` globs).
    #[serde(default)]
    pub file: Option<String>,
    /// A fake LSP server's trace file (`probelab fake-lsp --trace`, relative to the cwd or `{sandbox}/…`):
    /// text assertions apply to one line per received message (`METHOD PARAMS`), `json` pointers to
    /// `{"methods": [...], "starts": N, "<method>": <params of its first message>}`.
    #[serde(default)]
    pub lsp: Option<String>,
    /// The N-th `[[exec]]` command (1-based): text assertions apply to its stdout.
    #[serde(default)]
    pub exec: Option<usize>,
    /// A directory in the sandbox after the run (relative to the cwd, or `{home}/…`): text assertions
    /// apply to its tree, one line per entry below it in path order (`a/`, `a/b.txt`, `l -> target`).
    #[serde(default)]
    pub dir: Option<String>,
    /// exec: exit status.
    #[serde(default)]
    pub exit: Option<i32>,
    /// exec: stderr equals.
    #[serde(default)]
    pub stderr_equals: Option<String>,
    /// exec: stderr contains each.
    #[serde(default)]
    pub stderr_contains: Option<OneOrMany>,
    /// exec: wall time at most (a generous bound, never a benchmark; it depends on the host's load:
    /// prefer `max_cpu_ms`).
    #[serde(default)]
    pub max_duration_ms: Option<u64>,
    /// exec: CPU time (user + system) at most: what the command spent, whatever the host's load.
    #[serde(default)]
    pub max_cpu_ms: Option<u64>,
    /// exec: peak resident memory at most.
    #[serde(default)]
    pub max_rss_mib: Option<u64>,
    /// Why this check (shown on failure).
    #[serde(default)]
    pub about: Option<String>,
    /// The Claude Code versions the check holds for, a semver range (`">=2.1.235, <2.1.296"`): on other
    /// versions it is skipped, so one probe records that a behaviour changed at a version. A built-in
    /// subject is checked as the release it imitates (`SubjectId::reference_version`: `builtin@V` as V,
    /// a bare `builtin` as `profile::NEWEST`), a command subject as the lab's `REFERENCE_VERSION`.
    #[serde(default)]
    pub versions: Option<String>,
    /// What the check asserts, for subjects other than Claude Code (the conformance table): `semantic`
    /// (what happened: files, is_error, the content a Read returns, what a Grep finds) or `wording`
    /// (Claude Code's exact texts). Default: file, exec and LSP checks and a result's `is_error` are
    /// semantic; a result's text assertions and request checks are wording.
    #[serde(default)]
    pub kind: Option<String>,
    /// result: is_error.
    #[serde(default)]
    pub is_error: Option<bool>,
    /// Whole text equals.
    #[serde(default)]
    pub equals: Option<String>,
    /// Text contains each.
    #[serde(default)]
    pub contains: Option<OneOrMany>,
    /// Text contains none.
    #[serde(default)]
    pub not_contains: Option<OneOrMany>,
    /// Text matches this regex.
    #[serde(default)]
    pub matches: Option<String>,
    /// file: exists or not.
    #[serde(default)]
    pub exists: Option<bool>,
    /// request: these tools are in `tools[]`.
    #[serde(default)]
    pub tools_include: Vec<String>,
    /// request: these tools are not in `tools[]`.
    #[serde(default)]
    pub tools_exclude: Vec<String>,
    /// request: the definition of this tool in `tools[]` is what `json` pointers and text assertions
    /// apply to (`/input_schema/required`), wherever the tool sits in the pool.
    #[serde(default)]
    pub tool: Option<String>,
    /// request: this top-level member of the body (`messages`, `system`) is what `json` pointers and
    /// text assertions apply to — a text the request carries in one place and not another.
    #[serde(default)]
    pub part: Option<String>,
    /// request: `tools[]` names in exactly this order.
    #[serde(default)]
    pub tools_equal: Option<Vec<String>>,
    /// JSON pointer checks (result content / file JSON / request body / LSP trace).
    #[serde(default)]
    pub json: Vec<JsonCheck>,
}

/// A kind of target: the key that names it, how a probe writes it, and the assertion keys it takes
/// besides [`TEXT_KEYS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetKind {
    /// The key (`result`).
    pub key: &'static str,
    /// As a probe writes it (`result = N`), for the error of a check without one.
    pub form: &'static str,
    /// The assertion keys only targets of this kind take (`is_error`).
    pub takes: &'static [&'static str],
}

/// Every kind of target, with the assertions it takes: the one statement of which assertion fits which
/// target ([`RawCheck::typed`] reads it; a test holds it to [`RawCheck`]'s keys).
pub const TARGETS: &[TargetKind] = &[
    TargetKind { key: "result", form: "result = N", takes: &["is_error", "json"] },
    TargetKind {
        key: "request",
        form: "request = N",
        takes: &["tools_include", "tools_exclude", "tools_equal", "tool", "part", "json"],
    },
    TargetKind { key: "side", form: "side = \"text\"", takes: &["json"] },
    TargetKind { key: "file", form: "file = \"path\"", takes: &["exists", "json"] },
    TargetKind {
        key: "exec",
        form: "exec = N",
        takes: &["exit", "stderr_equals", "stderr_contains", "max_duration_ms", "max_cpu_ms", "max_rss_mib"],
    },
    TargetKind { key: "lsp", form: "lsp = \"trace\"", takes: &["json"] },
    TargetKind { key: "dir", form: "dir = \"path\"", takes: &[] },
];

/// The text assertions every target takes, on the text it shows (a result's text, a request's body, a
/// file's content, an LSP trace's lines, a command's stdout).
pub const TEXT_KEYS: &[&str] = &["equals", "contains", "not_contains", "matches"];

/// The keys that assert nothing: what a check is about, the versions it holds for, the kind of fact it
/// asserts (`semantic` or `wording`).
pub const NOTE_KEYS: &[&str] = &["about", "versions", "kind"];

/// The list keys that read as absent when empty (serde's default): where a check that asserts nothing
/// may have one.
pub const EMPTY_LIST_KEYS: &[&str] = &["json", "tools_include", "tools_exclude"];

/// Every key a check may write, as [`TARGETS`], [`TEXT_KEYS`] and [`NOTE_KEYS`] name them (`json`, which
/// several targets take, more than once): exactly [`RawCheck`]'s keys (a test in `keys` holds them so).
pub fn all_keys() -> impl Iterator<Item = &'static str> {
    let targets = TARGETS.iter().flat_map(|t| std::iter::once(t.key).chain(t.takes.iter().copied()));
    let mut seen = Vec::new();
    targets.chain(TEXT_KEYS.iter().copied()).chain(NOTE_KEYS.iter().copied()).filter(move |k| {
        let new = !seen.contains(k);
        seen.push(*k);
        new
    })
}

/// The text assertions of a check, placeholders unresolved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TextAssertions {
    /// The whole text equals.
    pub equals: Option<String>,
    /// The text contains each.
    pub contains: Vec<String>,
    /// The text contains none.
    pub not_contains: Vec<String>,
    /// The text matches this regex (`\{cwd}`, the former spelling, already read as `{cwd}`).
    pub matches: Option<String>,
}

impl TextAssertions {
    /// Any?
    pub fn any(&self) -> bool {
        self.equals.is_some() || !self.contains.is_empty() || !self.not_contains.is_empty() || self.matches.is_some()
    }
}

/// What a check looks at, with the assertions only it takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// `result = N | "ID"`: the tool_result answering a scripted tool_use of the main conversation.
    Result {
        /// As written (the verdict names it so).
        written: ResultRef,
        /// The tool_use's number (1-based, across the main conversation's turns).
        n: usize,
        /// Its `is_error`.
        is_error: Option<bool>,
        /// Pointers into its content.
        json: Vec<JsonCheck>,
    },
    /// `request = N`: the N-th main-conversation request (1-based).
    Request {
        /// N.
        n: usize,
        /// These tools are in `tools[]`.
        tools_include: Vec<String>,
        /// These tools are not.
        tools_exclude: Vec<String>,
        /// The names of `tools[]`, in this order.
        tools_equal: Option<Vec<String>>,
        /// The text and `json` assertions apply to this tool's definition, not the whole body.
        tool: Option<String>,
        /// Or to this top-level member of the body.
        part: Option<String>,
        /// Pointers into the body (or the tool's definition).
        json: Vec<JsonCheck>,
    },
    /// `side = "text"`: the first side request whose last user message contains the text.
    Side {
        /// The text that picks it (placeholders resolved at the run).
        select: String,
        /// Pointers into its body.
        json: Vec<JsonCheck>,
    },
    /// `file = "path"`: a file in the sandbox after the run.
    File {
        /// As written (relative to the cwd, `{home}/…`; `*` globs).
        path: String,
        /// It exists (true) or not.
        exists: Option<bool>,
        /// Pointers into its content read as JSON.
        json: Vec<JsonCheck>,
    },
    /// `exec = N`: the N-th `[[exec]]` command (its stdout is the text).
    Exec {
        /// N (1-based).
        n: usize,
        /// Exit status.
        exit: Option<i32>,
        /// Stderr equals.
        stderr_equals: Option<String>,
        /// Stderr contains each.
        stderr_contains: Vec<String>,
        /// Wall time at most.
        max_duration_ms: Option<u64>,
        /// CPU time at most.
        max_cpu_ms: Option<u64>,
        /// Peak resident memory at most.
        max_rss_mib: Option<u64>,
    },
    /// `lsp = "trace"`: what a fake LSP server received.
    Lsp {
        /// The trace file (relative to the cwd, or `{sandbox}/…`).
        trace: String,
        /// Pointers into the trace's view.
        json: Vec<JsonCheck>,
    },
    /// `dir = "path"`: the tree under a directory of the sandbox after the run (its text: one line per
    /// entry).
    Dir {
        /// As written (relative to the cwd, or `{home}/…`).
        path: String,
    },
}

impl std::fmt::Display for Target {
    /// As the verdict names it: `result 2`, `result edit`, `request 1`, `file f.txt`, `exec 1`, `lsp t`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Result { written, .. } => write!(f, "result {written}"),
            Target::Request { n, .. } => write!(f, "request {n}"),
            Target::Side { select, .. } => write!(f, "side request with {select:?}"),
            Target::File { path, .. } => write!(f, "file {path}"),
            Target::Exec { n, .. } => write!(f, "exec {n}"),
            Target::Lsp { trace, .. } => write!(f, "lsp {trace}"),
            Target::Dir { path } => write!(f, "dir {path}"),
        }
    }
}

/// A typed `[[check]]`: its target and the assertions on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// What it looks at, with the assertions only that target takes.
    pub target: Target,
    /// The text assertions on the text the target shows.
    pub text: TextAssertions,
    /// Why this check (shown on failure).
    pub about: Option<String>,
    /// The Claude Code versions the check holds for (a semver range, validated).
    pub versions: Option<String>,
    /// `semantic` or `wording` as written (validated); none: by its target (`crate::check::is_wording`).
    pub kind: Option<String>,
}

impl Check {
    /// The `is_error` it asserts, if it is a result check that asserts one.
    pub fn is_error(&self) -> Option<bool> {
        match &self.target {
            Target::Result { is_error, .. } => *is_error,
            _ => None,
        }
    }

    /// The file it looks at, if its target is a file.
    pub fn file(&self) -> Option<&str> {
        match &self.target {
            Target::File { path, .. } => Some(path),
            _ => None,
        }
    }
}

/// The kinds of check: `semantic` (what happened), `wording` (Claude Code's exact texts), and
/// [`REQUEST_SHAPE`].
pub const CHECK_KINDS: &[&str] = &["semantic", "wording", REQUEST_SHAPE];

/// The kind of a request check that reads the request's shape — where the cache markers sit, the
/// reminders, the system blocks, how the messages are laid out — not what a tool did: it sees the
/// request whole (`cache_control` too), and its failure is a request-shape change, never a claim's
/// behaviour (the claims it cites keep their verdict).
pub const REQUEST_SHAPE: &str = "request-shape";

/// What a check may name in the probe's script: its main conversation's turns and tool_uses, its
/// commands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Names<'a> {
    /// Main-conversation turns (request N is the one the N-th turn answers).
    pub main_turns: usize,
    /// The ids given to the main conversation's tool_uses, in order (`None`: not given).
    pub main_ids: Vec<Option<&'a str>>,
    /// `[[exec]]` commands.
    pub execs: usize,
}

/// Why a `[[check]]` cannot be typed: the key to blame (none: the table's header), what, how to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckError {
    /// The key to place the error at (none: the `[[check]]` header).
    pub key: Option<&'static str>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
    /// The check asserts nothing: an empty list key (`json = []`) is to blame, where written.
    pub asserts_nothing: bool,
}

impl CheckError {
    fn at(key: Option<&'static str>, message: String, hint: Option<String>) -> CheckError {
        CheckError { key, message, hint, asserts_nothing: false }
    }
}

impl RawCheck {
    /// The keys this check writes, in declaration order (an empty list of [`EMPTY_LIST_KEYS`] reads as
    /// absent: it is serde's default).
    pub fn written(&self) -> Vec<&'static str> {
        let Ok(Value::Object(v)) = serde_json::to_value(self) else { return Vec::new() };
        let present = |k: &&str| match v.get(*k) {
            None | Some(Value::Null) => false,
            Some(Value::Array(a)) => !(a.is_empty() && EMPTY_LIST_KEYS.contains(k)),
            Some(_) => true,
        };
        all_keys().filter(present).collect()
    }

    /// The paths it names (its target's), where placeholders must be defined ones.
    pub fn paths(&self) -> Vec<&str> {
        [&self.file, &self.lsp, &self.dir].into_iter().flatten().map(String::as_str).collect()
    }

    /// The texts it expects (placeholders resolved in them at the run).
    pub fn expected_texts(&self) -> Vec<&str> {
        let mut texts: Vec<&str> =
            [&self.equals, &self.matches, &self.stderr_equals].into_iter().flatten().map(String::as_str).collect();
        for many in [&self.contains, &self.not_contains, &self.stderr_contains].into_iter().flatten() {
            texts.extend(many.items());
        }
        texts
    }

    /// The check typed: exactly one target, every other key one that target takes ([`TARGETS`]), the
    /// target within the script (`names`), a valid `versions` range and `matches` regex, and at least one
    /// assertion.
    pub fn typed(&self, names: &Names<'_>) -> Result<Check, CheckError> {
        let written = self.written();
        let kinds: Vec<&TargetKind> = TARGETS.iter().filter(|t| written.contains(&t.key)).collect();
        let [kind] = kinds[..] else {
            let forms: Vec<&str> = TARGETS.iter().map(|t| t.form).collect();
            let (last, rest) = forms.split_last().map(|(l, r)| (*l, r.join(", "))).unwrap_or_default();
            return Err(CheckError::at(None, format!("a check needs exactly one target: {rest} or {last}"), None));
        };
        for key in &written {
            let fits =
                key == &kind.key || kind.takes.contains(key) || TEXT_KEYS.contains(key) || NOTE_KEYS.contains(key);
            if !fits {
                return Err(misfit(key, kind));
            }
        }
        if names.execs > 0 && kind.key != "exec" {
            let hint = "an exec probe runs commands: its checks say exec = N (a command's stdout, exit, stderr)";
            return Err(CheckError::at(None, format!("a {} check in an exec probe", kind.key), Some(hint.into())));
        }
        let target = self.target(names)?;
        if let Some(v) = &self.versions {
            if let Err(e) = semver::VersionReq::parse(v) {
                let hint = "a semver range, e.g. \">=2.1.235, <2.1.296\"";
                let msg = format!("versions {v:?} is not a version range: {e}");
                return Err(CheckError::at(None, msg, Some(hint.into())));
            }
        }
        if let Some(k) = self.kind.as_ref().filter(|k| !CHECK_KINDS.contains(&k.as_str())) {
            let msg = format!("kind {k:?} is not a check kind");
            return Err(CheckError::at(None, msg, Some("\"semantic\", \"wording\" or \"request-shape\"".into())));
        }
        if self.kind.as_deref() == Some(REQUEST_SHAPE) && !matches!(target, Target::Request { .. }) {
            let msg = "kind \"request-shape\" is a check of a request (`request = N`)".to_string();
            return Err(CheckError::at(None, msg, None));
        }
        let matches = self.matches.as_deref().map(super::placeholders::old_spelling_read);
        if let Some(re) = &matches {
            if let Err(e) = regex::Regex::new(&super::placeholders::placeholders_as_literals(re, "p")) {
                return Err(CheckError::at(Some("matches"), format!("matches is not a valid regex: {e}"), None));
            }
        }
        self.asserts_something(&written, kind)?;
        let items = |v: &Option<OneOrMany>| -> Vec<String> {
            v.iter().flat_map(OneOrMany::items).map(str::to_string).collect()
        };
        let text = TextAssertions {
            equals: self.equals.clone(),
            contains: items(&self.contains),
            not_contains: items(&self.not_contains),
            matches,
        };
        let (about, versions, kind) = (self.about.clone(), self.versions.clone(), self.kind.clone());
        Ok(Check { target, text, about, versions, kind })
    }

    /// Its target, within the script's numbers (the keys are known to fit).
    fn target(&self, names: &Names<'_>) -> Result<Target, CheckError> {
        let json = self.json.clone();
        if let Some(written) = &self.result {
            let tool_uses = names.main_ids.len();
            let n = match written {
                ResultRef::Number(n) if *n == 0 || *n > tool_uses => {
                    return Err(CheckError::at(
                        None,
                        format!(
                            "check names result {n}, but the main conversation scripts {tool_uses} tool_use block(s)"
                        ),
                        Some(
                            "results are numbered from 1 in script order, across turns (or named: result = \"ID\")"
                                .into(),
                        ),
                    ));
                }
                ResultRef::Number(n) => *n,
                ResultRef::Id(id) => match names.main_ids.iter().position(|i| *i == Some(id.as_str())) {
                    Some(k) => k + 1,
                    None => {
                        let named: Vec<&str> = names.main_ids.iter().flatten().copied().collect();
                        return Err(CheckError::at(
                            None,
                            format!("check names result {id:?}, but no tool_use of the main conversation has that id"),
                            Some(format!(
                                "name one with tool_use = [{{ id = {id:?}, name = …, input = … }}] (ids given: {named:?})"
                            )),
                        ));
                    }
                },
            };
            return Ok(Target::Result { written: written.clone(), n, is_error: self.is_error, json });
        }
        if let Some(n) = self.request {
            let main_turns = names.main_turns;
            if n == 0 || n > main_turns {
                return Err(CheckError::at(
                    None,
                    format!("check names request {n}, but the main conversation has {main_turns} turn(s)"),
                    Some("request N is the request the N-th [[turn]] answers".into()),
                ));
            }
            if self.tool.is_some() && self.part.is_some() {
                let hint = "tool = \"NAME\" looks at one tool's definition, part = \"messages\" at one member of the body: one of them";
                return Err(CheckError::at(
                    Some("part"),
                    "a request check takes tool or part, not both".into(),
                    Some(hint.into()),
                ));
            }
            return Ok(Target::Request {
                n,
                tools_include: self.tools_include.clone(),
                tools_exclude: self.tools_exclude.clone(),
                tools_equal: self.tools_equal.clone(),
                tool: self.tool.clone(),
                part: self.part.clone(),
                json,
            });
        }
        if let Some(select) = &self.side {
            if select.is_empty() {
                let hint = "a text of the one side request meant, e.g. the prompt a WebFetch call gave";
                return Err(CheckError::at(
                    Some("side"),
                    "side = \"\" picks every side request".into(),
                    Some(hint.into()),
                ));
            }
            return Ok(Target::Side { select: select.clone(), json });
        }
        if let Some(path) = &self.file {
            return Ok(Target::File { path: path.clone(), exists: self.exists, json });
        }
        if let Some(trace) = &self.lsp {
            return Ok(Target::Lsp { trace: trace.clone(), json });
        }
        if let Some(path) = &self.dir {
            return Ok(Target::Dir { path: path.clone() });
        }
        let n = self.exec.unwrap_or(0);
        if n == 0 || n > names.execs {
            let msg = format!("check names exec {n}, but the probe has {} [[exec]] command(s)", names.execs);
            return Err(CheckError::at(None, msg, None));
        }
        Ok(Target::Exec {
            n,
            exit: self.exit,
            stderr_equals: self.stderr_equals.clone(),
            stderr_contains: self.stderr_contains.iter().flat_map(OneOrMany::items).map(str::to_string).collect(),
            max_duration_ms: self.max_duration_ms,
            max_cpu_ms: self.max_cpu_ms,
            max_rss_mib: self.max_rss_mib,
        })
    }

    /// An error unless the check asserts something: a target alone, or assertions that are empty
    /// (`contains = []`, `json = []`, a json check without `equals` or `exists`), assert nothing.
    fn asserts_something(&self, written: &[&'static str], kind: &TargetKind) -> Result<(), CheckError> {
        let hint = Some(assertions_hint());
        for (key, v) in [
            ("contains", &self.contains),
            ("not_contains", &self.not_contains),
            ("stderr_contains", &self.stderr_contains),
        ] {
            if v.as_ref().is_some_and(OneOrMany::is_empty) {
                return Err(CheckError::at(Some(key), format!("`{key}` is empty: it asserts nothing"), hint));
            }
        }
        if let Some(j) = self.json.iter().find(|j| j.equals.is_none() && j.exists.is_none()) {
            let msg = format!("json check {:?} has neither equals nor exists: it asserts nothing", j.pointer);
            return Err(CheckError::at(Some("json"), msg, hint));
        }
        if written.iter().any(|k| *k != kind.key && !NOTE_KEYS.contains(k)) {
            return Ok(());
        }
        let message = "the check names its target but asserts nothing about it".to_string();
        Err(CheckError { key: None, message, hint, asserts_nothing: true })
    }
}

/// The error of `key` on a target of `kind` that does not take it.
fn misfit(key: &'static str, kind: &TargetKind) -> CheckError {
    let owners: Vec<&str> = TARGETS.iter().filter(|t| t.takes.contains(&key)).map(|t| t.key).collect();
    let owners = match owners.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => "other".into(),
    };
    let mut takes: Vec<&str> = kind.takes.to_vec();
    takes.extend(TEXT_KEYS);
    let hint = format!("a {} check takes {}", kind.key, takes.join(", "));
    CheckError::at(Some(key), format!("`{key}` applies to {owners} checks only"), Some(hint))
}

/// What a check can assert, for the error of a check that asserts nothing: the text assertions, then
/// each target's own.
fn assertions_hint() -> String {
    let own: Vec<String> = TARGETS
        .iter()
        .filter(|t| t.takes.iter().any(|k| *k != "json"))
        .map(|t| {
            format!("{} ({})", t.takes.iter().filter(|k| **k != "json").copied().collect::<Vec<_>>().join(" / "), t.key)
        })
        .collect();
    format!("a check asserts with {}, json, {}", TEXT_KEYS.join(", "), own.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(toml_text: &str) -> RawCheck {
        toml::from_str(toml_text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_key_another_target_takes_is_refused_naming_its_targets() {
        let names = Names { main_turns: 2, main_ids: vec![None], execs: 0 };
        let e = raw("result = 1\nexists = true").typed(&names).err();
        let e = e.unwrap_or_else(|| panic!("typed"));
        assert_eq!((e.key, e.message.as_str()), (Some("exists"), "`exists` applies to file checks only"));
        assert_eq!(
            e.hint.as_deref(),
            Some("a result check takes is_error, json, equals, contains, not_contains, matches")
        );
        let e =
            raw("exec = 1\njson = [{ pointer = \"/a\", exists = true }]").typed(&Names { execs: 1, ..names.clone() });
        let e = e.err().unwrap_or_else(|| panic!("typed"));
        assert_eq!(e.message, "`json` applies to result, request, side, file and lsp checks only");
        let e = raw("file = \"f\"\ncontains = \"x\"").typed(&Names { execs: 1, ..names.clone() });
        assert_eq!(e.err().map(|e| e.message), Some("a file check in an exec probe".to_string()));
        let c = raw("request = 2\ntool = \"Read\"\nequals = \"x\"").typed(&names).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(c.target.to_string(), "request 2");
    }
}
