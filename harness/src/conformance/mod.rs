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
mod table;

pub use table::*;

use std::path::Path;

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
    use crate::exit::{Failed as _, Failure, Usage as _};
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
    let reference = crate::subject::SubjectId::reference();
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
    // the whole catalogue, not the probes run: a column keeps the cells of every probe it did not run now
    let all = crate::probe::load_all_with(std::slice::from_ref(&project.probes), &project.known()).usage()?;
    for id in ids {
        let (col, ran) = run_column(&rt, &probes, layout, &id, jobs);
        if publish {
            let broken = published::merge(&project.root, &all, &ran).failed()?;
            unpublished.extend(broken.into_iter().map(|b| format!("{id} {b}")));
        }
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
        published::write_table(&project.root, &all, &project.golden, &pinned).failed()?;
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

/// One subject's column run over `probes`, and what publishing it would take: each cell with whether
/// its run was made (a run that could not be made measured nothing of the subject; a skip, n-a, is a
/// fact) and how the runs describe the subject.
fn run_column<'p>(
    rt: &tokio::runtime::Runtime,
    probes: &'p [crate::probe::Probe],
    layout: &crate::lab::Layout,
    id: &crate::subject::SubjectId,
    jobs: usize,
) -> (Column, published::Ran<'p>) {
    let opts = crate::suite::Options { subject: id.clone(), jobs, bless: false, keep: false, durations: None };
    let began = std::time::Instant::now();
    let (mut cells, mut described, mut made) = (Vec::new(), String::new(), Vec::new());
    rt.block_on(crate::suite::run_suite(probes.to_vec(), layout, &opts, |o| {
        if let Some(r) = &o.report {
            described.clone_from(&r.description);
        }
        made.push(o.report.is_some() || matches!(o.status, crate::suite::Status::Skipped(_)));
        let cell = cell_of(&o);
        if let Some(why) = differs_detail(&cell, o.report.as_ref().map(|r| &r.verdicts[..]), &o.detail) {
            eprintln!("conformance: {id} {} differs: {why}", o.probe.id);
        }
        cells.push(cell);
    }));
    let ran = published::Ran {
        subject: id.to_string(),
        described,
        cells: probes.iter().zip(&cells).zip(&made).map(|((p, c), m)| (p, c.clone(), *m)).collect(),
    };
    (Column::new(&id.to_string(), "run", cells, began.elapsed().as_millis() as u64), ran)
}

/// What a cell that differs measured, said beside the table's mark (which names the check only): the
/// failed verdict's detail — place, expected, actual — cut to [`DETAIL_LINES`] lines; for a run that
/// could not be made, its error (`run`). None for any other cell.
fn differs_detail(cell: &Cell, verdicts: Option<&[crate::check::Verdict]>, run: &str) -> Option<String> {
    if cell.mark != Mark::Differs {
        return None;
    }
    let detail = match verdicts {
        Some(vs) => vs.iter().find(|v| !v.pass && cell.why.starts_with(&v.name)).map(|v| v.detail.as_str()),
        None => Some(run),
    }?;
    let mut lines: Vec<&str> = detail.lines().filter(|l| !l.trim().is_empty()).collect();
    let more = lines.len().saturating_sub(DETAIL_LINES);
    lines.truncate(DETAIL_LINES);
    let mut out = format!("{}\n  {}", cell.why, lines.join("\n  "));
    if more > 0 {
        out.push_str(&format!("\n  ({more} more lines)"));
    }
    Some(out)
}

/// How many lines of a differing cell's verdict `conformance` prints.
const DETAIL_LINES: usize = 12;

/// Where the reference column goes among the columns run: first, or after the built-in runtime's when
/// the table starts with it — never between two agents.
pub fn reference_place(columns: &[Column]) -> usize {
    usize::from(columns.first().is_some_and(|c| c.subject == "builtin" || c.subject.starts_with("builtin@")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{standing, Standing};
    use crate::probe::Probe;

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

    #[test]
    fn a_cell_that_differs_is_said_with_its_verdict_s_detail() {
        use crate::check::{Semantic, Verdict};
        let v = |name: &str, detail: &str| Verdict {
            name: name.into(),
            pass: false,
            detail: detail.into(),
            skipped: false,
            compared: Vec::new(),
            semantic: Semantic::Part(false),
        };
        let vs = [
            v("check 2: result 2", "p.toml:9: wrong"),
            v("check 6: result 6", "p.toml:30: is_error true\n\ngot: boom"),
        ];
        let differs = Cell { mark: Mark::Differs, why: "check 6: result 6".into() };
        assert_eq!(
            differs_detail(&differs, Some(&vs), "").as_deref(),
            Some("check 6: result 6\n  p.toml:30: is_error true\n  got: boom")
        );
        let long = [v("check 1: result 1", &"line\n".repeat(DETAIL_LINES + 3))];
        let one = Cell { mark: Mark::Differs, why: "check 1: result 1".into() };
        let said = differs_detail(&one, Some(&long), "").unwrap_or_default();
        assert_eq!(said.lines().count(), 1 + DETAIL_LINES + 1, "{said}");
        assert!(said.ends_with("(3 more lines)"), "{said}");
        // a run that could not be made says its error; a cell that does not differ, nothing
        let broke = Cell { mark: Mark::Differs, why: "the run failed".into() };
        assert_eq!(differs_detail(&broke, None, "stub: refused").as_deref(), Some("the run failed\n  stub: refused"));
        assert_eq!(differs_detail(&cell(Mark::SemanticOnly), Some(&vs), ""), None);
    }
}
