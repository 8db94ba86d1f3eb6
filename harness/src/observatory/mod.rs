//! # The version observatory: probes × versions of the Claude Code subject
//!
//! "What changed, and since which version?" — answered from [`Observation`]s, one per (probe, version)
//! run, each with the run's outcome, its claims' verdicts and its behaviour fingerprint
//! ([`crate::observe`]).
//!
//! - [`matrix`] runs every claude-code probe on each version of a selection and keeps one observation
//!   file per cell, `<out>/<version>/<probe>.json` (written whole or not at all, so a matrix stopped
//!   half-way resumes: the cells already there are kept unless `fresh`, or unless their probe file changed since); with `bless` it also writes the
//!   version's goldens under `golden/claude-code@<version>/`.
//! - [`report`] merges observation directories (one run's, or the shards of many machines: the same
//!   cells give the same report, whatever their order) into the claims × versions table and each claim's
//!   timeline (the versions where its verdict or a citing probe's behaviour changed), as text, JSON and
//!   HTML.
//! - [`bisect`] finds, for each probe, the first version between a good and a bad one where the
//!   behaviour fingerprint or the outcome changes, installing ⌈log2 n⌉ + 2 versions at most for one
//!   probe; several probes share their installs.
//!
//! Scale comes from cargo-nextest, not from here: `harness/tests/matrix.rs` makes each (probe, version)
//! a test trial, so `cargo nextest run --partition count:i/N` (or `cargo nextest archive` and partitions
//! on N machines) spreads a matrix, each shard writes its cells, and [`report`] merges them.

pub mod bisect;
pub mod cli;
pub mod report;

use crate::lab::{golden_step, run_probe, GoldenOutcome, Layout};
use crate::observe::Observation;
use crate::probe::Probe;
use std::path::{Path, PathBuf};

/// The subject of a cell: `claude-code@<version>`.
pub fn subject(version: &str) -> String {
    format!("claude-code@{version}")
}

/// The file of a cell.
pub fn cell_path(out: &Path, version: &str, probe: &str) -> PathBuf {
    out.join(version).join(format!("{probe}.json"))
}

/// Reads a cell written before (`None`: not there, or not a whole observation).
pub fn read_cell(path: &Path) -> Option<Observation> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Writes a cell whole or not at all (a temporary file renamed into place).
pub fn write_cell(out: &Path, obs: &Observation) -> Result<PathBuf, String> {
    let version = obs.version.as_deref().unwrap_or(&obs.subject);
    let path = cell_path(out, version, &obs.probe);
    let dir = path.parent().unwrap_or(out);
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".{}.{}.tmp", obs.probe, std::process::id()));
    let text = serde_json::to_string_pretty(obs).map_err(|e| e.to_string())? + "\n";
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// What to do with a version's goldens while running a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goldens {
    /// Compare with `golden/claude-code@<version>/` where a golden exists.
    Compare,
    /// Write them (every run that is not an error: a changed behaviour is the version's data too).
    Bless,
}

/// Runs one cell: the probe on the version, its observation with the golden comparison. A golden made
/// with another binary of the same version (its header records the binary's SHA-256) makes the cell an
/// error that names both hashes and what to do: comparing with it would say nothing.
pub async fn run_cell(probe: &Probe, version: &str, layout: &Layout, goldens: Goldens) -> Observation {
    let subject = subject(version);
    if goldens == Goldens::Compare {
        let file = crate::transcript::golden::path(&layout.golden, &subject, &probe.id);
        if let Some(expected) = std::fs::read_to_string(&file).ok().as_deref().and_then(crate::versions::golden_sha256)
        {
            let expected = expected.to_string();
            match crate::subject::claude_code::install(version) {
                Ok(cc) => {
                    if let Err(e) = crate::versions::check_sha256(version, &cc.binary, &cc.sha256, &expected) {
                        return Observation::error(
                            probe,
                            "claude-code",
                            Some(version),
                            &format!("{}: {e}", file.display()),
                        );
                    }
                }
                Err(e) => {
                    return Observation::error(
                        probe,
                        "claude-code",
                        Some(version),
                        &format!("cannot install claude-code@{version}: {e}"),
                    )
                }
            }
        }
    }
    match run_probe(probe, &subject, layout, false).await {
        Err(e) => Observation::error(probe, "claude-code", Some(version), &e),
        Ok(report) => {
            let mut obs = report.observation.clone();
            let bless = goldens == Goldens::Bless;
            obs.golden = match golden_step(&report, layout, bless) {
                Ok(GoldenOutcome::Same) => "same".into(),
                Ok(GoldenOutcome::Blessed) => "blessed".into(),
                Ok(GoldenOutcome::Missing) => "missing".into(),
                Ok(GoldenOutcome::Differs(_)) => "differs".into(),
                Ok(GoldenOutcome::MissingBlobs(_)) => "missing-blobs".into(),
                Err(e) => format!("error: {e}"),
            };
            obs
        }
    }
}

/// How a matrix run goes.
#[derive(Debug, Clone)]
pub struct MatrixOptions {
    /// Where the cells go.
    pub out: PathBuf,
    /// Run every cell again, even those already there.
    pub fresh: bool,
    /// Compare with or write the versions' goldens.
    pub goldens: Goldens,
    /// Cells of one version run side by side, at most this many.
    pub jobs: usize,
}

/// One cell done: reported as it comes (`probelab matrix` prints a line each).
#[derive(Debug, Clone)]
pub struct CellDone {
    /// The observation.
    pub observation: Observation,
    /// Read from a previous run (resumed), not run now.
    pub resumed: bool,
}

/// Runs `probes` (those that apply to claude-code) on each version, in order, keeping each cell in
/// `opts.out` as it ends; `done` hears of every cell. A version that cannot be installed gives an error
/// cell per probe, naming the version and why, and the matrix goes on with the next version.
pub async fn matrix(
    probes: &[Probe],
    versions: &[String],
    layout: &Layout,
    opts: &MatrixOptions,
    done: &mut dyn FnMut(&CellDone),
) -> Result<Vec<Observation>, String> {
    use futures_util::stream::StreamExt;
    let probes: Vec<&Probe> = probes.iter().filter(|p| p.applies_to("claude-code")).collect();
    // a cell is kept only when it ran the probe file as it is now
    let shas: Vec<String> = probes.iter().map(|p| crate::observe::probe_sha256(p)).collect();
    let mut out = Vec::new();
    for version in versions {
        let mut todo = Vec::new();
        for (p, sha) in probes.iter().zip(&shas) {
            match read_cell(&cell_path(&opts.out, version, &p.id)).filter(|c| !opts.fresh && &c.probe_sha256 == sha) {
                Some(obs) => {
                    done(&CellDone { observation: obs.clone(), resumed: true });
                    out.push(obs);
                }
                None => todo.push(*p),
            }
        }
        if todo.is_empty() {
            continue;
        }
        // the install first, once: its failure is every cell's
        if let Err(e) = crate::subject::claude_code::install(version) {
            for p in todo {
                let obs = Observation::error(
                    p,
                    "claude-code",
                    Some(version),
                    &format!("cannot install claude-code@{version}: {e}"),
                );
                write_cell(&opts.out, &obs)?;
                done(&CellDone { observation: obs.clone(), resumed: false });
                out.push(obs);
            }
            continue;
        }
        let runs = futures_util::stream::iter(todo.into_iter().map(|p| run_cell(p, version, layout, opts.goldens)))
            .buffered(opts.jobs.max(1));
        futures_util::pin_mut!(runs);
        while let Some(obs) = runs.next().await {
            write_cell(&opts.out, &obs)?;
            done(&CellDone { observation: obs.clone(), resumed: false });
            out.push(obs);
        }
    }
    Ok(out)
}

/// Every cell under these directories (each `<dir>/<version>/<probe>.json`), in no particular order;
/// files that are not observations are named in the error.
pub fn read_cells(dirs: &[PathBuf]) -> Result<Vec<Observation>, String> {
    let mut out = Vec::new();
    for dir in dirs {
        let versions = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for v in versions.flatten() {
            if !v.path().is_dir() {
                continue;
            }
            for f in std::fs::read_dir(v.path()).map_err(|e| format!("{}: {e}", v.path().display()))?.flatten() {
                let path = f.path();
                if path.extension().is_none_or(|x| x != "json") || f.file_name().to_string_lossy().starts_with('.') {
                    continue;
                }
                let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                let obs: Observation = serde_json::from_str(&text)
                    .map_err(|e| format!("{}: not an observation of probelab matrix: {e}", path.display()))?;
                out.push(obs);
            }
        }
    }
    Ok(out)
}
