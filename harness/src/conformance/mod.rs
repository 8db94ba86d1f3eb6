//! The conformance table (`probelab conformance`): Claude Code's probes × subjects — the built-in
//! runtime, Claude Code at its newest committed goldens, each third-party agent at its pinned version —
//! with a cell per run:
//!
//! - `pass`: every check and invariant held;
//! - `semantic-only`: what happened is Claude Code's (files on disk, is_error, the content returned,
//!   what a search found: the *semantic* checks, [`crate::check::Standing`]) but some of its exact texts
//!   are not (the *wording* checks);
//!   are not (the *wording* checks) — only where the probe has a semantic check that was evaluated;
//! - `wording-only`: some texts differ and the probe checks nothing but texts, so nothing says whether
//!   what happened is Claude Code's (an agent that answered a Read with an error fails every text
//!   assertion of such a probe; it is not counted as a semantic match);
//! - `differs`: a semantic check or an invariant failed (or the run could not be made);
//! - `n-a`: the probe cannot be put to the subject (a tool its dialect lacks, Claude Code's settings),
//!   or is not for it, with the reason.
//!
//! Every cell but a pass carries its reason (the first failed verdict that decided it, or why n-a) in
//! the text table's "Reasons" and in the HTML cell, not only in the JSON. Per subject: the counts, the
//! share of semantic matches, (pass + semantic-only) / (pass + semantic-only + differs) — wording-only
//! cells measured nothing semantic and stay out of it —, and the n-a reasons counted; per Claude Code
//! tool (the tools a probe's script calls) and subject: semantic matches / cells measured. Claude
//! Code's column is read from its goldens (`golden/claude-code@V/`, the verdict lines each golden
//! records) rather than run (minutes per probe on a shared machine), by the same rule: a golden without
//! a failed verdict is `pass`; one whose only failures are wording checks without an `is_error` is
//! `semantic-only` when the probe has another check that is semantic, else `wording-only`; any other
//! failure is `differs`; no golden is `n-a`. Written as text, JSON and HTML
//! (`target/probelab/conformance/` by default). `--publish` also keeps the agents' columns in the
//! committed table, `docs/conformance/` ([`published`]), which the observatory's stale-file rule holds.
//!
//! The agents it runs by default ([`pinned_agents`]): OpenCode and pi (registered kinds, at their pinned
//! versions) and the command subjects the project pins with an `install` (this repository's
//! probelab.toml: GitHub Copilot CLI and Qwen Code).

pub mod published;

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

/// What `probelab conformance` runs: probe paths (empty: the project's probes), subjects (empty: builtin
/// and every registered agent at its pinned version), the Claude Code version of the reference column.
pub struct Selection {
    /// Probe files or directories (empty: the project's probes).
    pub paths: Vec<std::path::PathBuf>,
    /// The subjects (empty: builtin and every registered agent at its pinned version).
    pub subjects: Vec<String>,
    /// The Claude Code version of the reference column (`none`: no such column).
    pub claude_code: Option<String>,
    /// Also merge the agents' columns into the committed table (`docs/conformance/`, [`published`])
    /// and make its files again.
    pub publish: bool,
}

/// The third-party agents the project pins, as `--subject` names them: the registered kinds at their
/// pinned versions (`opencode@1.18.33`), then the command subjects with an `install`, by name.
pub fn pinned_agents(registry: &crate::subject::Registry) -> Vec<String> {
    let registered =
        crate::subject::REGISTERED.iter().filter_map(|r| r.pinned.map(|v| format!("{}@{v}", r.kind.name())));
    let commands = registry.commands().iter().filter(|(_, c)| c.install.is_some()).map(|(n, _)| n.clone());
    registered.chain(commands).collect()
}

/// `probelab conformance`: exit 2 on a subject or probe-file error, 1 when the table cannot be written.
pub fn run(
    project: &crate::project::Project,
    layout: &crate::lab::Layout,
    out: &Path,
    sel: Selection,
    jobs: Option<usize>,
) -> crate::exit::Outcome {
    use crate::exit::{Failure, Usage as _};
    use anyhow::Context as _;
    use std::process::ExitCode;
    let Selection { paths, subjects, claude_code, publish } = sel;
    let registry = project.registry();
    let pinned = pinned_agents(&registry);
    let names: Vec<String> = match (subjects.is_empty(), publish) {
        (true, false) => std::iter::once("builtin".to_string()).chain(pinned.iter().cloned()).collect(),
        (true, true) => pinned.clone(),
        (false, _) => subjects,
    };
    if let Some(other) = names.iter().find(|n| publish && !pinned.contains(n)) {
        return Err(Failure::msg(
            2,
            format!(
                "--publish --subject {other}: the committed table keeps the columns of the agents the project pins ({}); \
                 the built-in runtime's follows the code",
                pinned.join(", ")
            ),
        ));
    }
    let ids = names.iter().map(|n| registry.parse(n)).collect::<Result<Vec<_>, _>>().usage()?;
    // checked before any column runs (minutes each)
    let reference_goldens =
        reference_version(claude_code.as_deref(), &project.golden).map_err(|e| Failure::msg(2, e))?;
    let paths = if paths.is_empty() { vec![project.probes.clone()] } else { paths };
    let probes = crate::probe::load_all_with(&paths, &project.known()).usage()?;
    // Claude Code's probes: the catalogue the table is about
    let reference = crate::subject::SubjectId::claude_code(crate::subject::id::REFERENCE_VERSION);
    let probes: Vec<_> = probes.into_iter().filter(|p| p.applies_to(&reference)).collect();
    if probes.is_empty() {
        let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(Failure::msg(
            2,
            format!("no probe of Claude Code's under {} (the table's rows are Claude Code's probes)", shown.join(", ")),
        ));
    }
    let jobs = jobs.unwrap_or_else(crate::suite::default_jobs).clamp(1, crate::suite::MAX_JOBS);
    let rt = crate::suite::runtime(jobs).context("cannot start the runtime").usage()?;
    let mut columns = Vec::new();
    let mut unpublished = Vec::new();
    for id in ids {
        let opts = crate::suite::Options { subject: id.clone(), jobs, bless: false, keep: false, durations: None };
        let began = std::time::Instant::now();
        let mut cells = Vec::new();
        let mut described = String::new();
        let mut made = Vec::new();
        rt.block_on(crate::suite::run_suite(probes.clone(), layout, &opts, |o| {
            if let Some(r) = &o.report {
                described.clone_from(&r.description);
            }
            // a run that could not be made measured nothing of the subject; a skip (n-a) is a fact
            made.push(o.report.is_some() || matches!(o.status, crate::suite::Status::Skipped(_)));
            cells.push(cell_of(&o));
        }));
        if publish {
            let ran = published::Ran {
                subject: id.to_string(),
                described,
                cells: probes.iter().zip(&cells).zip(&made).map(|((p, c), m)| (p, c.clone(), *m)).collect(),
            };
            let broken = published::merge(&project.root, &probes, &ran).map_err(|e| Failure::msg(1, e))?;
            unpublished.extend(broken.into_iter().map(|b| format!("{id} {b}")));
        }
        let col = Column::new(&id.to_string(), "run", cells, began.elapsed().as_millis() as u64);
        eprintln!(
            "conformance: {}",
            Table { probes: Vec::new(), tools: Vec::new(), columns: vec![col.clone()] }.text().trim()
        );
        columns.push(col);
    }
    // Claude Code's column from its goldens
    if let Some(v) = reference_goldens {
        let dir = crate::transcript::golden::claude_code_dir(&project.golden, &v);
        let cells = probes
            .iter()
            .map(|p| cell_of_golden(p, std::fs::read_to_string(dir.join(format!("{}.snap", p.id))).ok().as_deref()))
            .collect();
        columns.insert(reference_place(&columns), Column::new(&crate::observatory::subject(&v), "goldens", cells, 0));
    }
    let table = Table {
        probes: probes.iter().map(|p| p.id.clone()).collect(),
        tools: probes.iter().map(tools_called).collect(),
        columns,
    };
    print!("{}", table.text());
    table.write(out).map_err(|e| Failure::msg(1, e))?;
    eprintln!("conformance: wrote {}/table.{{txt,json,html}}", out.display());
    if publish {
        let all = crate::probe::load_all_with(std::slice::from_ref(&project.probes), &project.known()).usage()?;
        published::write_table(&project.root, &all, &project.golden, &pinned).map_err(|e| Failure::msg(1, e))?;
        eprintln!("conformance: published into {}", published::dir(&project.root).display());
        if !unpublished.is_empty() {
            return Err(Failure::msg(
                1,
                format!("not published, the run could not be made:\n  {}", unpublished.join("\n  ")),
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
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
    fn a_column_counts_its_cells_its_share_of_semantic_matches_and_its_n_a_reasons() {
        let why = |mark, why: &str| Cell { mark, why: why.into() };
        let c = Column::new(
            "pi@0.73.1",
            "run",
            vec![
                cell(Mark::Pass),
                why(Mark::SemanticOnly, "check 2: result 1"),
                why(Mark::SemanticOnly, "check 1: result 1"),
                why(Mark::Differs, "check 1: file a.txt"),
                why(Mark::NA, "Task has no counterpart among pi's tools"),
                why(Mark::WordingOnly, "check 1: result 1"),
                why(Mark::NA, "Task has no counterpart among pi's tools"),
                why(Mark::NA, "the probe's plugins are Claude Code's"),
            ],
            1500,
        );
        let s = &c.summary;
        assert_eq!((s.pass, s.semantic_only, s.wording_only, s.differs, s.na), (1, 2, 1, 1, 3));
        assert!((s.semantic_share - 0.75).abs() < 1e-9, "wording-only is out of the share: {}", s.semantic_share);
        assert_eq!(
            s.na_reasons,
            vec![
                ("Task has no counterpart among pi's tools".to_string(), 2),
                ("the probe's plugins are Claude Code's".to_string(), 1)
            ]
        );
        let tools = |t: &[&str]| t.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let t = Table {
            probes: (1..=8).map(|i| format!("p.{i}")).collect(),
            tools: vec![
                tools(&["Read"]),
                tools(&["Read"]),
                tools(&["Edit", "Read"]),
                tools(&["Edit"]),
                tools(&["Task"]),
                tools(&["Read"]),
                tools(&["Task"]),
                tools(&["Read"]),
            ],
            columns: vec![c],
        };
        let text = t.text();
        assert!(
            text.contains(
                "pi@0.73.1 (run): 1 pass, 2 semantic-only, 1 wording-only, 1 differs, 3 n-a; semantic matches 75% of 4 measured, 1.5 s\n  n-a 2 × Task has no counterpart among pi's tools\n  n-a 1 × the probe's plugins are Claude Code's\n"
            ),
            "{text}"
        );
        assert!(text.lines().nth(2).is_some_and(|l| l.ends_with("semantic-only")), "{text}");
        // Read: p.1 pass, p.2 and p.3 semantic-only, p.6 wording-only (not measured), p.8 n-a
        assert_eq!(t.per_tool()[1], ("Read".to_string(), vec![(3, 3, 5)]));
        assert_eq!(t.per_tool()[0], ("Edit".to_string(), vec![(1, 2, 2)]));
        assert!(text.contains("\nRead  3/3 of 5\n"), "{text}");
        assert!(text.contains("\npi@0.73.1 p.4: differs — check 1: file a.txt\n"), "{text}");
        assert!(text.contains("\npi@0.73.1 p.6: wording-only — check 1: result 1\n"), "{text}");
        assert!(!text.contains("p.1: pass"), "a pass needs no reason: {text}");
        let back: Table = serde_json::from_str(&t.json()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, t);
        let html = t.html();
        assert!(html.contains("<td class=\"differs\">differs<br><small>check 1: file a.txt</small></td>"), "{html}");
        assert!(html.contains("<td class=\"pass\">pass</td>"), "{html}");
        assert!(html.contains("<tr><td>Read</td><td>3/3 of 5</td></tr>"), "{html}");
        assert!(html.contains("<small>2 × Task has no counterpart among pi&#39;s tools<br>1 × the probe"), "{html}");
        let empty = Column::new("x", "run", vec![cell(Mark::NA)], 0);
        assert_eq!(empty.summary.semantic_share, 0.0);
    }

    fn probe(checks: &str) -> Probe {
        let text = format!(
            "id = \"t.p\"\nclaims = [\"READ-1\"]\nabout = \"x\"\nsubjects = [\"claude-code\"]\n[[turn]]\ntool_use = [{{ name = \"Read\", input = {{ file_path = \"{{cwd}}/f\" }} }}]\n[[turn]]\ntext = \"done\"\n{checks}"
        );
        crate::probe::parse(std::path::Path::new("t.toml"), &text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_probe_of_wording_alone_is_wording_only_where_its_texts_fail_never_semantic_only() {
        let texts = probe("[[check]]\nresult = 1\ncontains = \"one\"\n[[check]]\nresult = 1\nnot_contains = \"two\"\n");
        let golden = "pass invariant: no request refused by the stub\nFAIL check 1: result 1\nFAIL check 2: result 1\n";
        assert_eq!(
            cell_of_golden(&texts, Some(golden)),
            Cell { mark: Mark::WordingOnly, why: "check 1: result 1".into() }
        );
        // with a semantic check that held, the same failures are semantic-only
        let with_file = probe("[[check]]\nresult = 1\ncontains = \"one\"\n[[check]]\nfile = \"f\"\nexists = true\n");
        let golden = "FAIL check 1: result 1\npass check 2: file f\n";
        assert_eq!(cell_of_golden(&with_file, Some(golden)).mark, Mark::SemanticOnly);
        // ... unless that check was not evaluated (scoped to other versions)
        let golden = "FAIL check 1: result 1\nskip check 2: file f (versions >=2.1.300)\n";
        assert_eq!(cell_of_golden(&with_file, Some(golden)).mark, Mark::WordingOnly);
        // a wording check asserting is_error has a semantic part
        let c = |p: &Probe, i: usize| crate::check::semantic_of(&p.checks[i].0);
        use crate::check::Semantic;
        assert_eq!((c(&texts, 0), c(&with_file, 1)), (Semantic::WordingOnly, Semantic::Whole));
        let is_error = probe("[[check]]\nresult = 1\nis_error = false\ncontains = \"one\"\n");
        assert_eq!(c(&is_error, 0), Semantic::Part(true));
        let declared = probe("[[check]]\nresult = 1\nkind = \"semantic\"\ncontains = \"one\"\n");
        assert_eq!(c(&declared, 0), Semantic::Whole);
        assert_eq!(cell_of_golden(&is_error, Some("FAIL check 1: result 1\n")).mark, Mark::Differs);
    }

    #[test]
    fn a_run_s_cell_rests_on_what_its_verdicts_measured() {
        use crate::check::{Semantic, Verdict};
        let v = |name: &str, pass: bool, semantic: Semantic| Verdict {
            name: name.into(),
            pass,
            detail: String::new(),
            skipped: false,
            compared: Vec::new(),
            semantic,
        };
        let inv = v("invariant: no request refused by the stub", true, Semantic::Invariant);
        let mark = |vs: Vec<Verdict>| standing(&vs);
        // texts only, failed: nothing semantic was measured (the invariant is the run's, not a check)
        assert_eq!(
            mark(vec![inv.clone(), v("check 1: result 1", false, Semantic::WordingOnly)]),
            Standing::WordingOnly
        );
        // a semantic part that held makes it semantic-only; one that failed, differs
        let held = v("check 2: result 2", false, Semantic::Part(true));
        assert_eq!(
            mark(vec![inv.clone(), v("check 1: result 1", false, Semantic::WordingOnly), held]),
            Standing::SemanticOnly
        );
        let failed = v("check 2: result 2", false, Semantic::Part(false));
        assert_eq!(mark(vec![inv.clone(), failed]), Standing::Differs);
        // a whole semantic check that passed, wording failed
        let file = v("check 2: file f", true, Semantic::Whole);
        assert_eq!(
            mark(vec![inv.clone(), v("check 1: result 1", false, Semantic::WordingOnly), file.clone()]),
            Standing::SemanticOnly
        );
        // a failed invariant differs whatever the checks
        let broke = v("invariant: every scripted turn served", false, Semantic::Invariant);
        assert_eq!(mark(vec![broke, file]), Standing::Differs);
        assert_eq!(mark(vec![inv]), Standing::Pass);
    }
}
