//! The table's cells, columns and renderings (text, JSON, HTML), the cell of a run and of a golden, and
//! which goldens make Claude Code's column: what the command ([`super::run`]) and the committed table
//! ([`super::published`]) both make tables of.

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
    /// Some wording did not hold and the probe has no semantic check: nothing semantic measured.
    WordingOnly,
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
            Mark::WordingOnly => "wording-only",
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
    /// Wording-only cells (nothing semantic measured).
    #[serde(default)]
    pub wording_only: usize,
    /// Cells that differ.
    pub differs: usize,
    /// Cells n-a.
    pub na: usize,
    /// The n-a cells by reason, the most frequent first.
    #[serde(default)]
    pub na_reasons: Vec<(String, usize)>,
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
    /// Per probe (same order), the Claude Code tools its script calls: the per-tool roll-up's rows.
    #[serde(default)]
    pub tools: Vec<Vec<String>>,
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
                Standing::WordingOnly => Mark::WordingOnly,
                Standing::Differs => Mark::Differs,
            };
            let why = match mark {
                Mark::Differs => r
                    .verdicts
                    .iter()
                    .find(|v| {
                        !v.pass
                            && !matches!(
                                v.semantic,
                                crate::check::Semantic::Part(true) | crate::check::Semantic::WordingOnly
                            )
                    })
                    .map(|v| v.name.clone())
                    .unwrap_or(failed),
                _ => failed,
            };
            // checks whose is_error was read from the agent's words (its dialect's refusals), said in the cell
            let from_words: Vec<&str> = r
                .verdicts
                .iter()
                .filter(|v| v.detail.lines().any(|l| l.starts_with(crate::check::READ_FROM_WORDS)))
                .map(|v| v.name.split(':').next().unwrap_or(&v.name))
                .collect();
            let why = match (from_words.is_empty(), why.is_empty()) {
                (true, _) => why,
                (false, true) => format!("is_error read from words in {}", from_words.join(", ")),
                (false, false) => format!("{why} (is_error read from words in {})", from_words.join(", ")),
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
    if let Some(f) = failed.iter().find(|f| !wording_only(f)) {
        return Cell { mark: Mark::Differs, why: f.to_string() };
    }
    // a semantic check, or the semantic part of a wording check (its is_error), that was evaluated
    let skipped: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("skip check ")).collect();
    let evaluated = |n: usize| !skipped.iter().any(|s| s.split(':').next() == Some(&(n + 1).to_string()));
    let measured = probe
        .checks
        .iter()
        .enumerate()
        .any(|(i, (c, ..))| evaluated(i) && (!crate::check::is_wording(c) || c.is_error().is_some()));
    Cell { mark: if measured { Mark::SemanticOnly } else { Mark::WordingOnly }, why: first }
}

impl Column {
    /// A column of cells, summed up.
    pub fn new(subject: &str, source: &str, cells: Vec<Cell>, wall_ms: u64) -> Column {
        let mut s = Summary { wall_ms, ..Summary::default() };
        for c in &cells {
            match c.mark {
                Mark::Pass => s.pass += 1,
                Mark::SemanticOnly => s.semantic_only += 1,
                Mark::WordingOnly => s.wording_only += 1,
                Mark::Differs => s.differs += 1,
                Mark::NA => {
                    s.na += 1;
                    match s.na_reasons.iter_mut().find(|(why, _)| *why == c.why) {
                        Some((_, n)) => *n += 1,
                        None => s.na_reasons.push((c.why.clone(), 1)),
                    }
                }
            }
        }
        // the most frequent first, then by reason (stable across runs)
        s.na_reasons.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let ran = s.pass + s.semantic_only + s.differs;
        s.semantic_share = if ran == 0 { 0.0 } else { (s.pass + s.semantic_only) as f64 / ran as f64 };
        Column { subject: subject.into(), source: source.into(), cells, summary: s }
    }
}

/// One tool's row of the per-tool roll-up: per column, (semantic matches, cells measured, cells).
pub type ToolRow = (String, Vec<(usize, usize, usize)>);

impl Table {
    /// Agent × tool: for each Claude Code tool the probes call, per column, the probes calling it whose
    /// cell is a semantic match (pass, semantic-only), those measured (the same and differs) and all.
    pub fn per_tool(&self) -> Vec<ToolRow> {
        let mut tools: Vec<&String> = self.tools.iter().flatten().collect();
        tools.sort();
        tools.dedup();
        tools
            .into_iter()
            .map(|tool| {
                let rows: Vec<usize> =
                    (0..self.probes.len()).filter(|&i| self.tools.get(i).is_some_and(|ts| ts.contains(tool))).collect();
                let per = self
                    .columns
                    .iter()
                    .map(|c| {
                        let marks = rows.iter().filter_map(|&i| c.cells.get(i)).map(|c| c.mark);
                        let (mut m, mut r) = (0, 0);
                        for mark in marks {
                            m += usize::from(matches!(mark, Mark::Pass | Mark::SemanticOnly));
                            r += usize::from(matches!(mark, Mark::Pass | Mark::SemanticOnly | Mark::Differs));
                        }
                        (m, r, rows.len())
                    })
                    .collect();
                (tool.clone(), per)
            })
            .collect()
    }

    /// A subject's summary line.
    fn summary_line(c: &Column) -> String {
        let s = &c.summary;
        format!(
            "{} ({}): {} pass, {} semantic-only, {} wording-only, {} differs, {} n-a; semantic matches {:.0}% of {} measured{}",
            c.subject,
            c.source,
            s.pass,
            s.semantic_only,
            s.wording_only,
            s.differs,
            s.na,
            s.semantic_share * 100.0,
            s.pass + s.semantic_only + s.differs,
            if s.wall_ms > 0 { format!(", {:.1} s", s.wall_ms as f64 / 1000.0) } else { String::new() }
        )
    }

    /// The table as text: a line per probe, a column per subject; the summaries with the n-a reasons
    /// counted; the per-tool roll-up; every cell's reason that is not a pass.
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
            out.push_str(&Self::summary_line(c));
            out.push('\n');
            for (why, n) in &c.summary.na_reasons {
                out.push_str(&format!("  n-a {n} × {why}\n"));
            }
        }
        let per_tool = self.per_tool();
        if !per_tool.is_empty() {
            out.push_str("\nPer tool (semantic matches / cells measured, of the probes calling it):\n");
            let tw = per_tool.iter().map(|(t, _)| t.len()).max().unwrap_or(4).max(4);
            let mut head = format!("{:<tw$}", "tool");
            for (c, n) in self.columns.iter().zip(&cw) {
                head.push_str(&format!("  {:<n$}", c.subject));
            }
            out.push_str(head.trim_end());
            out.push('\n');
            for (tool, per) in &per_tool {
                let mut line = format!("{tool:<tw$}");
                for ((m, r, all), n) in per.iter().zip(&cw) {
                    line.push_str(&format!("  {:<n$}", format!("{m}/{r} of {all}")));
                }
                out.push_str(line.trim_end());
                out.push('\n');
            }
        }
        let reasons: Vec<String> = self
            .columns
            .iter()
            .flat_map(|c| {
                let told = |cell: &&Cell| cell.mark != Mark::Pass || !cell.why.is_empty();
                self.probes
                    .iter()
                    .zip(&c.cells)
                    .filter(move |(_, cell)| told(cell))
                    .map(move |(p, cell)| format!("{} {p}: {} — {}", c.subject, cell.mark.word(), terse(&cell.why)))
            })
            .collect();
        if !reasons.is_empty() {
            out.push_str("\nReasons:\n");
            for r in reasons {
                out.push_str(&r);
                out.push('\n');
            }
        }
        out
    }

    /// The table as JSON (what [`Table`] deserialises from).
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// The table as a self-contained HTML page (no script, no external resource): summaries, the
    /// per-tool roll-up, and the cells with their reasons written in them.
    pub fn html(&self) -> String {
        let esc = crate::html::escape;
        let mut out = String::from(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>probelab conformance</title>\n<style>\nbody{font:14px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}small{color:#555}\n.pass{background:#d8f5d8}.semantic-only{background:#fff3c4}.wording-only{background:#e8e8f8}.differs{background:#f8d0d0}.n-a{color:#888}\n</style></head><body>\n<h1>Conformance: Claude Code's probes across subjects</h1>\n<table id=\"summary\"><tr><th>subject</th><th>source</th><th>pass</th><th>semantic-only</th><th>wording-only</th><th>differs</th><th>n-a</th><th>semantic matches</th><th>n-a reasons</th></tr>\n",
        );
        for c in &self.columns {
            let s = &c.summary;
            let reasons: Vec<String> = s.na_reasons.iter().map(|(w, n)| format!("{n} × {}", esc(w))).collect();
            out.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}%</td><td><small>{}</small></td></tr>\n",
                esc(&c.subject),
                esc(&c.source),
                s.pass,
                s.semantic_only,
                s.wording_only,
                s.differs,
                s.na,
                s.semantic_share * 100.0,
                reasons.join("<br>")
            ));
        }
        out.push_str("</table>\n");
        let per_tool = self.per_tool();
        if !per_tool.is_empty() {
            out.push_str("<h2>Per tool</h2>\n<p>Semantic matches / cells measured, of the probes calling the tool.</p>\n<table id=\"per-tool\"><tr><th>tool</th>");
            for c in &self.columns {
                out.push_str(&format!("<th>{}</th>", esc(&c.subject)));
            }
            out.push_str("</tr>\n");
            for (tool, per) in &per_tool {
                out.push_str(&format!("<tr><td>{}</td>", esc(tool)));
                for (m, r, all) in per {
                    out.push_str(&format!("<td>{m}/{r} of {all}</td>"));
                }
                out.push_str("</tr>\n");
            }
            out.push_str("</table>\n");
        }
        out.push_str("<h2>Cells</h2>\n<table id=\"cells\"><tr><th>probe</th>");
        for c in &self.columns {
            out.push_str(&format!("<th>{}</th>", esc(&c.subject)));
        }
        out.push_str("</tr>\n");
        for (i, p) in self.probes.iter().enumerate() {
            out.push_str(&format!("<tr><td>{}</td>", esc(p)));
            for c in &self.columns {
                match c.cells.get(i) {
                    Some(cell) if cell.why.is_empty() => {
                        out.push_str(&format!("<td class=\"{m}\">{m}</td>", m = cell.mark.word()))
                    }
                    Some(cell) => out.push_str(&format!(
                        "<td class=\"{m}\">{m}<br><small>{}</small></td>",
                        esc(&terse(&cell.why)),
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

/// The Claude Code tools a probe's script calls (every conversation), sorted, once each.
pub fn tools_called(probe: &Probe) -> Vec<String> {
    let s = &probe.script;
    let turns = s.turns.iter().chain(s.conversations.iter().flat_map(|c| c.turns.iter()));
    let mut tools: Vec<String> = turns.flat_map(|t| t.tool_use.iter()).map(|u| u.name.clone()).collect();
    tools.sort();
    tools.dedup();
    tools
}

/// A reason on one line (a run's failure may span several): its first line, cut at 200 characters.
fn terse(why: &str) -> String {
    let first = why.lines().next().unwrap_or("");
    match first.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &first[..i]),
        None => first.to_string(),
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
        Some(v) if crate::transcript::golden::claude_code_dir(golden, v).is_dir() => Ok(Some(v.to_string())),
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
