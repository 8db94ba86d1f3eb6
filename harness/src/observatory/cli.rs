//! `probelab matrix`, `probelab report`, `probelab bisect`: the observatory's commands, flattened into
//! probelab's own.
//!
//! - `probelab matrix --versions SPEC [--out DIR] [--bless] [--fresh] [-j N] [--json] [--html FILE]
//!   [PATH...]`: every claude-code probe (under PATH, default `probes/`) on each version SPEC selects
//!   (`probelab versions` explains the grammar); a line per cell as it ends, then the report. Cells go to
//!   DIR (default `target/probelab/matrix`), one file each, kept across runs: a matrix stopped half-way
//!   resumes (`--fresh` runs every cell again). `--bless` writes each version's goldens.
//! - `probelab report DIR... [--json] [--html FILE]`: the matrix of the cells under the directories —
//!   one run's, or the shards of many machines (`cargo nextest run --partition count:i/N` of
//!   `harness/tests/matrix.rs`, each shard writing to its own directory).
//! - `probelab bisect PROBE... --good V1 --bad V2 [--out DIR]`: the first version where each probe's
//!   behaviour or outcome changes, the two adjacent versions and what differs; the versions it installed,
//!   with the time each took.
//!
//! - `probelab profiles [--versions A,B] [--publish]`: built-in conformance per version — `builtin@V`
//!   run now against the committed goldens of the real V (`golden/claude-code@V/`, every version that
//!   has them by default), the share of probes with the same tool results; `--publish` keeps the
//!   figures in `<out>/conformance.json` (runs of the built-in runtime: not committed).
//!
//! Exit status: 0 done, 1 a cell errored (matrix) or nothing was found to differ (bisect finds no
//! boundary for any probe), 2 bad input (an unknown version, a range with no versions, a probe that is
//! not there), with a message naming what and what to do.

use super::bisect::bisect;
use super::report::Matrix;
use super::watch::PublishError;
use super::{matrix, Goldens, MatrixOptions};
use crate::exit::{finish, Failed as _, Failure, Outcome, Usage as _};
use crate::lab::Layout;
use crate::probe::{load_all, Probe};
use crate::project::Project;
use crate::versions::{Catalogue, Npm, Refresh, Spec, VersionError};
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The observatory's commands.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Every claude-code probe on each version of a selection: the claims × versions matrix.
    Matrix {
        /// The versions: `2.1.235,2.1.332` | `newest` | `>=2.1.235, <2.1.300` | `every 10 of >=2.1.235`.
        #[arg(long)]
        versions: String,
        /// Probe files or directories (default: probes/).
        paths: Vec<PathBuf>,
        /// Where the cells go (default: target/probelab/matrix).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write each version's goldens (golden/claude-code@<version>/).
        #[arg(long)]
        bless: bool,
        /// Run every cell again, even those kept from an earlier run.
        #[arg(long)]
        fresh: bool,
        /// Cells of one version run side by side, at most this many (default: twice the cores).
        #[arg(short = 'j', long)]
        jobs: Option<usize>,
        /// The report as JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Also write the report as HTML.
        #[arg(long)]
        html: Option<PathBuf>,
        /// Also keep the cells of this run, slim, in the committed matrix (docs/matrix/cells) and
        /// regenerate docs/matrix from every committed cell.
        #[arg(long)]
        publish: bool,
        /// Pin every change to two neighbouring published versions: where two versions of the run that
        /// differ have published versions between them, bisect there (the boundary's cells join the run).
        #[arg(long)]
        bisect: bool,
    },
    /// Follow new releases: run every claude-code probe on each release newer than the committed
    /// matrix, confirm and pin each change, bless their goldens, update docs/matrix and write
    /// docs/changes/<version>.md. Exit 0 nothing new (or no change), 1 changes found, 2 error.
    Watch {
        /// A JSON summary on stdout.
        #[arg(long)]
        json: bool,
        /// Cells of one version run side by side, at most this many (default: twice the cores).
        #[arg(short = 'j', long)]
        jobs: Option<usize>,
        /// Generated sessions exploring each new release against the one before it (each side run
        /// twice; ~25 s a session on 2 cores); what they find goes on the release's page. 0: none.
        #[arg(long, default_value_t = 2)]
        explore: usize,
    },
    /// One probe's change between two versions: the changed words of each tool result, then every layer
    /// (a version without a committed golden of the probe is run now).
    Explain {
        /// The probe id (or file).
        probe: String,
        /// The two versions, `A,B`.
        #[arg(long)]
        versions: String,
    },
    /// A directory to attach to a bug report: the probe, both transcripts, the diff and the command that
    /// reproduces it.
    Bundle {
        /// The probe id (or file).
        probe: String,
        /// The older version.
        a: String,
        /// The newer version.
        b: String,
        /// Where the bundle's directory goes (default: the current directory).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Every change to a tool, a claim or a budget across the measured releases, oldest first: the
    /// release, the kind (interface / behaviour / budget / coverage) and the words that changed, from the
    /// committed cells and goldens (no run).
    History {
        /// A tool (`Read`), a claim id (`READ-1`) or a budget (`Read: token ceiling`, `token ceiling`).
        topic: String,
        /// Only the releases after this one.
        #[arg(long)]
        since: Option<String>,
        /// The entries as JSON.
        #[arg(long)]
        json: bool,
    },
    /// What changed in a release against the version before it in the committed matrix (the page
    /// `watch` writes as docs/changes/<version>.md); `--write` writes that page.
    Changes {
        /// The release.
        version: String,
        /// Write docs/changes/<version>.md instead of printing it.
        #[arg(long)]
        write: bool,
    },
    /// The matrix of observation cells kept by matrix runs, bisections or test shards.
    Report {
        /// Directories of cells (`<dir>/<version>/<probe>.json`).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Also write the report as HTML.
        #[arg(long)]
        html: Option<PathBuf>,
        /// Also write the report as Markdown (the timeline of docs/).
        #[arg(long)]
        markdown: Option<PathBuf>,
        /// Pin each change between two versions that have published versions between them: bisect there
        /// (cells of the bisection under <out>/bisect, kept, so a stopped run resumes).
        #[arg(long)]
        bisect: bool,
        /// Keep the cells (and the boundaries --bisect found, after each range) in docs/matrix/cells and
        /// regenerate docs/matrix.
        #[arg(long)]
        publish: bool,
    },
    /// The first version where each probe's behaviour changes, between a good and a bad version.
    Bisect {
        /// Probe ids (or probe files).
        #[arg(required = true)]
        probes: Vec<String>,
        /// A version that behaves as the probe's checks say.
        #[arg(long)]
        good: String,
        /// A later version that does not (or behaves differently).
        #[arg(long)]
        bad: String,
        /// Where the cells go (default: target/probelab/matrix).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// One release's limits (the newest measured by default): each budget's value, the probe that
    /// measured it and how (printed by Claude Code, or pinned by the probe's checks), from the goldens.
    Budgets {
        /// The release (default: the newest with committed cells).
        version: Option<String>,
        /// Only the budgets whose name has this (`Read`, `Bash`).
        #[arg(long)]
        tool: Option<String>,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Built-in conformance per version: builtin@V run now against the committed goldens of the real V
    /// (golden/claude-code@V), the share of probes with the same tool results. (`probelab conformance`
    /// is the table across agents.)
    Profiles {
        /// Versions, `2.1.235,2.1.333` (default: every version with committed goldens).
        #[arg(long)]
        versions: Option<String>,
        /// Keep the figures in `<out>/conformance.json` (target/probelab: they come from runs of the
        /// built-in runtime, so they are not committed — nothing in docs/ is what the committed cells and
        /// goldens cannot make again).
        #[arg(long)]
        publish: bool,
    },
}

impl Command {
    /// Runs the command in a project (`crate::project`): its probes, and its `out` dir for the cells.
    pub fn run(self, project: &Project, layout: &Layout) -> ExitCode {
        finish("probelab", self.outcome(project, layout))
    }

    fn outcome(self, project: &Project, layout: &Layout) -> Outcome {
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the runtime");
        let at = At { project, layout, rt: rt.usage()? };
        match self {
            Command::Explain { probe, versions } => at.explain(&probe, &versions),
            Command::Bundle { probe, a, b, out } => at.bundle(&probe, &a, &b, out),
            Command::Changes { version, write } => at.changes(&version, write),
            Command::History { topic, since, json } => at.history(&topic, since.as_deref(), json),
            Command::Watch { json, jobs, explore } => at.watch(json, jobs, explore),
            Command::Matrix { versions, paths, out, bless, fresh, jobs, json, html, publish, bisect } => {
                let m = MatrixArgs { versions, paths, out, bless, fresh, jobs, json, html, publish, bisect };
                at.matrix(m)
            }
            Command::Report { dirs, json, html, markdown, bisect, publish } => {
                at.report(&dirs, json, html.as_deref(), markdown.as_deref(), bisect, publish)
            }
            Command::Profiles { versions, publish } => at.profiles(versions.as_deref(), publish),
            Command::Budgets { version, tool, json } => at.budgets(version.as_deref(), tool.as_deref(), json),
            Command::Bisect { probes, good, bad, out } => at.bisect(&probes, &good, &bad, out),
        }
    }
}

/// `probelab matrix`'s arguments ([`Command::Matrix`]).
struct MatrixArgs {
    versions: String,
    paths: Vec<PathBuf>,
    out: Option<PathBuf>,
    bless: bool,
    fresh: bool,
    jobs: Option<usize>,
    json: bool,
    html: Option<PathBuf>,
    publish: bool,
    bisect: bool,
}

/// What every command runs in: the project, its layout, a runtime.
struct At<'a> {
    project: &'a Project,
    layout: &'a Layout,
    rt: tokio::runtime::Runtime,
}

impl At<'_> {
    /// Where cells go by default: `target/probelab/matrix`.
    fn default_out(&self) -> PathBuf {
        self.project.out.join("matrix")
    }

    /// The project's probes (PATHs of them, or all).
    fn probes(&self, paths: &[PathBuf]) -> Result<Vec<Probe>, Failure> {
        load(&self.project.probes, paths).usage()
    }

    /// `probelab explain PROBE --versions A,B`.
    fn explain(&self, probe: &str, versions: &str) -> Outcome {
        let Some((a, b)) = versions.split_once(',') else {
            return Err(Failure::msg(2, "--versions takes two versions: A,B (e.g. 2.1.332,2.1.333)"));
        };
        let p = one_probe(&self.project.probes, probe).usage()?;
        let scratch = tempfile::tempdir().context("a scratch directory for the runs").usage()?;
        let e = self.rt.block_on(super::explain::explain(&p, a.trim(), b.trim(), self.layout, scratch.path()));
        let e = e.usage()?;
        eprintln!("{}: {}; {}", p.id, e.sources[0], e.sources[1]);
        print!("{}", e.diff);
        Ok(ExitCode::SUCCESS)
    }

    /// `probelab bundle PROBE A B [--out DIR]`.
    fn bundle(&self, probe: &str, a: &str, b: &str, out: Option<PathBuf>) -> Outcome {
        let p = one_probe(&self.project.probes, probe).usage()?;
        let scratch = tempfile::tempdir().context("a scratch directory for the runs").usage()?;
        let made = self
            .rt
            .block_on(super::explain::explain(&p, a, b, self.layout, scratch.path()))
            .and_then(|e| super::explain::bundle(&p, a, b, &e, &out.unwrap_or_else(|| PathBuf::from("."))));
        println!("{}", made.usage()?.display());
        Ok(ExitCode::SUCCESS)
    }

    /// `probelab history TOPIC [--since V] [--json]`: exit 2 on an unknown topic or a `--since` that is
    /// not a measured release.
    fn history(&self, name: &str, since: Option<&str>, json: bool) -> Outcome {
        let probes = self.probes(&[])?;
        let docs = super::watch::Docs::under(&self.project.root);
        let m = docs.matrix_of_cells().usage()?;
        if let Some(s) = since {
            if !m.versions.iter().any(|v| v == s) {
                return Err(Failure::msg(2, format!("--since {s}: {}", unmeasured(s, &m.versions))));
            }
        }
        let newest = m.versions.last().cloned().unwrap_or_default();
        let tools = super::history::known_tools(
            &crate::transcript::golden::claude_code_dir(&self.layout.golden, &newest),
            &probes,
        );
        let claims: Vec<String> =
            crate::claims::all().into_iter().map(|c| c.id).chain(self.project.known().claims).collect();
        let topic = super::history::topic(name, &claims, &tools).map_err(|e| Failure::msg(2, e))?;
        let explored = crate::discover::read_published(&docs.explored).usage()?;
        let entries = super::history::history(&probes, self.layout, &m, &topic, since, &explored).usage()?;
        if json {
            let body = serde_json::json!({"topic": topic.to_string(), "versions": m.versions, "entries": entries});
            println!("{}", serde_json::to_string_pretty(&body).unwrap_or_default());
        } else {
            print!("{}", super::history::to_text(&topic, &m, &entries, since));
        }
        Ok(ExitCode::SUCCESS)
    }

    /// `probelab budgets [V] [--tool T] [--json]`: exit 2 on a release that is not measured.
    fn budgets(&self, version: Option<&str>, tool: Option<&str>, json: bool) -> Outcome {
        let docs = super::watch::Docs::under(&self.project.root);
        let m = docs.matrix_of_cells().usage()?;
        let v = match version {
            Some(v) if m.versions.iter().any(|x| x == v) => v.to_string(),
            Some(v) => return Err(Failure::msg(2, unmeasured(v, &m.versions))),
            None => m.versions.last().cloned().ok_or_else(|| Failure::msg(2, "no release is measured"))?,
        };
        let broken = |p: &str, x: &str| m.is_broken(p, x);
        let rows: Vec<_> = super::budgets::of_release(&self.layout.golden, &v, &broken)
            .into_iter()
            .filter(|(name, ..)| tool.is_none_or(|t| name.to_lowercase().contains(&t.to_lowercase())))
            .collect();
        if json {
            let rows: Vec<serde_json::Value> = rows
                .iter()
                .map(|(name, value, probe, how)| serde_json::json!({"budget": name, "value": value, "probe": probe, "how": how}))
                .collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({"version": v, "budgets": rows})).unwrap_or_default()
            );
            return Ok(ExitCode::SUCCESS);
        }
        println!("budgets of Claude Code {v} (from golden/claude-code@{v}; — not shown, · not measured, changed: its probe's checks failed)");
        let w = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(6);
        let vw = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(5);
        for (name, value, probe, how) in &rows {
            let pad = |s: &str, n: usize| format!("{s}{}", " ".repeat(n.saturating_sub(s.chars().count())));
            println!("{}  {}  {probe}, {how}", pad(name, w), pad(value, vw));
        }
        Ok(ExitCode::SUCCESS)
    }

    /// `probelab changes V [--write]`.
    fn changes(&self, version: &str, write: bool) -> Outcome {
        let probes = self.probes(&[])?;
        let docs = super::watch::Docs::under(&self.project.root);
        let m = docs.matrix_of_cells().usage()?;
        let Some(i) = m.versions.iter().position(|v| *v == version) else {
            return Err(Failure::msg(2, unmeasured(version, &m.versions)));
        };
        let Some(previous) = i.checked_sub(1).map(|j| m.versions[j].clone()) else {
            return Err(Failure::msg(2, format!("{version} is the oldest version of the matrix: nothing before it")));
        };
        // the date from the committed releases (the page publish writes), else the install cache's
        let committed = super::releases::Releases::read(&docs.matrix).usage()?;
        let published = committed.published(version).map(str::to_string).or_else(|| {
            Catalogue::cached(&crate::subject::claude_code::cache_root()).and_then(|c| {
                c.versions().iter().find(|p| p.version.to_string() == version).and_then(|p| p.published.clone())
            })
        });
        let page = super::watch::release_page(&probes, self.layout, &m, version, &previous, published.as_deref());
        if !write {
            print!("{page}");
            return Ok(ExitCode::SUCCESS);
        }
        let path = docs.changes.join(format!("{version}.md"));
        std::fs::create_dir_all(&docs.changes)
            .with_context(|| format!("creating {}", docs.changes.display()))
            .and_then(|()| {
                crate::versions::write_file_atomic(&path, page.as_bytes())
                    .with_context(|| format!("writing {}", path.display()))
            })
            .usage()?;
        eprintln!("wrote {}", path.display());
        Ok(ExitCode::SUCCESS)
    }

    /// `probelab watch [--json] [-j N]`: 0 nothing new (or no change), 1 changes found, 2 error, 3 a probe
    /// needs repair on a new release (a broken run; over 1: the repair comes first).
    fn watch(&self, json: bool, jobs: Option<usize>, explore: usize) -> Outcome {
        let probes = self.probes(&[])?;
        let jobs = jobs.unwrap_or_else(super::default_jobs);
        let mut progress = Progress::new(0);
        let mut print = |d: &super::CellDone| print_cell(d, &mut progress);
        let mut say = |l: &str| eprintln!("watch: {l}");
        let work = self.project.out.join("watch");
        let npm = Npm::from_env();
        let (root, layout) = (&self.project.root, self.layout);
        let setup = super::watch::Setup { root, probes: &probes, layout, work: &work, jobs, npm: &npm, explore };
        let w = match self.rt.block_on(super::watch::watch(setup, &mut print, &mut say)) {
            // CI reading `--json` gets the error as an object too (and exit 2)
            Err(e) if json => {
                println!("{}", serde_json::json!({ "status": "error", "error": crate::exit::chain(&e) }));
                return Err(Failure::usage(e));
            }
            Err(e) => return Err(Failure::usage(e)),
            Ok(w) => w,
        };
        if json {
            println!("{}", serde_json::to_string_pretty(&w).context("the summary as JSON").failed()?);
        } else {
            print_watch(&w);
        }
        Ok(watch_status(&w))
    }

    /// `probelab matrix`: 1 when a cell errored.
    fn matrix(&self, a: MatrixArgs) -> Outcome {
        let probes = self.probes(&a.paths)?;
        let versions = select(&a.versions).usage()?;
        let opts = MatrixOptions {
            out: a.out.unwrap_or_else(|| self.default_out()),
            fresh: a.fresh,
            goldens: if a.bless { Goldens::Bless } else { Goldens::Compare },
            jobs: a.jobs.unwrap_or_else(super::default_jobs),
            bless_only: None,
        };
        let reference = crate::subject::id::SubjectId::reference();
        let total = probes.iter().filter(|p| p.applies_to(&reference)).count() * versions.len();
        let mut progress = Progress::new(total);
        let mut print = |d: &super::CellDone| print_cell(d, &mut progress);
        let mut cells = self.rt.block_on(matrix(&probes, &versions, self.layout, &opts, &mut print)).failed()?;
        if a.bisect {
            let mut each = |_: &[crate::observe::Observation]| Ok(());
            let more = self.rt.block_on(pin_changes(&probes, &cells, self.layout, &opts.out, &mut each));
            cells.extend(more.failed()?);
        }
        let errored = cells.iter().any(|c| c.outcome == crate::observe::Outcome::Error);
        if a.publish {
            if errored {
                return Err(Failure::msg(1, "cells errored (no verdict): nothing published; run the matrix again"));
            }
            let docs = super::watch::Docs::under(&self.project.root);
            publish_all(&docs, self.layout, &self.project.probes, &cells).usage()?;
            let (n, into, matrix) = (cells.len(), docs.cells.display(), docs.matrix.display());
            eprintln!("published {n} cells into {into} and regenerated {matrix}");
        }
        report(&cells, a.json, a.html.as_deref())?;
        Ok(if errored { ExitCode::from(1) } else { ExitCode::SUCCESS })
    }

    /// `probelab report DIR...`.
    fn report(
        &self,
        dirs: &[PathBuf],
        json: bool,
        html: Option<&Path>,
        markdown: Option<&Path>,
        pin: bool,
        publish: bool,
    ) -> Outcome {
        let mut cells = super::read_cells(dirs).usage()?;
        let docs = super::watch::Docs::under(&self.project.root);
        if pin {
            let probes = self.probes(&[])?;
            let out = self.project.out.join("bisect");
            let mut each = |found: &[crate::observe::Observation]| {
                if publish {
                    publish_all(&docs, self.layout, &self.project.probes, found).map(|_| ())
                } else {
                    Ok(())
                }
            };
            let more = self.rt.block_on(pin_changes(&probes, &cells, self.layout, &out, &mut each)).failed()?;
            // the cells run now stand for their (probe, version), in place of older ones
            let newer: std::collections::BTreeSet<(String, Option<String>)> =
                more.iter().map(|c| (c.probe.clone(), c.version.clone())).collect();
            cells.retain(|c| !newer.contains(&(c.probe.clone(), c.version.clone())));
            cells.extend(more);
        }
        if publish && !pin {
            publish_all(&docs, self.layout, &self.project.probes, &cells).usage()?;
        }
        let reported = report(&cells, json, html);
        if let (Some(md), Ok(m)) = (markdown, Matrix::from_cells(&cells)) {
            let written = std::fs::write(md, m.to_markdown("probelab: claims × versions of Claude Code"));
            if let Err(e) = written.with_context(|| format!("writing {}", md.display())) {
                // both said, as each step says its own
                if let Err(f) = reported {
                    eprintln!("probelab: {:#}", f.error);
                }
                return Err(Failure::usage(e));
            }
        }
        reported.map(|()| ExitCode::SUCCESS)
    }

    /// `probelab profiles [--versions A,B] [--publish]`.
    fn profiles(&self, versions: Option<&str>, publish: bool) -> Outcome {
        let probes = self.probes(&[])?;
        let versions: Vec<String> = match versions {
            Some(v) => v.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect(),
            None => committed_versions(&self.layout.golden),
        };
        let mut table = super::conformance::read(&self.project.out).usage()?;
        for v in &versions {
            let m = self.rt.block_on(super::conformance::measure(&probes, self.layout, v));
            let m = m.with_context(|| v.clone()).usage()?;
            if m.figure.common == 0 {
                println!("{v}: no probe in common with its committed goldens (left out)");
                continue;
            }
            print_profile(v, &m);
            table.insert(v.clone(), m.figure);
        }
        if publish {
            let file = self.project.out.join(super::conformance::FILE);
            let text = super::conformance::to_json(&table);
            std::fs::create_dir_all(&self.project.out)
                .with_context(|| self.project.out.display().to_string())
                .usage()?;
            crate::versions::write_file_atomic(&file, text.as_bytes())
                .with_context(|| file.display().to_string())
                .usage()?;
            println!("profiles: wrote {}", file.display());
        }
        Ok(ExitCode::SUCCESS)
    }

    /// `probelab bisect PROBE... --good V1 --bad V2`: 1 when no boundary is found for any probe.
    fn bisect(&self, ids: &[String], good: &str, bad: &str, out: Option<PathBuf>) -> Outcome {
        let all = self.probes(&[])?;
        let reference = crate::subject::id::SubjectId::reference();
        let mut chosen = Vec::new();
        for id in ids {
            match named(&self.project.probes, &all, id) {
                Some(p) if p.applies_to(&reference) => chosen.push(p.clone()),
                Some(p) => {
                    let why = format!("probe {} does not run on claude-code (subjects = {:?})", p.id, p.subjects);
                    return Err(Failure::msg(2, why));
                }
                None => return Err(Failure::usage(NamedError::Unknown(id.clone()))),
            }
        }
        let candidates = between(good, bad).usage()?;
        eprintln!(
            "bisect {} over {} versions ({}..{}): at most {} installs per probe",
            chosen.iter().map(|p| p.id.as_str()).collect::<Vec<_>>().join(" "),
            candidates.len(),
            good,
            bad,
            (candidates.len() as f64).log2().ceil() as usize + 2
        );
        let out = out.unwrap_or_else(|| self.default_out());
        let mut progress = |l: &str| eprintln!("  {l}");
        let ran = self.rt.block_on(bisect(&chosen, &candidates, self.layout, &out, &mut progress));
        let (found, cost) = ran.failed()?;
        print_bisection(&found, &cost);
        Ok(if found.iter().any(|f| f.boundary.is_some()) { ExitCode::SUCCESS } else { ExitCode::from(1) })
    }
}

/// `probelab watch`'s exit status for what it found: 3 a probe needs repair on a new release (a broken
/// run), else 1 changes found, else 0.
pub fn watch_status(w: &super::watch::Watched) -> ExitCode {
    if !w.broken.is_empty() {
        ExitCode::from(super::watch::EXIT_NEEDS_REPAIR)
    } else if !w.changes.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// What `probelab watch` found, as text.
fn print_watch(w: &super::watch::Watched) {
    for (v, prev, probe, what) in &w.changes {
        println!("{v} (after {prev}): {probe}: {what}");
    }
    for (v, probe, why) in &w.broken {
        println!("{v}: the probe {probe} needs repair on {v}: {why}");
    }
    for (v, probe, what) in &w.unstable {
        println!("{v}: {probe} unstable, varies in {what}");
    }
    for (v, claim, why) in &w.unobserved {
        println!("{v}: claim {claim} no longer observed ({why})");
    }
    for (v, stable, noise, secs) in &w.explored {
        println!("{v}: exploration found {stable} stable difference(s) no probe looks at ({noise} noise, {secs} s)");
    }
    for p in &w.pages {
        println!("wrote {}", p.display());
    }
    for p in &w.golden_differs {
        println!(
            "{}: {p} ran differently from its committed golden (a transcript that varies between runs)",
            w.previous
        );
    }
    println!(
        "watch: {} new after {} ({}), {} changes, {} unstable, {} need repair, {} claims no longer observed",
        w.new.len(),
        w.previous,
        if w.new.is_empty() { "-".to_string() } else { w.new.join(", ") },
        w.changes.len(),
        w.unstable.len(),
        w.broken.len(),
        w.unobserved.len()
    );
}

/// One version's built-in conformance, as `probelab profiles` prints it.
fn print_profile(v: &str, m: &super::conformance::Measured) {
    let f = &m.figure;
    println!("{v}: {}% same tool results ({} of {} probes)", f.percent(), f.same, f.common);
    if !m.differ.is_empty() {
        println!("  differ: {}", m.differ.join(" "));
    }
    if !m.unstable.is_empty() {
        println!("  left out, claude-code@{v} did not agree with itself there: {}", m.unstable.join(", "));
    }
    if !m.skipped.is_empty() {
        println!("  skipped on both sides, their requirements missing here: {}", m.skipped.join(", "));
    }
}

/// What a bisection found, and what it cost.
fn print_bisection(found: &[super::bisect::Found], cost: &super::bisect::Cost) {
    for f in found {
        match &f.boundary {
            Some((old, new)) => {
                println!("{}: changed at {new} (last as before: {old}){}", f.probe, note(&f.note));
                for l in f.diff.lines() {
                    println!("  {l}");
                }
            }
            None => println!("{}: no change found: {}", f.probe, f.note),
        }
    }
    let total: f64 = cost.versions.iter().map(|(_, d)| d.as_secs_f64()).sum();
    println!(
        "\n{} versions run ({:.0} s in all): {}",
        cost.versions.len(),
        total,
        cost.versions.iter().map(|(v, d)| format!("{v} {:.1}s", d.as_secs_f64())).collect::<Vec<_>>().join(", ")
    );
    for (v, why) in &cost.skipped {
        println!("skipped {v}: {why}");
    }
}

/// Bisects every change of these cells whose two versions have published versions between them (the
/// probes changing over one range share one bisection, so they share its installs), and returns the
/// cells of each boundary found: the last version as before and the first that differs, neighbours in
/// npm's order.
async fn pin_changes(
    probes: &[Probe],
    cells: &[crate::observe::Observation],
    layout: &Layout,
    out: &Path,
    each: &mut dyn FnMut(&[crate::observe::Observation]) -> Result<(), PublishError>,
) -> Result<Vec<crate::observe::Observation>, PinError> {
    use std::collections::BTreeMap;
    let m = Matrix::from_cells(cells)?;
    let mut ranges: BTreeMap<(String, String), Vec<Probe>> = BTreeMap::new();
    for (probe, changes) in &m.probe_timeline {
        let Some(p) = probes.iter().find(|p| &p.id == probe) else { continue };
        for c in changes {
            ranges.entry((c.previous.clone(), c.version.clone())).or_default().push(p.clone());
        }
    }
    let mut more = Vec::new();
    for ((good, bad), ps) in ranges {
        let range = |source: RangeError| PinError::Range { good: good.clone(), bad: bad.clone(), source };
        let candidates = between(&good, &bad).map_err(range)?;
        if candidates.len() <= 2 {
            continue; // neighbours already
        }
        eprintln!(
            "bisect {good} → {bad} ({} versions between) for {}",
            candidates.len() - 2,
            ps.iter().map(|p| p.id.as_str()).collect::<Vec<_>>().join(" ")
        );
        let mut progress = |l: &str| eprintln!("  {l}");
        let (found, _) = bisect(&ps, &candidates, layout, out, &mut progress).await.map_err(|e| range(e.into()))?;
        // the boundary's two cells, and the ends run afresh (they replace older cells of the two
        // versions: a change that does not reproduce now is gone from the timeline)
        let mut these = Vec::new();
        for f in found {
            let Some(p) = ps.iter().find(|p| p.id == f.probe) else { continue };
            let sha = crate::observe::probe_sha256(p);
            let mut at = vec![good.clone(), bad.clone()];
            match f.boundary {
                Some((old, new)) => {
                    eprintln!("  {}: changed at {new} (last as before: {old})", p.id);
                    at.extend([old, new]);
                }
                None => eprintln!("  {}: no change between {good} and {bad} now: {}", p.id, f.note),
            }
            at.sort();
            at.dedup();
            for v in at {
                if let Some(c) = super::reusable_cell(out, &v, &p.id, &sha) {
                    these.push(c);
                }
            }
        }
        each(&these)?;
        more.extend(these);
    }
    Ok(more)
}

/// Why the changes of a matrix could not be pinned to neighbouring versions ([`pin_changes`]).
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// Two cells of one probe and version disagree: the matrix has no timeline to pin.
    #[error(transparent)]
    Disagree(#[from] super::report::Disagree),
    /// A change's two versions make no range to walk (one not published, or without the binary).
    #[error("bisecting {good} → {bad}")]
    Range {
        /// The version before the change.
        good: String,
        /// The version of the change.
        bad: String,
        /// Why.
        source: RangeError,
    },
    /// The cells of a boundary found could not be published (`--publish`).
    #[error(transparent)]
    Publish(#[from] PublishError),
}

/// Counts and an ETA for the lines of a long command: plain lines, the same on a terminal and in CI.
struct Progress {
    started: std::time::Instant,
    done: usize,
    total: usize,
}

impl Progress {
    /// `total` cells to come (0: not known; the count alone is shown).
    fn new(total: usize) -> Progress {
        Progress { started: std::time::Instant::now(), done: 0, total }
    }

    /// One more cell: `[12/210 ETA 3m05s]` (resumed cells count, and make the rate an estimate).
    fn tick(&mut self) -> String {
        self.done += 1;
        if self.total == 0 {
            return format!("[{}]", self.done);
        }
        let left = self.total.saturating_sub(self.done);
        let per = self.started.elapsed().as_secs_f64() / self.done as f64;
        let eta = (per * left as f64).round() as u64;
        format!("[{}/{} ETA {}m{:02}s]", self.done, self.total, eta / 60, eta % 60)
    }
}

/// A line per cell as it ends (and for each cell run again to confirm a change: not counted).
fn print_cell(d: &super::CellDone, progress: &mut Progress) {
    let o = &d.observation;
    let again = !d.resumed && (o.reproduced > 0 || !o.unstable.is_empty());
    // `probelab watch` learns how many cells it runs from the matrix (npm is asked first)
    if progress.total == 0 {
        progress.total = d.total;
    }
    let count = if again { "[again]".to_string() } else { progress.tick() };
    eprintln!(
        "{count:<22} {:<8} {:<10} {:<45} {}{}",
        o.outcome.word(),
        o.version.as_deref().unwrap_or("?"),
        o.probe,
        o.fingerprint.get(..12).unwrap_or(""),
        if d.resumed {
            " (kept from an earlier run)".to_string()
        } else if !o.unstable.is_empty() {
            format!(" (run again: UNSTABLE, varies: {})", o.unstable)
        } else if o.reproduced > 0 {
            " (run again: reproduced)".to_string()
        } else {
            String::new()
        }
    );
    if !o.reason.is_empty() {
        eprintln!("{:<22}          {}", "", o.reason);
    }
}

fn note(n: &str) -> String {
    if n.is_empty() {
        String::new()
    } else {
        format!(" — {n}")
    }
}

/// The versions with committed goldens (`<golden>/claude-code@V/`), oldest first.
fn committed_versions(golden: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(golden)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("claude-code@").map(str::to_string))
        .collect();
    out.sort_by_key(|v| semver::Version::parse(v).ok());
    out
}

/// [`super::watch::publish`] with every probe of the project (a matrix of some probe files still
/// regenerates every release page, whose evidence needs each probe's `unordered` results) and the
/// install cache's catalogue, if there is one (it refreshes docs/matrix/releases.json when newer).
fn publish_all(
    docs: &super::watch::Docs,
    layout: &Layout,
    probes_dir: &Path,
    cells: &[crate::observe::Observation],
) -> Result<Matrix, PublishError> {
    let probes = load(probes_dir, &[])?;
    let catalogue = Catalogue::cached(&crate::subject::claude_code::cache_root());
    super::watch::publish(docs, layout, &probes, cells, catalogue.as_ref())
}

fn load(probes: &Path, paths: &[PathBuf]) -> Result<Vec<Probe>, crate::probe::LoadError> {
    let paths = if paths.is_empty() { vec![probes.to_path_buf()] } else { paths.to_vec() };
    load_all(&paths)
}

/// Why the probe a command names cannot be had ([`one_probe`]).
#[derive(Debug, thiserror::Error)]
enum NamedError {
    /// The project's probes do not load.
    #[error(transparent)]
    Load(#[from] crate::probe::LoadError),
    /// No probe has that id or is that file.
    #[error("no probe {0:?} under probes/ (`probelab list` names them)")]
    Unknown(String),
}

/// The probe a command names by id or file.
fn one_probe(probes_dir: &Path, id: &str) -> Result<Probe, NamedError> {
    let all = load(probes_dir, &[])?;
    named(probes_dir, &all, id).cloned().ok_or_else(|| NamedError::Unknown(id.to_string()))
}

/// The probe of `all` that `id` names: by its id, or by a probe file (an id that is no file is no error).
fn named<'a>(probes_dir: &Path, all: &'a [Probe], id: &str) -> Option<&'a Probe> {
    let file_id = load(probes_dir, &[PathBuf::from(id)]).ok().and_then(|p| p.first().map(|p| p.id.clone()));
    all.iter().find(|p| p.id == id || Some(&p.id) == file_id.as_ref())
}

/// Why `changes V` has nothing to say of a release the matrix has no cells of, in words: a release
/// published and not measured yet (with its date and how to measure it), one with no linux-x64 binary,
/// or no release at all (the measured range given, not every version).
fn unmeasured(version: &str, measured: &[String]) -> String {
    let range = match (measured.first(), measured.last()) {
        (Some(a), Some(b)) => format!("the matrix measured {a} to {b}"),
        _ => "the matrix measured no release yet".to_string(),
    };
    let published = semver::Version::parse(version).ok().and_then(|v| {
        let c = catalogue().ok()?;
        c.get(&v).map(|p| (p.published.clone(), p.linux_x64))
    });
    match published {
        Some((date, true)) => format!(
            "{version} was published {} and is not measured yet ({range}): `probelab watch` measures it",
            date.as_deref().map(|d| d.get(..10).unwrap_or(d)).unwrap_or("on an unknown date")
        ),
        Some((_, false)) => format!("{version} has no linux-x64 binary: the observatory cannot run it ({range})"),
        None => format!("{version} is not a published Claude Code release ({range}; `probelab versions` lists them)"),
    }
}

fn catalogue() -> Result<Catalogue, VersionError> {
    let root = crate::subject::claude_code::cache_root();
    let (c, fresh) = Catalogue::load(&root, &Npm::from_env(), Refresh::default())?;
    eprintln!("{}", fresh.describe(&c));
    Ok(c)
}

/// The versions a spec selects, oldest first (those without a linux-x64 binary skipped, and said).
pub fn select(spec: &str) -> Result<Vec<String>, VersionError> {
    let spec: Spec = spec.parse()?;
    let sel = catalogue()?.select(&spec)?;
    if let Some(n) = sel.skipped_note() {
        eprintln!("{n}");
    }
    Ok(sel.versions.iter().map(|v| v.to_string()).collect())
}

/// Why a bisection's range has no versions to walk ([`between`]).
#[derive(Debug, thiserror::Error)]
pub enum RangeError {
    /// An end that is not a version.
    #[error("{version:?} is not a version (write e.g. 2.1.235)")]
    NotAVersion {
        /// As given.
        version: String,
        /// The parser's reason.
        source: semver::Error,
    },
    /// The ends swapped (or one version twice).
    #[error(
        "--good {good} is not older than --bad {bad}: bisect walks from the version that still behaves as \
         before to a later one that does not; write --good {bad} --bad {good}"
    )]
    Reversed {
        /// `--good`.
        good: semver::Version,
        /// `--bad`.
        bad: semver::Version,
    },
    /// The catalogue could not be had, or an end is not runnable.
    #[error(transparent)]
    Versions(#[from] VersionError),
    /// Fewer than two versions to walk.
    #[error(transparent)]
    Ends(#[from] super::bisect::NoEnds),
}

/// `good`, the versions between it and `bad` that have the binary, and `bad`, in npm order.
pub fn between(good: &str, bad: &str) -> Result<Vec<String>, RangeError> {
    let parse = |v: &str| {
        semver::Version::parse(v).map_err(|source| RangeError::NotAVersion { version: v.to_string(), source })
    };
    let (g, b) = (parse(good)?, parse(bad)?);
    // the good version is the one that still behaves as before: it comes first in npm's order (a
    // reversed pair is almost always the two arguments swapped by mistake)
    if g >= b {
        return Err(RangeError::Reversed { good: g, bad: b });
    }
    let c = catalogue()?;
    c.runnable(&g)?;
    c.runnable(&b)?;
    let inside = c.between(&g, &b)?;
    if let Some(n) = inside.skipped_note() {
        eprintln!("{n}");
    }
    let middle: Vec<String> = inside.versions.iter().map(|v| v.to_string()).collect();
    let mut out = vec![g.to_string()];
    out.extend(middle);
    out.push(b.to_string());
    Ok(out)
}

/// The matrix of `cells` on stdout (text or JSON), and as HTML in `html`.
fn report(cells: &[crate::observe::Observation], json: bool, html: Option<&Path>) -> Result<(), Failure> {
    let m = Matrix::from_cells(cells).usage()?;
    if json {
        print!("{}", m.to_json());
    } else {
        print!("{}", m.to_text());
    }
    if let Some(h) = html {
        let written = std::fs::write(h, m.to_html("probelab: claims × versions", None));
        written.with_context(|| format!("writing {}", h.display())).usage()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_counts_cells_and_estimates_what_is_left() {
        let mut p = Progress::new(4);
        assert!(p.tick().starts_with("[1/4 ETA "));
        assert!(p.tick().starts_with("[2/4 ETA "));
        p.tick();
        assert_eq!(p.tick(), "[4/4 ETA 0m00s]");
        assert_eq!(Progress::new(0).tick(), "[1]");
        // a watch starts without a total: the matrix's first cell brings it
        let mut p = Progress::new(0);
        let obs = crate::observe::Observation::for_test("a", "2.1.1", crate::observe::Outcome::Pass, "f");
        print_cell(&super::super::CellDone { observation: obs, resumed: false, total: 228 }, &mut p);
        assert!(p.tick().starts_with("[2/228 ETA "));
    }

    #[test]
    fn a_reversed_or_empty_bisect_range_is_refused_before_npm_is_asked() {
        let e = between("2.1.300", "2.1.235").err().map(|e| crate::exit::chain(&e)).unwrap_or_default();
        assert!(e.starts_with("--good 2.1.300 is not older than --bad 2.1.235"), "{e}");
        assert!(e.ends_with("write --good 2.1.235 --bad 2.1.300"), "{e}");
        let e = between("2.1.235", "2.1.235").err().map(|e| crate::exit::chain(&e)).unwrap_or_default();
        assert!(e.contains("is not older than"), "{e}");
        let e = between("2.1", "2.1.235").err().map(|e| crate::exit::chain(&e)).unwrap_or_default();
        assert!(e.contains("is not a version"), "{e}");
    }

    #[test]
    fn changes_are_not_pinned_from_cells_that_disagree_nor_bisected_without_both_ends() {
        use crate::observe::{Observation, Outcome};
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let d = tempfile::tempdir().unwrap();
        let layout = Layout::repo();
        let cells = [
            Observation::for_test("p", "2.1.1", Outcome::Pass, "aaaa"),
            Observation::for_test("p", "2.1.1", Outcome::Pass, "bbbb"),
        ];
        let mut each = |_: &[Observation]| Ok(());
        let e = rt.block_on(pin_changes(&[], &cells, &layout, d.path(), &mut each)).unwrap_err();
        assert!(matches!(&e, PinError::Disagree(d) if d.probe == "p" && d.version == "2.1.1"), "{e:?}");
        let one = ["2.1.1".to_string()];
        let e = rt.block_on(bisect(&[], &one, &layout, d.path(), &mut |_| {})).unwrap_err();
        assert_eq!(e, super::super::bisect::NoEnds { given: 1 });
        // within a change's range, said with the range
        let e = PinError::Range { good: "2.1.1".into(), bad: "2.1.2".into(), source: e.into() };
        assert!(matches!(&e, PinError::Range { source: RangeError::Ends(_), .. }), "{e:?}");
        assert_eq!(crate::exit::chain(&e), "bisecting 2.1.1 → 2.1.2: bisect needs a good and a bad version");
    }

    #[test]
    fn a_release_the_matrix_has_no_cells_of_is_answered_in_words_not_with_every_version() {
        let measured: Vec<String> = ["2.1.235", "2.1.236", "2.1.334"].map(String::from).to_vec();
        let e = unmeasured("2.1.999", &measured);
        assert_eq!(e, "2.1.999 is not a published Claude Code release (the matrix measured 2.1.235 to 2.1.334; `probelab versions` lists them)");
        assert!(!unmeasured("x", &[]).contains("2.1.236"));
        assert!(unmeasured("x", &[]).contains("the matrix measured no release yet"));
    }
}
