//! Normalisation: an ordered list of named steps that replace what varies between runs and machines —
//! never what the subject decided. Each step is pinned by an original → expected test.

use regex::Regex;
use std::borrow::Cow;
use std::path::Path;

/// The places of one run.
#[derive(Debug, Clone)]
pub struct Places<'a> {
    /// Sandbox root.
    pub root: &'a Path,
    /// cwd.
    pub cwd: &'a Path,
    /// HOME.
    pub home: &'a Path,
    /// The run's date, `YYYY-MM-DD` (empty: no date step).
    pub today: String,
    /// The subject (`builtin`, `claude-code@2.1.235`): ids one subject makes up at random and another
    /// derives from its input are normalised on the first only (`notebook-cell-ids`).
    pub subject: &'a crate::subject::id::SubjectId,
    /// The base URL of the probe's web service (`{web}`, [`crate::run::RunOutput::web`]): `<web>`.
    pub web: Option<&'a str>,
}

/// One step: a name and a text transformation (the text itself, borrowed, where the step changes
/// nothing: most steps find nothing in most texts, and a golden render normalises every text).
pub struct Step {
    /// Name (for docs and failures).
    pub name: &'static str,
    apply: Apply,
}

/// A step's transformation: the text, or a changed copy of it.
type Apply = Box<dyn for<'s> Fn(&'s str) -> Cow<'s, str> + Send + Sync>;

/// `s` with every `from` replaced by `to` (left to right, not overlapping, as `str::replace`),
/// borrowed when there is none. memchr's searcher: `str`'s generic one is compiled with the calling
/// crate's (debug) settings, and this runs on every text of every transcript.
fn replace<'s>(s: &'s str, from: &str, to: &str) -> Cow<'s, str> {
    if from.is_empty() {
        return Cow::Borrowed(s);
    }
    let mut hits = memchr::memmem::find_iter(s.as_bytes(), from.as_bytes()).peekable();
    if hits.peek().is_none() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for at in hits {
        // find_iter reports non-overlapping matches; both ends are char boundaries (`from` is a str)
        out.push_str(&s[last..at]);
        out.push_str(to);
        last = at + from.len();
    }
    out.push_str(&s[last..]);
    Cow::Owned(out)
}

/// The steps of one run, made once ([`steps`]) and applied to each of its texts.
#[derive(Debug)]
pub struct Normaliser {
    steps: Vec<Step>,
}

impl Normaliser {
    /// The steps for a run in these places.
    pub fn new(p: &Places<'_>) -> Normaliser {
        Normaliser { steps: steps(p) }
    }

    /// Applies every step in order.
    pub fn apply(&self, text: &str) -> String {
        let mut cur: Cow<'_, str> = Cow::Borrowed(text);
        for step in &self.steps {
            if let Cow::Owned(changed) = (step.apply)(&cur) {
                cur = Cow::Owned(changed);
            }
        }
        cur.into_owned()
    }
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

fn re(pattern: &str) -> Regex {
    // The patterns are literals of this module, covered by its tests.
    Regex::new(pattern).unwrap_or_else(|e| unreachable!("bad built-in pattern {pattern}: {e}"))
}

/// A pattern of this module, compiled once per process (a golden render normalises many texts).
macro_rules! lazy_re {
    ($name:ident, $pattern:expr) => {
        static $name: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| re($pattern));
    };
}

lazy_re!(UUID, r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b");
lazy_re!(TIMESTAMP, r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?\b");
lazy_re!(OS_VERSION, r"OS Version: [^\n\\]*");
lazy_re!(AGENT_MS, r#"(duration_ms: ?|"duration_ms": ?|<duration_ms>|"durationMs": ?)\d+"#);
lazy_re!(EPOCH_MS, r#"("[A-Za-z]*At": ?)1\d{12}\b"#);
lazy_re!(TIME_P, r"(?m)^((?:  \| )?(?:real|user|sys)) \d+\.\d+$");
lazy_re!(TEMP_FILE_NAME, r"(\.tmp\.)\d+\.[0-9a-f]{6,}\b");
lazy_re!(PROCESS_FIELDS, r#"("createdByPid": ?|"createdByProcStart": ?)"?\d+"?"#);
lazy_re!(SUBJECT_VERSION, r"(cc_version=|claude-cli/)\d+\.\d+\.\d+(\.[0-9a-f]+)?");
lazy_re!(CLOCK_TIME, r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{1,2} \d{1,2}:\d{2}(?:am|pm)\b");
lazy_re!(INSERTED_CELL, r"Inserted cell ([A-Za-z0-9_-]{4,}) with");
lazy_re!(REMINDER, r"(?s)\s*<system-reminder>.*?</system-reminder>");

/// The steps, in order.
pub fn steps(p: &Places<'_>) -> Vec<Step> {
    let cwd = p.cwd.to_string_lossy().into_owned();
    let home = p.home.to_string_lossy().into_owned();
    let root = p.root.to_string_lossy().into_owned();
    let uuid = UUID.clone();
    let ts = TIMESTAMP.clone();
    let today = p.today.clone();
    let month = month_name(&p.today);
    let slug = probelab_runtime::fs::cwd_slug(p.cwd);
    let os = OS_VERSION.clone();
    let agent_ms = AGENT_MS.clone();
    let random_cells = !p.subject.is_builtin();
    // the probe's web service (WEB-1): its base URL, as the run gave it, is `<web>`
    let web = p.web.unwrap_or_default().to_string();
    vec![
        Step { name: "web-service", apply: Box::new(move |s| replace(s, &web, "<web>")) },
        Step { name: "cwd-slug", apply: Box::new(move |s| replace(s, &slug, "<cwd-slug>")) },
        // cwd and home live under the root: the longer paths go first.
        Step { name: "sandbox-cwd", apply: Box::new(move |s| replace(s, &cwd, "<cwd>")) },
        Step { name: "sandbox-home", apply: Box::new(move |s| replace(s, &home, "<home>")) },
        Step { name: "sandbox-root", apply: Box::new(move |s| replace(s, &root, "<sandbox>")) },
        Step { name: "uuids", apply: Box::new(move |s| uuid.replace_all(s, "<uuid>")) },
        Step { name: "timestamps", apply: Box::new(move |s| ts.replace_all(s, "<timestamp>")) },
        // ids the subject makes up (background task ids, persisted-output file names): found where they
        // are announced, then replaced everywhere, numbered in order of first appearance
        Step { name: "run-ids", apply: Box::new(run_ids) },
        // the id of a cell NotebookEdit inserted (NB-1): Claude Code makes it up at random, found in
        // `Inserted cell <id> with …` and replaced everywhere (the Read of the notebook, the file); the
        // built-in runtime derives it from the notebook and the source, so its goldens keep it
        Step {
            name: "notebook-cell-ids",
            apply: Box::new(move |s| if random_cells { cell_ids(s) } else { Cow::Borrowed(s) }),
        },
        // how long a sub-agent ran (AGENT-1 results and notifications), how long a tool ran as a
        // PostToolUse hook reads it (`"duration_ms":75`): wall time, never a decision
        Step { name: "agent-durations", apply: Box::new(move |s| agent_ms.replace_all(s, "${1}<ms>")) },
        // epoch-millisecond times in the subject's JSON records (`"startedAt": 1796012354224`)
        Step { name: "epoch-times", apply: Box::new(move |s| EPOCH_MS.replace_all(s, "${1}<epoch-ms>")) },
        // the subject's own version where it names itself (the billing header's `cc_version=2.1.235.0bf`,
        // the User-Agent's `claude-cli/2.1.235`): the golden's header names the version, and a prompt
        // that differs only there is the same prompt
        Step { name: "subject-version", apply: Box::new(move |s| SUBJECT_VERSION.replace_all(s, "${1}<version>")) },
        // the process that wrote a record (Claude Code's durable cron store: createdByPid, …)
        Step { name: "process-fields", apply: Box::new(move |s| PROCESS_FIELDS.replace_all(s, "${1}<pid>")) },
        // what `time -p` measured (`real 0.00` / `user 0.01` / `sys 0.00` lines of a Bash result): wall and
        // CPU time, never a decision (under load `real 0.01` made claude-code.bash-deny-bypass flaky)
        Step { name: "time-p", apply: Box::new(move |s| TIME_P.replace_all(s, "${1} <seconds>")) },
        // the temporary file an atomic write renames into place (Claude Code's task store since 2.1.333:
        // `4.json.tmp.6724.68d93a02dd5e`, the writer's pid and a random suffix)
        Step { name: "temp-file-names", apply: Box::new(move |s| TEMP_FILE_NAME.replace_all(s, "${1}<pid>.<random>")) },
        // a local wall-clock time the subject computed from the system clock (Claude Code's CronCreate /
        // CronList since 2.1.303: "Next run: Dec 1 12:57pm"; a one-shot's jitter moves it by a minute):
        // the built-in runtime's cron uses the probe's virtual clock and never prints this form
        Step { name: "clock-times", apply: Box::new(move |s| CLOCK_TIME.replace_all(s, "<clock-time>")) },
        // the machine's kernel, as the subject reports its environment
        Step { name: "os-version", apply: Box::new(move |s| os.replace_all(s, "OS Version: <os>")) },
        // the run's date (Claude Code tells the model "Today's date is …"), after the timestamps
        Step { name: "today", apply: Box::new(move |s| replace(s, &today, "<today>")) },
        // the run's month as a tool description names it ("The current month is November 2026": WebSearch)
        Step {
            name: "this-month",
            apply: Box::new(move |s| match &month {
                Some(m) => replace(s, m, "<this-month>"),
                None => Cow::Borrowed(s),
            }),
        },
    ]
}

/// Texts each step acts on, in places of their own ([`stamp`]): what the normalisation does to them is
/// the normaliser's stamp, so a step added, removed, reordered or matching differently changes it (a
/// test holds that every step changes something here).
const CANARY: &str = concat!(
    "web http://127.0.0.1:4242/page; slug -tmp-probelab-canary-work; cwd /tmp/probelab-canary/work/a.txt;\n",
    "home /tmp/probelab-canary/home/.claude; root /tmp/probelab-canary/x; 0f8fad5b-d9cb-469f-a165-70867728950e;\n",
    "2026-11-30T12:57:01.123Z; Command running in background with ID: bq7xk2; Inserted cell ab12cd34 with id;\n",
    "duration_ms: 75; \"startedAt\": 1796012354224; claude-cli/2.1.235; \"createdByPid\": 4242;\n",
    "real 0.01\nuser 0.00\n4.json.tmp.6724.68d93a02dd5e; Next run: Dec 1 12:57pm; OS Version: Linux 6.1;\n",
    "Today's date is 2026-11-30. The current month is November 2026.",
);

/// A tool result [`FINGERPRINT_STEPS`] act on ([`stamp`]): trailing white space, blocks, a reminder
/// alone, reminders appended in the text and as a block.
const FINGERPRINT_CANARY: &str = concat!(
    "<system-reminder>alone</system-reminder>\u{1d}own text \n\n\u{1d}more\n",
    "\n\n<system-reminder>\n<total_tokens>1 tokens left</total_tokens>\n</system-reminder>",
    "\u{1d}\n\n<system-reminder>fresh</system-reminder>",
);

/// The normaliser's stamp (12 hex): a hash of every step's name and of what the steps do to
/// [`CANARY`]. A matrix cell records the stamp it was normalised with: a fingerprint made by another
/// normaliser is not comparable, so a resumed matrix runs such a cell again and a report says when its
/// cells were made by more than one.
pub fn stamp() -> &'static str {
    static STAMP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let root = Path::new("/tmp/probelab-canary");
        let (cwd, home) = (root.join("work"), root.join("home"));
        let subject = crate::subject::id::SubjectId::claude_code(crate::subject::id::Version::new(2, 1, 235));
        let p = Places {
            root,
            cwd: &cwd,
            home: &home,
            today: "2026-11-30".into(),
            subject: &subject,
            web: Some("http://127.0.0.1:4242"),
        };
        let steps = steps(&p);
        let mut text = String::new();
        for s in &steps {
            text.push_str(s.name);
            text.push('\n');
        }
        text.push_str(&Normaliser { steps }.apply(CANARY));
        // the fingerprint's own steps, by name and by what they do to a result of their own
        for (name, _) in FINGERPRINT_STEPS {
            text.push_str(&format!("\nfingerprint step {name}"));
        }
        text.push_str(&format!("\nblock separator {:?}\n", BLOCK_SEPARATOR));
        text.push_str(&fingerprint_text(FINGERPRINT_CANARY));
        super::sha256(text.as_bytes())[..12].to_string()
    });
    &STAMP
}

/// Where a subject announces an id it made up; the id is group 1. Ids of the stub's own making
/// (`toolu_…`, deterministic) are left alone.
const RUN_ID_PLACES: &[&str] = &[
    r"with ID: ([A-Za-z0-9_-]{4,})",
    r"tasks/([A-Za-z0-9_-]{4,})\.output",
    r"tool-results/([A-Za-z0-9_-]{4,})\.txt",
    r"<task-id>([A-Za-z0-9_-]{4,})</task-id>",
    r#""(?:task_id|backgroundTaskId|shell_id)": ?"([A-Za-z0-9_-]{4,})""#,
    // sub-agents (AGENT-1): the id in a spawn result, and the reference's SendMessage pin
    r"agentId: ([A-Za-z0-9_-]{4,})",
    r#""ref": ?"([A-Za-z0-9_-]{4,})""#,
    // cron jobs (CRON-1): the id CronCreate made up
    r"Scheduled (?:recurring job|one-shot task) ([0-9a-f]{8}) \(",
    // workflow runs (WF-1): the reference's run ids are random
    r"Run ID: (wf_[a-z0-9-]{6,})",
    r#""agentId": ?"([A-Za-z0-9_-]{4,})""#,
    // background tasks as TaskOutput and the Workflow tool name them
    r"Task ID: ([A-Za-z0-9_-]{4,})",
    r"<task_id>([A-Za-z0-9_-]{4,})</task_id>",
    // cron jobs in the durable store (CRON-1)
    r#""id": ?"([0-9a-f]{8})""#,
];

fn run_ids(s: &str) -> Cow<'_, str> {
    let mut ids: Vec<String> = Vec::new();
    static PLACES: std::sync::LazyLock<Vec<Regex>> =
        std::sync::LazyLock::new(|| RUN_ID_PLACES.iter().map(|p| re(p)).collect());
    for place in PLACES.iter() {
        for c in place.captures_iter(s) {
            let id = c[1].to_string();
            if !id.starts_with("toolu_") && !id.starts_with('<') && !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    number_words(s, ids, "id")
}

/// `s` with each of `ids` replaced, wherever it stands as a word, by `<{what}-N>`, numbered by first
/// appearance in `s` (not by the order they were found in); borrowed when there is none.
fn number_words<'s>(s: &'s str, mut ids: Vec<String>, what: &str) -> Cow<'s, str> {
    if ids.is_empty() {
        return Cow::Borrowed(s);
    }
    ids.sort_by_key(|id| s.find(id.as_str()).unwrap_or(usize::MAX));
    let mut out = s.to_string();
    for (i, id) in ids.iter().enumerate() {
        if let Cow::Owned(changed) = replace_word(&out, id, &format!("<{what}-{}>", i + 1)) {
            out = changed;
        }
    }
    Cow::Owned(out)
}

/// `s` with every `id` that stands as a word (`\bID\b` as regex has it: a word boundary at both ends,
/// Unicode's word characters) replaced by `to`, left to right, not overlapping; borrowed when there is
/// none. A literal search, no pattern compiled from the id: ids come from the subject's output and may be
/// of any length (a 1 MB token is not a regex over the size limit).
fn replace_word<'s>(s: &'s str, id: &str, to: &str) -> Cow<'s, str> {
    if id.is_empty() {
        return Cow::Borrowed(s);
    }
    let word = |c: Option<char>| c.is_some_and(regex_syntax::is_word_character);
    let boundary = |at: usize| word(s[..at].chars().next_back()) != word(s[at..].chars().next());
    let finder = memchr::memmem::Finder::new(id.as_bytes());
    let (mut out, mut last, mut from, mut changed) = (String::new(), 0, 0, false);
    while let Some(k) = finder.find(&s.as_bytes()[from..]) {
        let at = from + k;
        let end = at + id.len();
        if boundary(at) && boundary(end) {
            out.push_str(&s[last..at]);
            out.push_str(to);
            (last, from, changed) = (end, end, true);
        } else {
            // the next place the id may start: one character on (a match is always on char boundaries)
            from = at + s[at..].chars().next().map_or(1, char::len_utf8);
        }
    }
    if !changed {
        return Cow::Borrowed(s);
    }
    out.push_str(&s[last..]);
    Cow::Owned(out)
}

/// The ids of inserted notebook cells, numbered `<cell-N>` in order of first appearance, replaced
/// wherever they stand as words. `undefined` and `null` are no ids but what Claude Code printed for a
/// cell that had none (a notebook without cell ids, before 2.1.321: "Inserted cell undefined with",
/// "Deleted cell undefined"): they stay, so the change to "Deleted cell cell-1" is seen.
pub(crate) fn cell_ids(s: &str) -> Cow<'_, str> {
    let mut ids: Vec<String> = Vec::new();
    for c in INSERTED_CELL.captures_iter(s) {
        let not_an_id = matches!(&c[1], "undefined" | "null");
        if !not_an_id && !c[1].starts_with('<') && !ids.contains(&c[1].to_string()) {
            ids.push(c[1].to_string());
        }
    }
    number_words(s, ids, "cell")
}

/// The tool's own text of a result, as checks see it: the `<system-reminder>` blocks a subject appends
/// after the text (Claude Code does with some models, e.g. `--model claude-sonnet-4-5`: the tokens
/// left, a file's freshness) are taken off with the whitespace before them. A result that is a reminder
/// and nothing else (Read's empty-file warning) is the tool's own and stays.
pub fn appended_reminders_off(text: &str) -> &str {
    lazy_re!(APPENDED, r"(?s)\A(.*?\S)(?:\s*<system-reminder>.*?</system-reminder>)+\s*\z");
    APPENDED.captures(text).and_then(|c| c.get(1)).map_or(text, |own| own.as_str())
}

/// A result's text with every `<system-reminder>` block and the white space around it taken off, trimmed
/// at the end: for `probelab import`, which writes a probe's checks from a session (what a check should
/// expect of the tool). Never for a fingerprint: it drops bytes the model sees (trailing white space,
/// a reminder inside the text) — the behaviour fingerprint takes off only what [`FINGERPRINT_STEPS`] name.
pub fn strip_reminders(text: &str) -> String {
    REMINDER.replace_all(text, "").trim_end().to_string()
}

/// Between the blocks of a tool_result whose content is a list, in the text a behaviour fingerprint
/// reads (`"a"` + `"b"` as two blocks is `a\u{1d}b`, never the `a\nb` of one block): where one block
/// ends is a byte the model sees.
pub const BLOCK_SEPARATOR: char = '\u{1d}';

/// One step of the fingerprint's own normalisation: its name and what it does to a text.
pub type FingerprintStep = (&'static str, fn(&str) -> Cow<'_, str>);

/// What a behaviour fingerprint leaves out of a tool result beyond the normaliser's [`steps`] (which
/// replace dates, ids and paths), each by name — nothing else of what the model sees is left out:
/// - `appended-reminders`: the `<system-reminder>` blocks the subject appends after a tool's own text
///   (Claude Code does with some models: the tokens left, a file's freshness — context of the harness,
///   a count that moves with the prompt's size, not what the tool answered), each with exactly the
///   separator that joins it (`\n\n` inside a block, or a block of its own). The tool's own text keeps
///   every byte, its trailing white space too; a result that is a reminder and nothing else (Read's
///   empty-file warning) is the tool's own and stays.
pub const FINGERPRINT_STEPS: &[FingerprintStep] = &[("appended-reminders", appended_reminders)];

/// The text a behaviour fingerprint keeps of a tool result: [`FINGERPRINT_STEPS`] applied in order.
pub fn fingerprint_text(text: &str) -> String {
    let mut cur: Cow<'_, str> = Cow::Borrowed(text);
    for (_, step) in FINGERPRINT_STEPS {
        if let Cow::Owned(changed) = step(&cur) {
            cur = Cow::Owned(changed);
        }
    }
    cur.into_owned()
}

/// The step `appended-reminders` ([`FINGERPRINT_STEPS`]): from the end, each `<system-reminder>` block
/// with the separator before it (`\n\n`, or a block boundary with or without one), while there is a
/// tool's own text before it; borrowed when there is none.
pub fn appended_reminders(text: &str) -> Cow<'_, str> {
    const OPEN: &str = "<system-reminder>";
    const CLOSE: &str = "</system-reminder>";
    let block = BLOCK_SEPARATOR.to_string();
    let separators = [format!("{block}\n\n"), format!("{block}\n"), block, "\n\n".to_string()];
    let mut end = text.len();
    loop {
        let head = &text[..end];
        let Some(open) = head.strip_suffix(CLOSE).and_then(|h| h.rfind(OPEN)) else { break };
        // one block: no other reminder closes inside it
        if head[open + OPEN.len()..end - CLOSE.len()].contains(CLOSE) {
            break;
        }
        let before = &head[..open];
        match separators.iter().find(|s| before.ends_with(s.as_str())) {
            Some(s) => end = open - s.len(),
            // nothing joins it to a text before it: the tool's own text (or not appended)
            None => break,
        }
    }
    if end == text.len() {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text[..end].to_string())
    }
}

/// Applies every step in order (making them for this one text: a run's many texts take a
/// [`Normaliser`]).
pub fn normalise(text: &str, p: &Places<'_>) -> String {
    Normaliser::new(p).apply(text)
}

/// `November 2026` for `2026-11-30` (`None` for anything else).
fn month_name(date: &str) -> Option<String> {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let (year, rest) = date.split_once('-')?;
    let month: usize = rest.split('-').next()?.parse().ok()?;
    Some(format!("{} {year}", MONTHS.get(month.checked_sub(1)?)?))
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock (days to civil date).
pub fn today_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
        ("/tmp/probelab-x".into(), "/tmp/probelab-x/work".into(), "/tmp/probelab-x/home".into())
    }

    fn one(name: &str, input: &str) -> String {
        let (r, c, h) = places();
        let cc = crate::subject::id::SubjectId::reference();
        let p = Places { root: &r, cwd: &c, home: &h, today: "2026-11-30".into(), subject: &cc, web: None };
        let step = steps(&p).into_iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no step {name}"));
        (step.apply)(input).into_owned()
    }

    #[test]
    fn every_step_changes_the_canary_so_a_changed_step_changes_the_stamp() {
        let root = Path::new("/tmp/probelab-canary");
        let (cwd, home) = (root.join("work"), root.join("home"));
        let cc = crate::subject::id::SubjectId::reference();
        let p = Places {
            root,
            cwd: &cwd,
            home: &home,
            today: "2026-11-30".into(),
            subject: &cc,
            web: Some("http://127.0.0.1:4242"),
        };
        for step in steps(&p) {
            assert!(matches!((step.apply)(CANARY), Cow::Owned(_)), "step {} finds nothing in the canary", step.name);
        }
        assert_eq!(stamp().len(), 12);
        assert_eq!(stamp(), stamp());
        // a step that matched differently would give another text, so another stamp
        let changed = Normaliser { steps: steps(&p).into_iter().skip(1).collect() }.apply(CANARY);
        assert_ne!(changed, Normaliser::new(&p).apply(CANARY));
    }

    #[test]
    fn a_fingerprint_keeps_every_byte_but_the_reminders_appended_after_the_tool_s_text() {
        let r = "<system-reminder>\n<total_tokens>1 tokens left</total_tokens>\n</system-reminder>";
        // trailing white space of the tool's own text is kept, with or without a reminder after it
        assert_eq!(fingerprint_text("done\n"), "done\n");
        assert_ne!(fingerprint_text("done\n"), fingerprint_text("done"));
        assert_eq!(fingerprint_text(&format!("done\n\n\n{r}")), "done\n");
        assert_eq!(fingerprint_text(&format!("done\n\n{r}\n\n{r}")), "done");
        // a reminder as a block of its own, with or without a separator
        assert_eq!(fingerprint_text(&format!("done \u{1d}{r}")), "done ");
        assert_eq!(fingerprint_text(&format!("done\u{1d}\n\n{r}")), "done");
        // a reminder alone, or inside the text, is what the tool said
        assert_eq!(fingerprint_text(r), r);
        assert_eq!(fingerprint_text(&format!("a {r} b")), format!("a {r} b"));
        assert_eq!(fingerprint_text(&format!("a\n{r}")), format!("a\n{r}"), "not the separator the subject uses");
        // a block boundary is kept
        assert_ne!(fingerprint_text("a\u{1d}b"), fingerprint_text("a\nb"));
        assert!(matches!(appended_reminders("nothing appended"), Cow::Borrowed(_)));
        assert_ne!(fingerprint_text(FINGERPRINT_CANARY), FINGERPRINT_CANARY, "the canary is acted on");
    }

    #[test]
    fn appended_reminders_come_off_a_result_and_a_reminder_alone_stays() {
        let r = "<system-reminder>\n<total_tokens>1 tokens left</total_tokens>\n</system-reminder>";
        assert_eq!(appended_reminders_off(&format!("done\n\n{r}")), "done");
        assert_eq!(appended_reminders_off(&format!("a\n{r}\n\n{r}\n")), "a");
        assert_eq!(appended_reminders_off(r), r);
        assert_eq!(appended_reminders_off(&format!("a {r} b")), format!("a {r} b"));
        assert_eq!(appended_reminders_off("no reminder  "), "no reminder  ");
    }

    #[test]
    fn a_word_is_replaced_as_regex_replaces_bword_b() {
        let cases = [
            ("bp7 xbp7 bp7x bp7-bp7 _bp7 é bp7é bp7", "bp7"),
            ("-a- x-a-a- -a-", "-a-"),
            ("aaa aa a-aa", "aa"),
            ("<id-1> id-1 id-1x", "id-1"),
            ("", "abc"),
        ];
        for (s, id) in cases {
            let re = regex::Regex::new(&format!(r"\b{}\b", regex::escape(id))).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(replace_word(s, id, "<X>"), re.replace_all(s, "<X>"), "{s:?} {id:?}");
        }
    }

    #[test]
    fn an_id_of_any_length_is_replaced_without_a_pattern_made_of_it() {
        let id = "a".repeat(1 << 20);
        let text = format!("with ID: {id}. then {id} again");
        let out = one("run-ids", &text);
        assert_eq!(out, "with ID: <id-1>. then <id-1> again");
    }

    #[test]
    fn replace_is_str_replace() {
        for (s, from, to) in
            [("aaa", "aa", "b"), ("xay", "a", "<a>"), ("", "a", "b"), ("é/é", "é", "e"), ("ab", "ab", "")]
        {
            assert_eq!(replace(s, from, to), s.replace(from, to), "{s:?} {from:?} {to:?}");
        }
        assert!(matches!(replace("abc", "x", "y"), Cow::Borrowed("abc")));
    }

    #[test]
    fn each_step_original_to_expected() {
        assert_eq!(one("sandbox-cwd", "/tmp/probelab-x/work/f.txt"), "<cwd>/f.txt");
        assert_eq!(one("sandbox-home", "/tmp/probelab-x/home/.claude"), "<home>/.claude");
        assert_eq!(one("sandbox-root", "/tmp/probelab-x/other"), "<sandbox>/other");
        assert_eq!(one("uuids", "session 123e4567-e89b-42d3-a456-426614174000."), "session <uuid>.");
        assert_eq!(one("timestamps", "at 2026-11-30T01:02:03.456Z ok"), "at <timestamp> ok");
        assert_eq!(one("today", "Today's date is 2026-11-30."), "Today's date is <today>.");
        assert_eq!(
            one("this-month", "The current month is November 2026 — use this"),
            "The current month is <this-month> — use this"
        );
        assert_eq!(month_name("2026-01-05").as_deref(), Some("January 2026"));
        assert_eq!(
            one("epoch-times", r#""startedAt": 1796012354224, "queuedAt":1796012354222, "count": 1796012354224"#),
            r#""startedAt": <epoch-ms>, "queuedAt":<epoch-ms>, "count": 1796012354224"#
        );
        assert_eq!(month_name("2026-13-05"), None);
        assert_eq!(one("cwd-slug", "projects/-tmp-probelab-x-work/memory"), "projects/<cwd-slug>/memory");
        assert_eq!(
            one("os-version", " - OS Version: Linux 6.18.44-fc-v509\n - Model"),
            " - OS Version: <os>\n - Model"
        );
        assert_eq!(
            one(
                "run-ids",
                "with ID: bp7nytrmv. Output: /t/tasks/bp7nytrmv.output; tool-results/bos3mj4un.txt, \
                 tool-results/toolu_p_3.txt, <task-id>bp7nytrmv</task-id> bp7nytrmvx"
            ),
            "with ID: <id-1>. Output: /t/tasks/<id-1>.output; tool-results/<id-2>.txt, \
             tool-results/toolu_p_3.txt, <task-id><id-1></task-id> bp7nytrmvx"
        );
        assert_eq!(
            one(
                "agent-durations",
                "tool_uses: 1\nduration_ms: 45</usage> <duration_ms>83</duration_ms> \"durationMs\": 21"
            ),
            "tool_uses: 1\nduration_ms: <ms></usage> <duration_ms><ms></duration_ms> \"durationMs\": <ms>"
        );
        assert_eq!(
            one("agent-durations", r#"{"tool_use_id":"t","duration_ms":75} "duration_ms": 2"#),
            r#"{"tool_use_id":"t","duration_ms":<ms>} "duration_ms": <ms>"#
        );
        assert_eq!(
            one("run-ids", "agentId: a4f349d5e5523f70f (use SendMessage with to: 'a4f349d5e5523f70f'"),
            "agentId: <id-1> (use SendMessage with to: '<id-1>'"
        );
        assert_eq!(
            one("time-p", "real 0.01\nuser 0.00\nsys 0.00\nreal time 1.5 stays\n  real 1.0 stays\n  | real 0.02"),
            "real <seconds>\nuser <seconds>\nsys <seconds>\nreal time 1.5 stays\n  real 1.0 stays\n  | real <seconds>"
        );
        assert_eq!(
            one("temp-file-names", "rename '<home>/t/4.json.tmp.6724.68d93a02dd5e' -> '<home>/t/4.json'; a.tmp.1.xyz"),
            "rename '<home>/t/4.json.tmp.<pid>.<random>' -> '<home>/t/4.json'; a.tmp.1.xyz"
        );
        assert_eq!(
            one("clock-times", "Next run: Dec 1 12:57pm. x; next run Jan 10 9:05am: y; Dec 1 12:57 stays"),
            "Next run: <clock-time>. x; next run <clock-time>: y; Dec 1 12:57 stays"
        );
        assert_eq!(today_utc().len(), 10);
        assert_eq!(
            one(
                "notebook-cell-ids",
                "Inserted cell 4f5d27e5 with print('hi')\n<cell id=\"intro\">…</cell id=\"intro\">\n\
                 <cell id=\"4f5d27e5\">print('hi')</cell id=\"4f5d27e5\"> \"id\": \"4f5d27e5x\""
            ),
            "Inserted cell <cell-1> with print('hi')\n<cell id=\"intro\">…</cell id=\"intro\">\n\
             <cell id=\"<cell-1>\">print('hi')</cell id=\"<cell-1>\"> \"id\": \"4f5d27e5x\""
        );
    }

    #[test]
    fn the_web_service_url_comes_with_the_places_and_reads_no_file() {
        let (r, c, h) = places();
        let builtin = crate::subject::id::SubjectId::builtin();
        let web = Some("http://127.0.0.1:40123");
        let p = Places { root: &r, cwd: &c, home: &h, today: String::new(), subject: &builtin, web };
        assert_eq!(normalise("GET http://127.0.0.1:40123/a 200", &p), "GET <web>/a 200");
        let p = Places { web: None, ..p };
        assert_eq!(normalise("GET http://127.0.0.1:40123/a", &p), "GET http://127.0.0.1:40123/a");
    }

    #[test]
    fn a_cell_claude_code_printed_as_undefined_is_no_random_id() {
        let s = "Inserted cell undefined with b = 2\nDeleted cell undefined\n";
        assert_eq!(cell_ids(s), s, "undefined is what it printed, not an id to number");
        assert_eq!(cell_ids("Inserted cell ab12cd34 with x\nab12cd34"), "Inserted cell <cell-1> with x\n<cell-1>");
    }

    #[test]
    fn the_built_in_runtime_keeps_the_cell_ids_it_derives() {
        let (r, c, h) = places();
        let builtin = crate::subject::id::SubjectId::builtin();
        let p = Places { root: &r, cwd: &c, home: &h, today: String::new(), subject: &builtin, web: None };
        assert_eq!(normalise("Inserted cell f0612efe with x", &p), "Inserted cell f0612efe with x");
    }

    #[test]
    fn order_puts_cwd_before_root_and_keeps_decisions() {
        let (r, c, h) = places();
        let builtin = crate::subject::id::SubjectId::builtin();
        let p = Places { root: &r, cwd: &c, home: &h, today: "2026-11-30".into(), subject: &builtin, web: None };
        assert_eq!(
            normalise("/tmp/probelab-x/work/a /tmp/probelab-x/home/b /tmp/probelab-x/c 42 lines", &p),
            "<cwd>/a <home>/b <sandbox>/c 42 lines"
        );
    }

    #[test]
    fn subject_version_and_reminders() {
        let p = Places {
            root: Path::new("/r"),
            cwd: Path::new("/r/work"),
            home: Path::new("/r/home"),
            today: String::new(),
            subject: &crate::subject::id::SubjectId::builtin(),
            web: None,
        };
        assert_eq!(
            normalise("x-anthropic-billing-header: cc_version=2.1.235.0bf; cc_entrypoint=sdk-cli", &p),
            "x-anthropic-billing-header: cc_version=<version>; cc_entrypoint=sdk-cli"
        );
        assert_eq!(normalise("claude-cli/2.1.332 (external, sdk-cli)", &p), "claude-cli/<version> (external, sdk-cli)");
        assert_eq!(
            strip_reminders("1\tone\n  \n\n<system-reminder>\nWhenever you read a file…\n</system-reminder>\n"),
            "1\tone"
        );
        assert_eq!(strip_reminders("a <system-reminder>x</system-reminder> b"), "a b");
    }
}
