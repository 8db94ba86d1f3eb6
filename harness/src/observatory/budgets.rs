//! The budgets table: per Claude Code version, each limit of its tools as a probe measured it —
//! `docs/matrix/budgets.md`, regenerated with the matrix ([`super::watch::publish`]).
//!
//! A budget is read from the version's golden transcript of the probe that measures it, never copied
//! from documentation or source:
//! - [`How::Captured`]: a regex over the golden whose one group is the value the subject itself printed
//!   (`exceeds maximum allowed size (256KB)` → `256KB`);
//! - [`How::Boundary`]: a limit the probe pins from both sides (20,000 chars inline, 20,001 persisted)
//!   with named checks: the stated value holds on a version where those checks passed, and the table says
//!   `changed` where one of them failed (the probe's own reason says how). Only the checks that pin the
//!   limit count: another check of the same probe failing (a changed text around the same result) is a
//!   behaviour change of the timeline, not a budget change. A budget whose measure changed form across
//!   versions lists one regime per form (checks gated by `versions`); where every check of every regime
//!   was skipped, the version printed no such value;
//! - [`How::Stated`]: what the release tells the model of a limit in a tool's description (Bash's default
//!   and maximum timeouts, 2 and 10 minutes: not run out on each of 87 releases), read from the tool's
//!   blob in the probe's first request and always shown as stated, never as timed.
//!
//! A budget whose value differs from the version before it is a change, listed under the table with
//! both versions (neighbours in the matrix; exact when the matrix holds every release between).

use std::collections::BTreeMap;
use std::path::Path;

/// How a budget is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// A regex over the golden transcript; its first group is the value.
    Captured(&'static str),
    /// The probe pins the value from both sides: regimes of (value, the checks that pin it, numbered as
    /// the golden's verdicts number them); the first regime whose checks all passed is the value.
    Boundary(&'static [(&'static str, &'static [usize])]),
    /// What the release tells the model of a limit: a regex over a tool's description as the probe's
    /// first request offered it (the tool's blob in `golden/blobs/`), its first group the value. Said so
    /// wherever it is shown — stated, not timed: a limit of minutes (Bash's default timeout) is not run
    /// out on each release.
    Stated {
        /// The tool whose description states it.
        tool: &'static str,
        /// The regex.
        pattern: &'static str,
    },
}

/// One budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// What it limits.
    pub name: &'static str,
    /// The probe that measures it.
    pub probe: &'static str,
    /// How.
    pub how: How,
}

/// The budgets, in the table's order.
pub const BUDGETS: &[Budget] = &[
    Budget {
        name: "Read: whole-file byte limit",
        probe: "read.size-limit",
        how: How::Captured(r"exceeds maximum allowed size \(([^)]+)\)"),
    },
    Budget {
        name: "Read: token ceiling",
        probe: "read.token-limit",
        how: How::Captured(r"exceeds maximum allowed tokens \((\d+)\)"),
    },
    Budget {
        name: "Read: default line window",
        probe: "read.budget",
        how: How::Boundary(&[("none: 2,100 lines come back whole", &[1])]),
    },
    Budget {
        name: "Read: line cut",
        probe: "read.budget",
        how: How::Boundary(&[("none: a 12,000-char line comes back whole", &[2])]),
    },
    Budget {
        name: "Glob: files listed at most",
        probe: "glob.budget",
        how: How::Captured(r"\(Showing (\d+) of \d+ matching files"),
    },
    Budget {
        name: "Grep: default head_limit",
        probe: "grep.budget",
        how: How::Captured(r"pagination = limit: (\d+)\]"),
    },
    Budget {
        name: "Grep: inline result, at most",
        probe: "grep.budget",
        how: How::Boundary(&[("20,000 chars", &[1, 2])]),
    },
    Budget {
        name: "Grep / Bash: persisted output preview",
        probe: "grep.budget",
        how: How::Captured(r"Preview \(first ([^)]+)\)"),
    },
    Budget {
        name: "Grep: output buffer",
        probe: "grep.output-buffer",
        how: How::Boundary(&[
            ("20,000,000 bytes of rg's text", &[1]),
            // from 2.1.251 the buffer holds rg's JSON (`CONTENT_FROM_JSON` of the runtime): the probe pins
            // only that far fewer lines fit, not the byte count (a JSON line names the absolute path)
            ("rg's JSON: under 346,740 lines", &[2]),
        ]),
    },
    Budget { name: "Grep: max columns", probe: "grep.max-columns", how: How::Boundary(&[("500", &[1, 2])]) },
    Budget {
        name: "Bash: inline output, at most",
        probe: "bash.output-budget",
        how: How::Boundary(&[("30,000 chars", &[1, 2, 4])]),
    },
    Budget {
        name: "Bash: failing output kept",
        probe: "bash.output-budget",
        how: How::Boundary(&[("first and last 5,000 chars", &[3])]),
    },
    Budget {
        name: "Bash: background auto-stop",
        probe: "claude-code.bash-results",
        how: How::Captured(r"still running after (\S+) in the background"),
    },
    Budget {
        name: "Cron: recurring jobs auto-expire after",
        probe: "claude-code.cron-durable",
        how: How::Captured(r"Auto-expires after (\d+ days)"),
    },
    Budget {
        name: "Tool result persisted over (maxResultSizeChars)",
        probe: "pipeline.result-budget",
        how: How::Boundary(&[("100,000 chars", &[1, 2])]),
    },
    Budget {
        name: "Auto-compact: first reported input tokens that compact (default model and settings)",
        probe: "claude-code.compaction-default",
        how: How::Captured(COMPACTED_AFTER),
    },
    Budget {
        name: "Auto-compact: tokens the binary counted then (default model and settings)",
        probe: "claude-code.compaction-default",
        how: How::Captured(PRE_TOKENS),
    },
    Budget {
        name: "Auto-compact: first reported input tokens that compact, CLAUDE_CODE_AUTO_COMPACT_WINDOW=200000",
        probe: "claude-code.compaction-threshold",
        how: How::Captured(COMPACTED_AFTER),
    },
    Budget {
        name: "Auto-compact: tokens the binary counted then, CLAUDE_CODE_AUTO_COMPACT_WINDOW=200000",
        probe: "claude-code.compaction-threshold",
        how: How::Captured(PRE_TOKENS),
    },
    Budget {
        name: "WebFetch: page text the reading model gets, at most",
        probe: "claude-code.web-fetch-size",
        how: How::Boundary(&[("100,000 chars", &[1, 2])]),
    },
    Budget {
        name: "WebFetch: largest response body read",
        probe: "claude-code.web-fetch-size",
        how: How::Boundary(&[("10,485,760 bytes (10 MiB)", &[3, 4])]),
    },
    Budget {
        name: "Bash: default timeout (ms), as stated",
        probe: "bash.schema",
        how: How::Stated { tool: "Bash", pattern: r"`timeout` is in milliseconds: default (\d+)" },
    },
    Budget {
        name: "Bash: maximum timeout (ms), as stated",
        probe: "bash.schema",
        how: How::Stated { tool: "Bash", pattern: r"`timeout` is in milliseconds: default \d+, max (\d+)" },
    },
    Budget {
        name: "Bash: a background command's default timeout (ms), as stated",
        probe: "bash.schema",
        how: How::Stated { tool: "Bash", pattern: r"in the background \(default (\d+), max \d+\)" },
    },
    Budget {
        name: "Bash: a background command's maximum timeout (ms), as stated",
        probe: "bash.schema",
        how: How::Stated { tool: "Bash", pattern: r"in the background \(default \d+, max (\d+)\)" },
    },
];

/// The compaction probes' ladder (CTX-1): each turn runs `echo reported N` and its response reports N
/// input tokens; the figure is N of the response right before the first compaction request (the rung
/// below it did not compact). `—` where no rung compacted.
/// The count the binary itself recorded for its compaction (`compactMetadata` of the
/// `compact_boundary` line of the session file under HOME, which the probes' last Bash call greps): the
/// reported usage plus its estimate of the messages since.
const PRE_TOKENS: &str = r#""trigger":"auto","preTokens":(\d+)"#;

const COMPACTED_AFTER: &str =
    r#"echo reported (\d+)"[^\n]*\nstop_reason: tool_use\n\n## request 1 \(conversation compact\)"#;

/// A budget on one version.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "value")]
pub enum Value {
    /// The value measured.
    Measured(String),
    /// The subject printed no such value on this version (another text, or no such limit yet).
    NotShown,
    /// The boundary's probe failed a check on this version: the limit moved (the probe's reason says how).
    Changed,
    /// No golden of the probe on this version.
    Missing,
    /// The probe's run on this version broke an invariant ([`crate::observe::Outcome::Broken`]): its
    /// golden is no measure; the probe needs repair there.
    Broken,
}

impl Value {
    /// As the tables write it.
    pub fn text(&self) -> String {
        match self {
            Value::Measured(v) => v.clone(),
            Value::NotShown => "—".into(),
            Value::Changed => "changed".into(),
            Value::Missing => "·".into(),
            Value::Broken => "broken".into(),
        }
    }
}

/// Measures one budget in a golden transcript's text, a stated one in the blob of the tool its first
/// request offered (`blobs`: `golden/blobs`; without them a stated budget reads as not shown).
pub fn measure(b: &Budget, golden: Option<&str>, blobs: Option<&Path>) -> Value {
    let Some(text) = golden else { return Value::Missing };
    match b.how {
        How::Stated { tool, pattern } => {
            let Some(blobs) = blobs else { return Value::NotShown };
            // the tool's blob in the first request's `tools:` line (`Bash@74538981774d`)
            let hash = text
                .lines()
                .find_map(|l| l.strip_prefix("tools: "))
                .and_then(|l| l.split(' ').find_map(|t| t.strip_prefix(tool)?.strip_prefix('@')));
            let description = hash
                .map(|h| crate::transcript::diff::blob_text(blobs, h))
                .and_then(|blob| serde_json::from_str::<serde_json::Value>(&blob).ok())
                .and_then(|v| v.get("description").and_then(serde_json::Value::as_str).map(str::to_string));
            match (description, regex::Regex::new(pattern)) {
                (Some(d), Ok(re)) => re
                    .captures(&d)
                    .and_then(|c| c.get(1))
                    .map(|m| Value::Measured(m.as_str().to_string()))
                    .unwrap_or(Value::NotShown),
                _ => Value::NotShown,
            }
        }
        How::Captured(pattern) => match regex::Regex::new(pattern) {
            Ok(re) => re
                .captures(text)
                .and_then(|c| c.get(1))
                .map(|m| Value::Measured(m.as_str().to_string()))
                .unwrap_or(Value::NotShown),
            Err(_) => Value::NotShown,
        },
        How::Boundary(regimes) => {
            let verdicts = text.split("\n## verdicts\n").nth(1).unwrap_or("");
            // check N's verdict word: `pass`, `FAIL` or `skip` (none where the golden has no such check)
            let word = |n: usize| {
                let tail = format!(" check {n}: ");
                verdicts.lines().find(|l| l.contains(&tail)).and_then(|l| l.split(' ').next())
            };
            let mut skipped = true;
            for (value, checks) in regimes {
                let words: Vec<Option<&str>> = checks.iter().map(|&n| word(n)).collect();
                if words.iter().any(|w| matches!(w, Some("FAIL") | None)) {
                    return Value::Changed;
                }
                if words.iter().all(|w| *w == Some("pass")) {
                    return Value::Measured(value.to_string());
                }
                skipped &= words.iter().all(|w| *w == Some("skip"));
            }
            if skipped {
                Value::NotShown
            } else {
                Value::Changed
            }
        }
    }
}

/// One release's budgets, each with its value, the probe that measured it and how: (name, value,
/// probe, how) — `exact: Claude Code wrote it` for a value the subject wrote itself in a result or its
/// session file ([`How::Captured`]), `a bound: …` for the compaction ladder's rung (the probe's reported
/// counts step by a rung), `pinned by checks N, M` for one the probe's checks hold from both sides
/// ([`How::Boundary`]).
pub fn of_release(
    golden_root: &Path,
    version: &str,
    broken: IsBroken<'_>,
) -> Vec<(&'static str, String, &'static str, String)> {
    let t = table(golden_root, &[version.to_string()], broken);
    BUDGETS
        .iter()
        .map(|b| {
            let value = t.get(version).and_then(|r| r.get(b.name)).map(Value::text).unwrap_or_else(|| "·".into());
            (b.name, value, b.probe, how(b))
        })
        .collect()
}

/// How a budget is measured, in words: `exact: Claude Code wrote it` for a value the subject wrote
/// itself, `a bound: …` for the compaction ladder's rung, `pinned by checks N, M` for one the probe's
/// checks hold from both sides.
pub fn how(b: &Budget) -> String {
    match b.how {
        How::Captured(p) if p == COMPACTED_AFTER => {
            "a bound: the first reported count of the probe's ladder that compacted".to_string()
        }
        How::Captured(_) => "exact: Claude Code wrote it".to_string(),
        How::Stated { tool, .. } => format!("stated: {tool}'s description says it to the model (not timed)"),
        How::Boundary(regimes) => {
            let checks: Vec<String> = regimes.iter().flat_map(|(_, c)| c.iter()).map(|n| n.to_string()).collect();
            format!("pinned by check{} {}", if checks.len() == 1 { "" } else { "s" }, checks.join(", "))
        }
    }
}

/// Whether the run of a probe on a version broke an invariant (probe, version): its golden is no fact.
pub type IsBroken<'a> = &'a dyn Fn(&str, &str) -> bool;

/// The budgets of these versions, from `golden/claude-code@<version>/`: version → budget name → value
/// ([`Value::Broken`] where the probe's run there broke an invariant: its golden is not read).
pub fn table(
    golden_root: &Path,
    versions: &[String],
    broken: IsBroken<'_>,
) -> BTreeMap<String, BTreeMap<&'static str, Value>> {
    let mut out = BTreeMap::new();
    for v in versions {
        let dir = golden_root.join(super::subject(v));
        let row = BUDGETS
            .iter()
            .map(|b| {
                if broken(b.probe, v) {
                    return (b.name, Value::Broken);
                }
                let text = std::fs::read_to_string(dir.join(format!("{}.snap", b.probe))).ok();
                (b.name, measure(b, text.as_deref(), Some(&golden_root.join("blobs"))))
            })
            .collect();
        out.insert(v.clone(), row);
    }
    out
}

/// The changes of each budget between neighbouring versions of `versions` (oldest first): (budget,
/// previous version, version, old, new).
pub fn changes(
    t: &BTreeMap<String, BTreeMap<&'static str, Value>>,
    versions: &[String],
) -> Vec<(&'static str, String, String, String, String)> {
    let mut out = Vec::new();
    for b in BUDGETS {
        let mut prev: Option<(&String, &Value)> = None;
        for v in versions {
            let Some(value) = t.get(v).and_then(|r| r.get(b.name)) else { continue };
            // neither a version not measured nor a broken run is a value: stepped over
            if matches!(value, Value::Missing | Value::Broken) {
                continue;
            }
            if let Some((pv, pval)) = prev {
                if pval != value {
                    out.push((b.name, pv.clone(), v.clone(), pval.text(), value.text()));
                }
            }
            prev = Some((v, value));
        }
    }
    out
}

/// A budget's values over `versions` as runs: (value, first version, last version, how many), in order
/// (a version not measured or whose run broke is a run of its own: it says `·` or `broken`).
pub fn runs(
    t: &BTreeMap<String, BTreeMap<&'static str, Value>>,
    versions: &[String],
    name: &str,
) -> Vec<(String, String, String, usize)> {
    super::readable::runs(versions, &|v| t.get(v).and_then(|r| r.get(name)).map(Value::text))
}

/// `docs/matrix/budgets.md`: per budget, its probe, how it is measured (exact, a bound, or pinned by
/// checks), and its values as runs of releases (a value with the range it holds for); then the changes.
pub fn to_markdown(golden_root: &Path, versions: &[String], broken: IsBroken<'_>) -> String {
    let t = table(golden_root, versions, broken);
    let mut out = String::from("# Budgets of Claude Code's tools, per version\n\n");
    out.push_str(
        "Each value is measured by the probe named beside it, read from that version's golden transcript \
         (golden/claude-code@<version>/), and listed with the releases it holds for (first – last, how many \
         measured releases). How: `exact` — Claude Code wrote the value itself; `a bound` — the probe \
         brackets it (the compaction ladder's rungs); `pinned by checks` — a boundary the probe holds from \
         both sides (it holds where those checks passed; `changed` where one of them failed). `—`: the \
         subject printed no such value (no such limit on that version); `·`: not measured on that version; \
         `broken`: the probe's run there broke an invariant (it needs repair; its golden is no measure, and no \
         change is read across it). Generated with the matrix (`probelab matrix --publish`, `probelab watch`); \
         `probelab budgets V` prints one release's; do not edit by hand.\n\n",
    );
    out.push_str("| budget | probe | how | value | releases |\n|---|---|---|---|---|\n");
    for b in BUDGETS {
        for (i, (value, from, to, n)) in runs(&t, versions, b.name).into_iter().enumerate() {
            let range = if from == to { from } else { format!("{from} – {to}") };
            let head = if i == 0 { format!("{} | `{}` | {}", b.name, b.probe, how(b)) } else { " |  | ".to_string() };
            out.push_str(&format!("| {head} | {value} | {range} ({n}) |\n"));
        }
    }
    let ch = changes(&t, versions);
    out.push_str(&format!("\n## Changes ({})\n\n", ch.len()));
    if ch.is_empty() {
        out.push_str("No budget changed across these versions.\n");
    }
    for (name, pv, v, old, new) in &ch {
        out.push_str(&format!("- **{name}** {pv} → **{v}**: {old} → {new}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_written_as_runs_of_releases_with_how_they_are_measured() {
        let v = |s: &str| s.to_string();
        let versions = vec![v("2.1.1"), v("2.1.2"), v("2.1.3"), v("2.1.4"), v("2.1.5")];
        let name = BUDGETS[0].name;
        let mut t: BTreeMap<String, BTreeMap<&'static str, Value>> = BTreeMap::new();
        for (ver, val) in [
            ("2.1.1", Value::NotShown),
            ("2.1.2", Value::Measured("30m".into())),
            ("2.1.3", Value::Measured("30m".into())),
            ("2.1.4", Value::Broken),
            ("2.1.5", Value::Measured("30m".into())),
        ] {
            t.entry(ver.to_string()).or_default().insert(name, val);
        }
        assert_eq!(
            runs(&t, &versions, name),
            vec![
                (v("—"), v("2.1.1"), v("2.1.1"), 1),
                (v("30m"), v("2.1.2"), v("2.1.3"), 2),
                (v("broken"), v("2.1.4"), v("2.1.4"), 1),
                (v("30m"), v("2.1.5"), v("2.1.5"), 1),
            ]
        );
        let compact = BUDGETS
            .iter()
            .find(|b| b.name.starts_with("Auto-compact: first reported input tokens that compact (default"));
        assert!(compact.is_some_and(|b| how(b).starts_with("a bound")));
        assert_eq!(how(&BUDGETS[0]), "exact: Claude Code wrote it");
        assert!(BUDGETS.iter().any(|b| how(b).starts_with("pinned by check")));
    }

    #[test]
    fn budgets_are_read_from_the_subject_s_own_words_or_from_a_boundary_that_held() {
        let read = BUDGETS.iter().find(|b| b.probe == "read.size-limit").copied().unwrap_or(BUDGETS[0]);
        let golden = "tool_result t_1 is_error:\n  | File content (300KB) exceeds maximum allowed size (256KB). Use\n## verdicts\npass check 1: result 1\n";
        assert_eq!(measure(&read, Some(golden), None), Value::Measured("256KB".into()));
        assert_eq!(measure(&read, Some("tool_result t_1:\n  | other words\n## verdicts\n"), None), Value::NotShown);
        assert_eq!(measure(&read, None, None), Value::Missing);
        // stated: read from the tool's blob that the first request offered, never from the transcript
        let blobs = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let blob = serde_json::json!({"name": "Bash", "description": "Runs.\n- `timeout` is in milliseconds: default 120000, max 600000."});
        let hash = crate::transcript::sha256(blob.to_string().as_bytes());
        std::fs::write(blobs.path().join(format!("{hash}.json")), blob.to_string()).unwrap_or_else(|e| panic!("{e}"));
        let stated =
            BUDGETS.iter().find(|b| b.name == "Bash: maximum timeout (ms), as stated").copied().unwrap_or(read);
        let transcript =
            format!("probe: bash.schema\n## request 1\ntools: Bashful@cdcdcdcdcdcd Bash@{}\n", &hash[..12]);
        assert_eq!(measure(&stated, Some(&transcript), Some(blobs.path())), Value::Measured("600000".into()));
        assert_eq!(measure(&stated, Some(&transcript), None), Value::NotShown, "no blobs, nothing stated");
        let other = transcript.replace("Bash@", "Read@");
        assert_eq!(measure(&stated, Some(&other), Some(blobs.path())), Value::NotShown);
        assert!(how(&stated).starts_with("stated: Bash's description"));
        let bound = Budget { name: "b", probe: "p", how: How::Boundary(&[("30,000 chars", &[1])]) };
        assert_eq!(measure(&bound, Some(golden), None), Value::Measured("30,000 chars".into()));
        let failed = golden.replace("pass check 1", "FAIL check 1");
        assert_eq!(measure(&bound, Some(&failed), None), Value::Changed);
        // only the checks that pin the limit count: check 2 failing around the same result is no budget change
        let other = format!("{golden}FAIL check 2: result 1\n");
        assert_eq!(measure(&bound, Some(&other), None), Value::Measured("30,000 chars".into()));
        // a pinning check the golden lacks is no measure
        let two = Budget { name: "b", probe: "p", how: How::Boundary(&[("30,000 chars", &[1, 3])]) };
        assert_eq!(measure(&two, Some(golden), None), Value::Changed);
        // regimes gated by versions: the one whose checks ran and passed; all skipped is no such value
        let regimes = Budget { name: "b", probe: "p", how: How::Boundary(&[("text", &[1]), ("json", &[2])]) };
        let old = "## verdicts\npass check 1: result 1\nskip check 2: result 1 (versions >=2.1.251)\n";
        let new = "## verdicts\nskip check 1: result 1 (versions <2.1.251)\npass check 2: result 1\n";
        let neither =
            "## verdicts\nskip check 1: result 1 (versions <2.1.251)\nskip check 2: result 1 (versions >=2.1.251)\n";
        assert_eq!(measure(&regimes, Some(&format!("x\n{old}")), None), Value::Measured("text".into()));
        assert_eq!(measure(&regimes, Some(&format!("x\n{new}")), None), Value::Measured("json".into()));
        assert_eq!(measure(&regimes, Some(&format!("x\n{neither}")), None), Value::NotShown);
        let broke = new.replace("pass check 2", "FAIL check 2");
        assert_eq!(measure(&regimes, Some(&format!("x\n{broke}")), None), Value::Changed);
    }

    #[test]
    fn a_broken_run_is_no_measure_and_no_change_is_read_across_it() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let b = BUDGETS.iter().find(|b| b.probe == "claude-code.compaction-default").copied().unwrap_or(BUDGETS[0]);
        let golden = |n: &str| {
            format!("## request 4\ntool_use t Bash {{\"command\":\"echo reported {n}\",\"x\":1}}\nstop_reason: tool_use\n\n## request 1 (conversation compact)\n")
        };
        for (v, n) in [("2.1.1", "967000"), ("2.1.2", "500000"), ("2.1.3", "967000")] {
            let dir = d.path().join(super::super::subject(v));
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(dir.join(format!("{}.snap", b.probe)), golden(n)).unwrap_or_else(|e| panic!("{e}"));
        }
        let versions: Vec<String> = ["2.1.1", "2.1.2", "2.1.3"].map(String::from).to_vec();
        let all = table(d.path(), &versions, &|_, _| false);
        assert_eq!(all["2.1.2"][b.name], Value::Measured("500000".into()));
        assert_eq!(changes(&all, &versions).len(), 2, "as measured, 967000 → 500000 → 967000");
        let broken = |p: &str, v: &str| p == b.probe && v == "2.1.2";
        let t = table(d.path(), &versions, &broken);
        assert_eq!(t["2.1.2"][b.name], Value::Broken);
        assert!(changes(&t, &versions).iter().all(|c| c.0 != b.name), "no change read from a broken run");
        let md = to_markdown(d.path(), &versions, &broken);
        assert!(
            md.contains("| 967000 | 2.1.1 (1) |\n|  |  |  | broken | 2.1.2 (1) |\n|  |  |  | 967000 | 2.1.3 (1) |\n"),
            "{md}"
        );
    }

    #[test]
    fn the_committed_versions_budgets_are_measured_and_their_changes_listed() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("golden");
        let versions: Vec<String> = ["2.1.235", "2.1.332"].map(String::from).to_vec();
        let t = table(&root, &versions, &|_, _| false);
        assert_eq!(t["2.1.235"]["Read: whole-file byte limit"], Value::Measured("256KB".into()));
        assert_eq!(t["2.1.235"]["Read: token ceiling"], Value::Measured("25000".into()));
        assert_eq!(t["2.1.235"]["Grep: default head_limit"], Value::Measured("250".into()));
        for v in &versions {
            for b in BUDGETS {
                assert_ne!(t[v][b.name], Value::Missing, "{} on {v}: the probe's golden is committed", b.name);
            }
        }
        let md = to_markdown(&root, &versions, &|_, _| false);
        assert!(
            md.contains("| Read: token ceiling | `read.token-limit` | exact: Claude Code wrote it | 25000 | 2.1.235 – 2.1.332 (2) |"),
            "{md}"
        );
    }
}
