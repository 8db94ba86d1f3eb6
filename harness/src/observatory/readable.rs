//! What the generated pages say of each change, in words a person reads (issue 43, item 3): every change
//! of a probe in the timeline with the words of the results that changed — read from the goldens of both
//! releases, as `probelab diff` does — and the tools they are of; `timeline.md`'s "Changes by tool"
//! ([`by_tool`]) and the hover text of matrix.html's cells are made of these. Run-length helpers
//! ([`runs`]) write a row over the releases as ranges instead of a column per release.

use super::report::{Change, Matrix};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One change of one probe, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// The probe.
    pub probe: String,
    /// The release before it in the matrix.
    pub previous: String,
    /// The release it happened on.
    pub version: String,
    /// What moved, without fingerprints: `pass → changed (failed: check 3: result 3)`, `behaviour changed
    /// in result 6 (Grep) text`.
    pub what: String,
    /// The words that changed, a line each (`tool_result <id> (Bash) is_error false → true: [-…-]{+…+}`),
    /// then the verdicts that moved when no result did. Empty when the goldens of a side are not committed
    /// (a release a bisection added keeps cells only).
    pub words: Vec<String>,
    /// The tools whose results changed; when none did, the first tool the probe calls.
    pub tools: Vec<String>,
}

/// A change's `what` without its fingerprints: `behaviour 4c14d2b9301b → e46f27dc5ed2 (result 6 (Grep)
/// text)` is `behaviour changed in result 6 (Grep) text`; the rest is already words.
pub fn plain(what: &str) -> String {
    let Some(rest) = what.strip_prefix("behaviour ") else { return what.to_string() };
    let hex = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit());
    let mut parts = rest.splitn(4, ' ');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(a), Some("→"), Some(b), tail) if hex(a) && hex(b) => {
            let inner = tail.map(|t| t.trim().trim_start_matches('(').trim_end_matches(')')).unwrap_or("");
            if inner.is_empty() {
                "behaviour changed".into()
            } else {
                format!("behaviour changed in {inner}")
            }
        }
        _ => what.to_string(),
    }
}

/// Every change of the matrix's probe timeline in words, oldest release first (then by probe).
/// `unordered`: per probe, the tool_use ids whose result lines come in any order.
pub fn said(m: &Matrix, golden: &Path, unordered: &BTreeMap<String, BTreeSet<String>>) -> Vec<Said> {
    let none = BTreeSet::new();
    let mut out = Vec::new();
    for (probe, changes) in &m.probe_timeline {
        for Change { previous, version, what } in changes {
            let read =
                |v: &str| std::fs::read_to_string(golden.join(super::subject(v)).join(format!("{probe}.snap"))).ok();
            let reason = m
                .probes
                .get(probe)
                .and_then(|r| r.get(version))
                .map(|c| c.reason.as_str())
                .filter(|r| !r.is_empty() && !what.contains(*r))
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            let mut s = Said {
                probe: probe.clone(),
                previous: previous.clone(),
                version: version.clone(),
                what: plain(what) + &reason,
                words: Vec::new(),
                tools: Vec::new(),
            };
            if let (Some(a), Some(b)) = (read(previous), read(version)) {
                let (results, verdicts) =
                    crate::transcript::diff::transcript_changes(&a, &b, unordered.get(probe).unwrap_or(&none));
                for (tool, c) in &results {
                    let named = tool.as_ref().map(|t| format!(" ({t})")).unwrap_or_default();
                    let err = c.is_error.as_deref().map(|e| format!(" is_error {e}")).unwrap_or_default();
                    let call = c.call.trim_end_matches(':').trim_end_matches(" is_error");
                    s.words.push(format!("{call}{named}{err}: {}", c.words).trim_end_matches(": ").to_string());
                    if let Some(t) = tool.as_ref().filter(|t| !s.tools.contains(t)) {
                        s.tools.push(t.clone());
                    }
                }
                if results.is_empty() {
                    s.words.extend(verdicts);
                }
                if s.tools.is_empty() {
                    let first = b.lines().chain(a.lines()).find_map(|l| l.strip_prefix("tool_use "));
                    s.tools.extend(first.and_then(|l| l.split(' ').nth(1)).map(str::to_string));
                }
            }
            if s.tools.is_empty() {
                s.tools.push(NO_TOOL.into());
            }
            out.push(s);
        }
    }
    out.sort_by(|a, b| (version_key(&a.version), &a.probe).cmp(&(version_key(&b.version), &b.probe)));
    out
}

/// The group of a change whose probe calls no tool, or whose goldens are not committed.
pub const NO_TOOL: &str = "(no tool named: goldens of a side not committed)";

fn version_key(v: &str) -> (Option<semver::Version>, String) {
    (semver::Version::parse(v).ok(), v.to_string())
}

/// A text as a Markdown code span (the word diff's `[-…-]{+…+}`, `<tool_use_error>` and `*` shown as they
/// are): fenced with one more backtick than the longest run inside it.
pub fn code_span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// `timeline.md`'s "Changes by tool": per tool (alphabetical), each change of a probe whose result of
/// that tool changed, oldest first, its release linked to its page under `changes` (`../changes`), the
/// words that changed under it.
pub fn by_tool(said: &[Said], changes: &str) -> String {
    let mut groups: BTreeMap<&str, Vec<&Said>> = BTreeMap::new();
    for s in said {
        for t in &s.tools {
            groups.entry(t.as_str()).or_default().push(s);
        }
    }
    let mut out = String::from(
        "\n## Changes by tool\n\nEach change of a probe's outcome or behaviour, under the tool whose result changed (when none \
         did, the first tool the probe calls), oldest first: the release (linked to its page, which carries the whole \
         evidence), the probe, what moved, and the words that changed in each tool result, read from the goldens of \
         both releases (`[-removed-]{+added+}`, `⏎` a line break).\n",
    );
    for (tool, list) in &groups {
        let releases: BTreeSet<&str> = list.iter().map(|s| s.version.as_str()).collect();
        out.push_str(&format!("\n### {tool}\n\n{} change(s) at {} release(s).\n\n", list.len(), releases.len()));
        for s in list {
            out.push_str(&format!(
                "- [{v}]({changes}/{v}.md) (after {}) `{}`: {}\n",
                s.previous,
                s.probe,
                s.what,
                v = s.version
            ));
            for w in &s.words {
                out.push_str(&format!("  - {}\n", code_span(w)));
            }
        }
    }
    out
}

/// A report's text (`probelab diff`'s summary: a line each, nesting by two spaces) as a nested Markdown
/// list of code spans: a viewer wraps it to its width, where a fenced block of lines up to 3,000
/// characters made the release pages scroll sideways.
pub fn as_list(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let depth = (line.len() - line.trim_start().len()) / 2;
        out.push_str(&format!("{}- {}\n", "  ".repeat(depth), code_span(line.trim())));
    }
    out
}

/// A row over the releases as runs of equal values, oldest first: (value, first release, last release,
/// how many releases). A release without a value reads `·`.
pub fn runs(versions: &[String], value: &dyn Fn(&str) -> Option<String>) -> Vec<(String, String, String, usize)> {
    let mut out: Vec<(String, String, String, usize)> = Vec::new();
    for v in versions {
        let x = value(v).unwrap_or_else(|| "·".into());
        match out.last_mut() {
            Some((last, _, to, n)) if *last == x => {
                *to = v.clone();
                *n += 1;
            }
            _ => out.push((x, v.clone(), v.clone(), 1)),
        }
    }
    out
}

/// Runs as words: `holds 2.1.235 – 2.1.276 (34); changed 2.1.277 – 2.1.334 (53)`.
pub fn runs_text(runs: &[(String, String, String, usize)]) -> String {
    runs.iter()
        .map(|(x, a, b, n)| if a == b { format!("{x} {a}") } else { format!("{x} {a} – {b} ({n})") })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_become_words_and_runs_read_as_ranges() {
        assert_eq!(
            plain("behaviour 4c14d2b9301b → e46f27dc5ed2 (result 6 (Grep) text)"),
            "behaviour changed in result 6 (Grep) text"
        );
        assert_eq!(plain("pass → changed"), "pass → changed");
        let versions: Vec<String> = ["1.0.0", "1.0.1", "1.0.2", "1.0.3"].map(String::from).to_vec();
        let value = |v: &str| (v != "1.0.2").then(|| if v < "1.0.1" { "holds" } else { "changed" }.to_string());
        let r = runs(&versions, &value);
        assert_eq!(runs_text(&r), "holds 1.0.0; changed 1.0.1; · 1.0.2; changed 1.0.3");
        let same = |_: &str| Some("holds".to_string());
        assert_eq!(runs_text(&runs(&versions, &same)), "holds 1.0.0 – 1.0.3 (4)");
        assert_eq!(code_span("a `b` c"), "``a `b` c``");
        assert_eq!(code_span("`x"), "`` `x ``");
        assert_eq!(
            as_list("diff a → b\ninterface:\n  ~ Bash\n    x\n\n"),
            "- `diff a → b`\n- `interface:`\n  - `~ Bash`\n    - `x`\n"
        );
    }

    #[test]
    fn a_change_says_its_words_under_the_tool_whose_result_changed() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let golden = d.path();
        let snap = |v: &str, result: &str| {
            let dir = golden.join(format!("claude-code@{v}"));
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
            let t = format!(
                "probe: p\n## request 1\ntool_use toolu_p_1 Glob {{}}\ntool_use toolu_p_2 Grep {{}}\n## request 2\ntool_result toolu_p_1:\n  | a.txt\ntool_result toolu_p_2:\n  | {result}\n## verdicts\npass invariant: i\n"
            );
            std::fs::write(dir.join("p.snap"), t).unwrap_or_else(|e| panic!("{e}"));
        };
        snap("1.0.0", "found 2 lines");
        snap("1.0.1", "found 3 lines");
        let mut m = Matrix { versions: vec!["1.0.0".into(), "1.0.1".into()], ..Matrix::default() };
        m.probe_timeline.insert(
            "p".into(),
            vec![Change {
                previous: "1.0.0".into(),
                version: "1.0.1".into(),
                what: "behaviour aaaaaaaaaaaa → bbbbbbbbbbbb (result 2 (Grep) text)".into(),
            }],
        );
        let s = said(&m, golden, &BTreeMap::new());
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].tools, ["Grep"], "the Glob result did not change");
        assert_eq!(s[0].words, ["tool_result toolu_p_2 (Grep): found [-2-]{+3+} lines"]);
        let md = by_tool(&s, "../changes");
        assert!(md.contains("### Grep\n\n1 change(s) at 1 release(s).\n\n- [1.0.1](../changes/1.0.1.md) (after 1.0.0) `p`: behaviour changed in result 2 (Grep) text\n  - `tool_result toolu_p_2 (Grep): found [-2-]{+3+} lines`\n"), "{md}");
        assert!(!md.contains("### Glob"), "{md}");
        // a side without goldens: the change is still listed, without words
        std::fs::remove_dir_all(golden.join("claude-code@1.0.0")).unwrap_or_else(|e| panic!("{e}"));
        let s = said(&m, golden, &BTreeMap::new());
        assert_eq!((s[0].words.len(), s[0].tools.as_slice()), (0, &[NO_TOOL.to_string()][..]));
    }
}
