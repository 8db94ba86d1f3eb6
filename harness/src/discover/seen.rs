//! Which probes of the catalogue show a difference the exploration found (issue 38: "how many stable
//! differences were found that no existing probe shows"). A release page lists what exploration found
//! beside what the probes found; each finding there says whether a probe shows it too, by name, or that
//! none does — a fact the reader can cite, measured against the committed goldens of both releases.
//!
//! A probe shows a finding when the diff of its goldens between the two releases
//! ([`crate::transcript::diff::diff_dirs_with`], judged by the committed cells as the release page is)
//! changes the same way:
//! - **a result**: the words the finding's two texts differ by ([`word_segments`]: the removed and the
//!   added pieces) are, for at least 40% of their letters and digits ([`COVERED`]), removed or added the
//!   same way in a changed result of a call to the same tool (Write's refusal of a file that is not
//!   UTF-8 shares its words with Edit's, and a probe of Edit does not show what Write does). **A file**:
//!   the same, against the probe's changed files. Only probes whose behaviour moved per the cells count:
//!   goldens of runs that varied show nothing.
//! - **the first request's messages or the model**: the same, against the lines of the probe's
//!   request text and shape that changed (the skill listing is in every probe's first message).
//! - **a tool's interface** (`interface of T`): the probe's requests offer T changed (its description or
//!   schema, added, removed, deferred or not); **the tools offered**: a tool whose place in the list
//!   moved is added, removed, deferred or undeferred in the probe's requests.
//!
//! Decisions: a piece counts by its letters and digits (by its other characters where it has none: a
//! byte-order mark, a final newline); a piece of the probe holds the finding's when it is the same, or,
//! the finding's being at least [`MIN_INSIDE`] letters and digits, contains it, or holds the part of it
//! it is (at least [`MIN_INSIDE`] long: one path of Glob's three). A short piece — Grep's `<cwd>/`
//! prefix that came and went, cron's `7` → `30` days — is held only where the very same piece moved. A
//! probe whose run broke on either side is never said to show anything.

use super::finding::{Finding, Kind};
use crate::transcript::diff::{word_segments, ProbeDiff, SetDiff};
use std::collections::BTreeSet;

/// The share of a finding's changed letters and digits a probe's changes must hold.
pub const COVERED: f64 = 0.4;
/// A piece shorter than this many letters and digits is matched only whole (see the module's doc).
pub const MIN_INSIDE: usize = 6;

/// How much a piece counts: its letters and digits; a piece of none, its other visible characters (a
/// byte-order mark); a piece of white space only (a final newline), one.
fn weight(s: &str) -> usize {
    let alnum = s.chars().filter(|c| c.is_alphanumeric()).count();
    if alnum > 0 {
        return alnum;
    }
    s.chars().filter(|c| !c.is_whitespace()).count().max(1)
}

/// Letters and digits only: whether a piece is long enough to be matched inside another.
fn letters(s: &str) -> usize {
    s.chars().filter(|c| c.is_alphanumeric()).count()
}

/// A changed piece as it is compared: trimmed, unless it is white space only (a final newline, a line
/// end: the change itself).
fn piece(t: char, s: &str) -> (char, String) {
    let s = s.replace('⏎', "\n");
    let trimmed = s.trim();
    (t, if trimmed.is_empty() { s } else { trimmed.to_string() })
}

/// The changed pieces of two texts: (`-` or `+`, the piece).
fn pieces(old: &str, new: &str) -> Vec<(char, String)> {
    word_segments(old, new).into_iter().filter(|(t, s)| *t != '=' && !s.is_empty()).map(|(t, s)| piece(t, &s)).collect()
}

/// What a finding is matched against in a probe's diff.
enum Against<'a> {
    /// The results of calls to this tool.
    Results(&'a str),
    /// The files the checks read.
    Files,
    /// The lines of the request text and shape.
    Request,
}

/// The pieces a probe's diff changed, of what `against` names: (`-` or `+`, the piece; a request's whole
/// line that came or went).
fn probe_pieces(p: &ProbeDiff, against: &Against<'_>) -> Vec<(char, String)> {
    let of = |c: &&crate::transcript::diff::ResultChange| match against {
        Against::Results(tool) => c.tool.as_deref() == Some(*tool),
        Against::Files => c.call.starts_with("file "),
        Against::Request => false,
    };
    let mut out: Vec<(char, String)> = p
        .changes
        .iter()
        .filter(of)
        .flat_map(|c| c.segments.iter())
        .filter(|(t, s)| *t != '=' && !s.is_empty())
        .map(|(t, s)| piece(*t, s))
        .collect();
    if let Against::Request = against {
        for udiff in [&p.rest, &p.shape].into_iter().flatten() {
            for l in udiff.lines().filter(|l| !l.starts_with("---") && !l.starts_with("+++")) {
                if let Some(t @ ('-' | '+')) = l.chars().next() {
                    out.push((t, l[1..].to_string()));
                }
            }
        }
    }
    out
}

/// How much of the finding's piece a probe's piece holds: all of it when the two are the same or the
/// probe's contains it (also as the goldens escape a text: `\n`, `\"`); the probe's own weight when it is
/// a part of the finding's at least [`MIN_INSIDE`] letters and digits long (Glob's one path of three);
/// else nothing. A piece shorter than [`MIN_INSIDE`] is held only by the same piece.
fn held(probe: &(char, String), finding: &(char, String)) -> usize {
    let ((tp, p), (tf, f)) = (probe, finding);
    if tp != tf {
        return 0;
    }
    if p == f {
        return weight(f);
    }
    // a short piece (`<cwd>/`, `7`, a newline) only where the same piece moved: inside a longer one it
    // says nothing
    if letters(f) < MIN_INSIDE {
        return 0;
    }
    let escaped = serde_json::to_string(f).unwrap_or_default();
    let debug = format!("{f:?}");
    let forms = [f.as_str(), escaped.trim_matches('"'), debug.trim_matches('"')];
    if forms.iter().any(|x| !x.is_empty() && p.contains(x)) {
        return weight(f);
    }
    if letters(p) >= MIN_INSIDE && f.contains(p.as_str()) {
        return weight(p).min(weight(f));
    }
    0
}

/// Whether the changes `theirs` hold at least [`COVERED`] of the finding's pieces, by weight.
fn covers(theirs: &[(char, String)], mine: &[(char, String)]) -> bool {
    let total: usize = mine.iter().map(|(_, s)| weight(s)).sum();
    if total == 0 {
        return false;
    }
    let got: usize = mine.iter().map(|m| theirs.iter().map(|t| held(t, m)).max().unwrap_or(0)).sum();
    got as f64 >= COVERED * total as f64
}

/// A tools-offered listing as (name, deferred): `Read NotebookEdit (deferred) Write`.
fn listing(s: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for w in s.split_whitespace() {
        match (w, out.last_mut()) {
            ("(deferred)", Some(last)) => last.1 = true,
            _ => out.push((w.to_string(), false)),
        }
    }
    out
}

/// The probes of `d` (the goldens of the finding's two releases, judged by the cells) that show the
/// finding, by id, sorted; none: no probe of the catalogue shows it.
pub fn shown_by(f: &Finding, d: &SetDiff) -> Vec<String> {
    let live = d.probes.iter().filter(|p| !p.is_broken());
    // the probe's behaviour moved per the cells (or, without cells, per its goldens)
    let moved = |p: &ProbeDiff| !p.same_behaviour();
    let mut out: BTreeSet<String> = BTreeSet::new();
    match (f.kind, f.what.as_str()) {
        (Kind::Request, "tools offered") => {
            let (l, r) = (listing(&f.left), listing(&f.right));
            let moved_tools: BTreeSet<&str> = l
                .iter()
                .filter(|x| !r.contains(x))
                .chain(r.iter().filter(|x| !l.contains(x)))
                .map(|(n, _)| n.as_str())
                .collect();
            for p in live {
                let touched = p
                    .tools_added
                    .iter()
                    .chain(&p.tools_removed)
                    .chain(&p.tools_deferred)
                    .chain(&p.tools_undeferred)
                    .any(|t| moved_tools.contains(t.as_str()));
                if touched {
                    out.insert(p.probe.clone());
                }
            }
        }
        (Kind::Request, what) if what.starts_with("interface of ") => {
            let tool = &what["interface of ".len()..];
            let changed = format!("tool {tool} ");
            for p in live {
                let touched = p.tools_changed.iter().any(|k| k.starts_with(&changed))
                    || p.tools_added
                        .iter()
                        .chain(&p.tools_removed)
                        .chain(&p.tools_deferred)
                        .chain(&p.tools_undeferred)
                        .chain(&p.tools_into_first)
                        .chain(&p.tools_out_of_first)
                        .any(|t| t == tool);
                if touched {
                    out.insert(p.probe.clone());
                }
            }
        }
        (kind, what) => {
            let mine = pieces(&f.left, &f.right);
            let against = match kind {
                Kind::Result => Against::Results(what),
                Kind::File => Against::Files,
                Kind::Request => Against::Request,
            };
            for p in live {
                // a result or a file: only where the probe's behaviour moved per the cells
                if kind != Kind::Request && !moved(p) {
                    continue;
                }
                if covers(&probe_pieces(p, &against), &mine) {
                    out.insert(p.probe.clone());
                }
            }
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::diff::{Fingerprints, ResultChange};

    fn finding(kind: Kind, what: &str, left: &str, right: &str) -> Finding {
        Finding {
            kind,
            session: 0,
            call: Some(1),
            what: what.into(),
            class: "c".into(),
            input: None,
            left: left.into(),
            right: right.into(),
            side: None,
        }
    }

    fn result_probe(id: &str, tool: &str, old: &str, new: &str, same: bool) -> ProbeDiff {
        ProbeDiff {
            probe: id.into(),
            results: Some("x".into()),
            changes: vec![ResultChange {
                call: "tool_result t".into(),
                is_error: None,
                words: String::new(),
                segments: word_segments(old, new),
                tool: Some(tool.into()),
            }],
            fingerprints: Some(Fingerprints { same, ..Fingerprints::default() }),
            ..ProbeDiff::default()
        }
    }

    fn set(probes: Vec<ProbeDiff>) -> SetDiff {
        SetDiff { probes, ..SetDiff::default() }
    }

    #[test]
    fn a_probe_whose_result_moved_the_same_words_shows_a_result_finding() {
        let f = finding(
            Kind::Result,
            "NotebookEdit",
            "Inserted cell undefined with x = 1",
            "Inserted a new cell with x = 1",
        );
        let d = set(vec![
            result_probe(
                "notebook.no-ids",
                "NotebookEdit",
                "Inserted cell undefined with b = 2",
                "Inserted a new cell with b = 2",
                false,
            ),
            result_probe("read.other", "Read", "one two", "one three", false),
        ]);
        assert_eq!(shown_by(&f, &d), vec!["notebook.no-ids".to_string()]);
        // the same words moved in a probe whose cells say its behaviour did not: runs that varied
        let d = set(vec![result_probe(
            "notebook.no-ids",
            "NotebookEdit",
            "Inserted cell undefined with b = 2",
            "Inserted a new cell with b = 2",
            true,
        )]);
        assert!(shown_by(&f, &d).is_empty());
    }

    #[test]
    fn a_short_change_counts_only_where_the_same_piece_moved() {
        // 7 → 30 days: the cron probes show it; a probe where 7 became 8 does not
        let f = finding(Kind::Result, "CronCreate", "Auto-expires after 7 days.", "Auto-expires after 30 days.");
        let shows =
            set(vec![result_probe("cron.durable", "CronCreate", "after 7 days. Use", "after 30 days. Use", false)]);
        let other = set(vec![result_probe("x.y", "CronCreate", "limit 7 lines", "limit 8 lines", false)]);
        assert_eq!(shown_by(&f, &shows), vec!["cron.durable".to_string()]);
        assert!(shown_by(&f, &other).is_empty());
        // Grep's `<cwd>/` prefix gone: a probe where a longer piece holding it went is not the same change
        let g = finding(Kind::Result, "Grep", "<cwd>/tree/a.txt:1:x", "tree/a.txt:1:x");
        let longer = set(vec![result_probe("grep.x", "Grep", "see <cwd>/sub/b.txt now", "see now", false)]);
        assert!(shown_by(&g, &longer).is_empty());
        let same = set(vec![result_probe("grep.y", "Grep", "<cwd>/b.txt:2:y", "b.txt:2:y", false)]);
        assert_eq!(shown_by(&g, &same), vec!["grep.y".to_string()]);
    }

    #[test]
    fn a_probe_showing_part_of_a_listing_holds_that_part() {
        // Glob at 2.1.251: the pattern's directory read from `path`; the probe's tree has one match of three
        let f = finding(Kind::Result, "Glob", "No files found", "tree/sub/c.txt\ntree/sub/d.md\ntree/sub/deep/e.rs");
        let p = result_probe("glob.pattern-from-path", "Glob", "No files found", "tree/sub/c.txt", false);
        assert_eq!(shown_by(&f, &set(vec![p])), vec!["glob.pattern-from-path".to_string()]);
        // one path alone, without the refusal that went: under half of what the finding changed
        let q = result_probe("glob.other", "Glob", "a.txt", "tree/sub/c.txt", false);
        assert!(shown_by(&f, &set(vec![q])).is_empty());
    }

    #[test]
    fn a_result_finding_is_shown_only_by_a_result_of_the_same_tool() {
        // Write's refusal of a file that is not UTF-8 shares its words with Edit's
        let f = finding(
            Kind::Result,
            "Write",
            "has been updated successfully",
            "File is not valid UTF-8: it uses a legacy encoding",
        );
        let edit = result_probe(
            "read.encodings",
            "Edit",
            "String to replace not found",
            "File is not valid UTF-8: it uses a legacy encoding",
            false,
        );
        assert!(shown_by(&f, &set(vec![edit])).is_empty());
        let write = result_probe(
            "write.encodings",
            "Write",
            "has been updated successfully",
            "File is not valid UTF-8: it uses a legacy encoding",
            false,
        );
        assert_eq!(shown_by(&f, &set(vec![write])), vec!["write.encodings".to_string()]);
    }

    #[test]
    fn a_change_of_invisible_characters_is_matched_too() {
        // a final newline kept, a byte-order mark kept: pieces without a letter, matched whole
        let nl = finding(Kind::File, "nb0.ipynb", "{\n}", "{\n}\n");
        let bom = finding(Kind::File, "f9-bom.md", "café end", "\u{feff}café end");
        let file_probe = |id: &str, old: &str, new: &str| ProbeDiff {
            probe: id.into(),
            files: Some("x".into()),
            changes: vec![ResultChange {
                call: "file a".into(),
                is_error: None,
                words: String::new(),
                segments: word_segments(old, new),
                tool: None,
            }],
            fingerprints: Some(Fingerprints::default()),
            ..ProbeDiff::default()
        };
        assert_eq!(
            shown_by(&nl, &set(vec![file_probe("notebook.edit", "[\n]", "[\n]\n")])),
            vec!["notebook.edit".to_string()]
        );
        assert!(shown_by(&nl, &set(vec![file_probe("notebook.edit", "[\n]", "[\n] x")])).is_empty());
        assert_eq!(
            shown_by(&bom, &set(vec![file_probe("read.encodings", "bom", "\u{feff}bom")])),
            vec!["read.encodings".to_string()]
        );
        // a result of the same words in a probe is not a file
        assert!(shown_by(&bom, &set(vec![result_probe("read.x", "Read", "bom", "\u{feff}bom", false)])).is_empty());
    }

    #[test]
    fn a_broken_probe_shows_nothing() {
        let f = finding(Kind::Result, "Write", "EISDIR: illegal operation", "dir is a directory, not a file");
        let mut p =
            result_probe("write.errors", "Write", "EISDIR: illegal operation", "dir is a directory, not a file", false);
        assert_eq!(shown_by(&f, &set(vec![p.clone()])).len(), 1);
        p.fingerprints =
            Some(Fingerprints { broken: "the probe needs repair on 2.1.277".into(), ..Fingerprints::default() });
        assert!(shown_by(&f, &set(vec![p])).is_empty());
    }

    #[test]
    fn interface_and_listing_findings_follow_the_probes_tools() {
        let iface = finding(Kind::Request, "interface of Grep", "a", "b");
        let mut p = ProbeDiff { probe: "grep.basic".into(), ..ProbeDiff::default() };
        assert!(shown_by(&iface, &set(vec![p.clone()])).is_empty());
        p.tools_changed = vec!["tool Grep 1234 → 5678".into()];
        assert_eq!(shown_by(&iface, &set(vec![p.clone()])), vec!["grep.basic".to_string()]);
        // a tool named like the start of another is not it
        let glob = finding(Kind::Request, "interface of Gre", "a", "b");
        assert!(shown_by(&glob, &set(vec![p])).is_empty());

        let offered =
            finding(Kind::Request, "tools offered", "Bash NotebookEdit Read", "Bash NotebookEdit (deferred) Read");
        let mut q = ProbeDiff { probe: "tool-search.select".into(), ..ProbeDiff::default() };
        q.tools_deferred = vec!["Bash".into()];
        assert!(shown_by(&offered, &set(vec![q.clone()])).is_empty());
        q.tools_deferred = vec!["NotebookEdit".into()];
        assert_eq!(shown_by(&offered, &set(vec![q])), vec!["tool-search.select".to_string()]);
    }

    #[test]
    fn a_message_finding_is_matched_in_the_goldens_escaped_request_text() {
        let f = finding(
            Kind::Request,
            "first request's messages",
            "- loop: Run a prompt on an interval \"5m\"\n- init: x",
            "- loop: Run a prompt on a recurring interval \"5m\"\n- init: x",
        );
        let mut p = ProbeDiff { probe: "read.basic".into(), ..ProbeDiff::default() };
        p.rest = Some(
            "--- a\n+++ b\n-text: \"- loop: Run a prompt on an interval \\\"5m\\\"\\n- init: x\"\n+text: \"- loop: Run a \
             prompt on a recurring interval \\\"5m\\\"\\n- init: x\"\n"
                .into(),
        );
        assert_eq!(shown_by(&f, &set(vec![p.clone()])), vec!["read.basic".to_string()]);
        p.rest = Some("-text: \"other\"\n+text: \"words\"\n".into());
        assert!(shown_by(&f, &set(vec![p])).is_empty());
    }
}
