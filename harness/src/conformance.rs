//! The conformance table (`probelab conformance`): Claude Code's probes × subjects — the built-in
//! runtime, Claude Code at its newest committed goldens, each third-party agent at its pinned version —
//! with a cell per run:
//!
//! - `pass`: every check and invariant held;
//! - `semantic-only`: what happened is Claude Code's (files on disk, is_error, the content returned,
//!   what a search found: the *semantic* checks, [`crate::check::Standing`]) but some of its exact texts
//!   are not (the *wording* checks);
//! - `differs`: a semantic check or an invariant failed (or the run could not be made);
//! - `n-a`: the probe cannot be put to the subject (a tool its dialect lacks, Claude Code's settings),
//!   or is not for it, with the reason.
//!
//! Per subject: the counts and the share of semantic matches, (pass + semantic-only) / (pass +
//! semantic-only + differs). Claude Code's column is read from its goldens (`golden/claude-code@V/`,
//! the verdict lines each golden records) rather than run (minutes per probe on a shared machine): a
//! golden without a failed verdict is `pass`; one whose only failures are wording checks without an
//! `is_error` is `semantic-only`; any other failure is `differs`; no golden is `n-a`. Written as text,
//! JSON and HTML under `docs/conformance/`.

use crate::check::{standing, Standing};
use crate::probe::Probe;
use crate::suite::{Outcome, Status};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A cell's standing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mark {
    /// Every check held.
    Pass,
    /// The semantic checks held, some wording did not.
    SemanticOnly,
    /// A semantic check or an invariant failed.
    Differs,
    /// Not applicable.
    NA,
}

impl Mark {
    /// As the table writes it.
    pub fn word(self) -> &'static str {
        match self {
            Mark::Pass => "pass",
            Mark::SemanticOnly => "semantic-only",
            Mark::Differs => "differs",
            Mark::NA => "n-a",
        }
    }
}

/// One probe on one subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// Its standing.
    pub mark: Mark,
    /// Why (n-a: the reason; differs / semantic-only: the first failed verdict's name).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

/// One subject's column summed up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Cells that passed.
    pub pass: usize,
    /// Semantic-only cells.
    pub semantic_only: usize,
    /// Cells that differ.
    pub differs: usize,
    /// Cells n-a.
    pub na: usize,
    /// (pass + semantic-only) / (pass + semantic-only + differs), 0 when nothing ran.
    pub semantic_share: f64,
    /// Wall time of its column (ms; 0 for one read from goldens).
    pub wall_ms: u64,
}

/// A subject's column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// `opencode@1.18.33`.
    pub subject: String,
    /// How the column was made: `run` or `goldens`.
    pub source: String,
    /// One cell per probe, in the table's probe order.
    pub cells: Vec<Cell>,
    /// Its summary.
    pub summary: Summary,
}

/// The table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// Probe ids, in order.
    pub probes: Vec<String>,
    /// Columns, in order.
    pub columns: Vec<Column>,
}

/// The cell of a run's outcome.
pub fn cell_of(o: &Outcome) -> Cell {
    match (&o.status, &o.report) {
        (Status::Skipped(why), _) => Cell { mark: Mark::NA, why: why.why.clone() },
        (_, Some(r)) => {
            let failed = r.verdicts.iter().find(|v| !v.pass).map(|v| v.name.clone()).unwrap_or_default();
            let mark = match standing(&r.verdicts) {
                Standing::Pass => Mark::Pass,
                Standing::SemanticOnly => Mark::SemanticOnly,
                Standing::Differs => Mark::Differs,
            };
            let why = match mark {
                Mark::Differs => r
                    .verdicts
                    .iter()
                    .find(|v| !v.pass && v.semantic != Some(true))
                    .map(|v| v.name.clone())
                    .unwrap_or(failed),
                _ => failed,
            };
            Cell { mark, why }
        }
        (_, None) => Cell { mark: Mark::Differs, why: o.detail.lines().next().unwrap_or("the run failed").to_string() },
    }
}

/// The cell of a probe read from its golden text (None: no golden).
pub fn cell_of_golden(probe: &Probe, golden: Option<&str>) -> Cell {
    let Some(text) = golden else {
        return Cell { mark: Mark::NA, why: "no golden at this version".into() };
    };
    let failed: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("FAIL ")).collect();
    if failed.is_empty() {
        return Cell { mark: Mark::Pass, why: String::new() };
    }
    // a failed check of wording whose semantic part cannot have failed (it asserts no is_error)
    let wording_only = |name: &str| -> bool {
        let Some(n) =
            name.strip_prefix("check ").and_then(|r| r.split(':').next()).and_then(|n| n.parse::<usize>().ok())
        else {
            return false;
        };
        probe.checks.get(n.wrapping_sub(1)).is_some_and(|(c, ..)| crate::check::is_wording(c) && c.is_error().is_none())
    };
    let first = failed[0].to_string();
    match failed.iter().find(|f| !wording_only(f)) {
        Some(f) => Cell { mark: Mark::Differs, why: f.to_string() },
        None => Cell { mark: Mark::SemanticOnly, why: first },
    }
}

impl Column {
    /// A column of cells, summed up.
    pub fn new(subject: &str, source: &str, cells: Vec<Cell>, wall_ms: u64) -> Column {
        let mut s = Summary { wall_ms, ..Summary::default() };
        for c in &cells {
            match c.mark {
                Mark::Pass => s.pass += 1,
                Mark::SemanticOnly => s.semantic_only += 1,
                Mark::Differs => s.differs += 1,
                Mark::NA => s.na += 1,
            }
        }
        let ran = s.pass + s.semantic_only + s.differs;
        s.semantic_share = if ran == 0 { 0.0 } else { (s.pass + s.semantic_only) as f64 / ran as f64 };
        Column { subject: subject.into(), source: source.into(), cells, summary: s }
    }
}

impl Table {
    /// The table as text: a line per probe, a column per subject, then the summaries.
    pub fn text(&self) -> String {
        let w = self.probes.iter().map(|p| p.len()).max().unwrap_or(5).max(5);
        let cw = self.columns.iter().map(|c| c.subject.len().max(13)).collect::<Vec<_>>();
        let mut out = format!("{:<w$}", "probe");
        for (c, n) in self.columns.iter().zip(&cw) {
            out.push_str(&format!("  {:<n$}", c.subject));
        }
        out = out.trim_end().to_string() + "\n";
        for (i, p) in self.probes.iter().enumerate() {
            let mut line = format!("{p:<w$}");
            for (c, n) in self.columns.iter().zip(&cw) {
                let mark = c.cells.get(i).map(|c| c.mark.word()).unwrap_or("?");
                line.push_str(&format!("  {mark:<n$}"));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out.push('\n');
        for c in &self.columns {
            let s = &c.summary;
            out.push_str(&format!(
                "{} ({}): {} pass, {} semantic-only, {} differs, {} n-a; semantic matches {:.0}% of {} run{}\n",
                c.subject,
                c.source,
                s.pass,
                s.semantic_only,
                s.differs,
                s.na,
                s.semantic_share * 100.0,
                s.pass + s.semantic_only + s.differs,
                if s.wall_ms > 0 { format!(", {:.1} s", s.wall_ms as f64 / 1000.0) } else { String::new() }
            ));
        }
        out
    }

    /// The table as JSON (what [`Table`] deserialises from).
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// The table as a self-contained HTML page (no script, no external resource).
    pub fn html(&self) -> String {
        let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
        let mut out = String::from(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>probelab conformance</title>\n<style>\nbody{font:14px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:2px 6px;text-align:left}\n.pass{background:#d8f5d8}.semantic-only{background:#fff3c4}.differs{background:#f8d0d0}.n-a{color:#888}\n</style></head><body>\n<h1>Conformance: Claude Code's probes across subjects</h1>\n<table id=\"summary\"><tr><th>subject</th><th>source</th><th>pass</th><th>semantic-only</th><th>differs</th><th>n-a</th><th>semantic matches</th></tr>\n",
        );
        for c in &self.columns {
            let s = &c.summary;
            out.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}%</td></tr>\n",
                esc(&c.subject),
                esc(&c.source),
                s.pass,
                s.semantic_only,
                s.differs,
                s.na,
                s.semantic_share * 100.0
            ));
        }
        out.push_str("</table>\n<h2>Cells</h2>\n<table id=\"cells\"><tr><th>probe</th>");
        for c in &self.columns {
            out.push_str(&format!("<th>{}</th>", esc(&c.subject)));
        }
        out.push_str("</tr>\n");
        for (i, p) in self.probes.iter().enumerate() {
            out.push_str(&format!("<tr><td>{}</td>", esc(p)));
            for c in &self.columns {
                match c.cells.get(i) {
                    Some(cell) => out.push_str(&format!(
                        "<td class=\"{m}\" title=\"{}\">{m}</td>",
                        esc(&cell.why),
                        m = cell.mark.word()
                    )),
                    None => out.push_str("<td></td>"),
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n</body></html>\n");
        out
    }

    /// Writes `table.txt`, `table.json` and `table.html` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (name, text) in [("table.txt", self.text()), ("table.json", self.json()), ("table.html", self.html())] {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(())
    }
}

/// The Claude Code version whose goldens make the table's reference column, from `--claude-code`:
/// `none` leaves it out, a version needs its goldens (`golden/claude-code@V/`), and without the option
/// the newest version with goldens is taken (none when there are none).
pub fn reference_version(arg: Option<&str>, golden: &Path) -> Result<Option<String>, String> {
    let with_goldens = || -> Vec<semver::Version> {
        let mut vs: Vec<semver::Version> = std::fs::read_dir(golden)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("claude-code@").map(str::to_string))
            .filter_map(|v| semver::Version::parse(&v).ok())
            .collect();
        vs.sort();
        vs
    };
    match arg {
        Some("none") => Ok(None),
        Some(v) if golden.join(format!("claude-code@{v}")).is_dir() => Ok(Some(v.to_string())),
        Some(v) => {
            let vs = with_goldens();
            let range = match (vs.first(), vs.last()) {
                (Some(a), Some(b)) => format!("the versions with goldens run from {a} to {b} ({} in all)", vs.len()),
                _ => "no version has goldens".to_string(),
            };
            Err(format!(
                "--claude-code {v}: no goldens of claude-code@{v} in {} ({range}; `none` leaves the column out)",
                golden.display()
            ))
        }
        None => Ok(with_goldens().last().map(|v| v.to_string())),
    }
}

/// Where the reference column goes among the columns run: first, or after the built-in runtime's when
/// the table starts with it — never between two agents.
pub fn reference_place(columns: &[Column]) -> usize {
    usize::from(columns.first().is_some_and(|c| c.subject == "builtin" || c.subject.starts_with("builtin@")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(mark: Mark) -> Cell {
        Cell { mark, why: String::new() }
    }

    #[test]
    fn the_reference_column_is_left_out_with_none_refused_without_goldens_and_never_between_agents() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for v in ["2.1.235", "2.1.334", "2.1.40"] {
            std::fs::create_dir(d.path().join(format!("claude-code@{v}"))).unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(reference_version(Some("none"), d.path()), Ok(None));
        assert_eq!(reference_version(None, d.path()), Ok(Some("2.1.334".into())), "the newest by semver");
        assert_eq!(reference_version(Some("2.1.235"), d.path()), Ok(Some("2.1.235".into())));
        let e = reference_version(Some("9.9.9"), d.path()).unwrap_err();
        assert!(
            e.contains("no goldens of claude-code@9.9.9") && e.contains("from 2.1.40 to 2.1.334 (3 in all)"),
            "{e}"
        );
        assert_eq!(reference_version(None, &d.path().join("absent")), Ok(None));
        let col = |s: &str| Column::new(s, "run", Vec::new(), 0);
        assert_eq!(reference_place(&[col("opencode@1.18.33"), col("pi@0.73.1")]), 0);
        assert_eq!(reference_place(&[col("builtin"), col("pi@0.73.1")]), 1);
        assert_eq!(reference_place(&[]), 0);
    }

    #[test]
    fn a_column_counts_its_cells_and_its_share_of_semantic_matches() {
        let c = Column::new(
            "pi@0.73.1",
            "run",
            vec![
                cell(Mark::Pass),
                cell(Mark::SemanticOnly),
                cell(Mark::SemanticOnly),
                cell(Mark::Differs),
                cell(Mark::NA),
            ],
            1500,
        );
        assert_eq!((c.summary.pass, c.summary.semantic_only, c.summary.differs, c.summary.na), (1, 2, 1, 1));
        assert!((c.summary.semantic_share - 0.75).abs() < 1e-9);
        let t = Table { probes: (1..=5).map(|i| format!("p.{i}")).collect(), columns: vec![c] };
        let text = t.text();
        assert!(
            text.contains(
                "pi@0.73.1 (run): 1 pass, 2 semantic-only, 1 differs, 1 n-a; semantic matches 75% of 4 run, 1.5 s"
            ),
            "{text}"
        );
        assert!(text.lines().nth(2).is_some_and(|l| l.ends_with("semantic-only")), "{text}");
        let back: Table = serde_json::from_str(&t.json()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, t);
        assert!(t.html().contains("<td class=\"differs\" title=\"\">differs</td>"));
        let empty = Column::new("x", "run", vec![cell(Mark::NA)], 0);
        assert_eq!(empty.summary.semantic_share, 0.0);
    }
}
