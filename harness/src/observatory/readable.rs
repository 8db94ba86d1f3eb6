//! What the generated pages say of each change, in words a person reads (issue 43, item 3): every change
//! of a probe in the timeline with the words of the results that changed — read from the goldens of both
//! releases, as `probelab diff` does ([`super::report::Matrix::said`]) — and the tools they are of;
//! `timeline.md`'s "Changes by tool" ([`by_tool`]) and the hover text of matrix.html's cells are made
//! of these. Run-length helpers
//! ([`runs`]) write a row over the releases as ranges instead of a column per release.

use std::collections::{BTreeMap, BTreeSet};

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

/// The group of a change whose probe calls no tool, or whose goldens are not committed.
pub const NO_TOOL: &str = "(no tool named: goldens of a side not committed)";

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
}
