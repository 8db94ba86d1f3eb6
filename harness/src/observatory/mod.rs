//! # The version observatory: probes × versions of the Claude Code subject
//!
//! "What changed, and since which version?" — answered from [`Observation`]s, one per (probe, version)
//! run, each with the run's outcome, its claims' verdicts and its behaviour fingerprint
//! ([`crate::observe`]).
//!
//! - [`matrix`] runs every claude-code probe on each version of a selection and keeps one observation
//!   file per cell, `<out>/<version>/<probe>.json` (written whole or not at all, so a matrix stopped
//!   half-way resumes: the cells already there are kept unless `fresh`, unless their probe file changed since, or
//!   unless they are errors ([`reusable_cell`]); with `bless` it also writes the
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
pub mod budgets;
pub mod cli;
pub mod conformance;
pub mod explain;
pub mod history;
pub mod interface;
pub mod readable;
pub mod releases;
pub mod report;
pub mod watch;

use crate::lab::{golden_step, run_probe, GoldenOutcome, Layout};
use crate::observe::{Observation, Outcome};
use crate::probe::Probe;
use std::path::{Path, PathBuf};

/// The subject of a cell: `claude-code@<version>`.
pub fn subject(version: &str) -> String {
    crate::subject::id::claude_code_name(&version)
}

/// The file of a cell.
pub fn cell_path(out: &Path, version: &str, probe: &str) -> PathBuf {
    out.join(version).join(format!("{probe}.json"))
}

/// The largest cell the lab reads (a cell is a few KB; a results-heavy one ~100 KB).
pub const MAX_CELL_BYTES: u64 = 8 << 20;

/// Reads a cell written before (`None`: not there, not a regular file under [`MAX_CELL_BYTES`], not a
/// whole observation, or one that is not filed where it says).
pub fn read_cell(path: &Path) -> Option<Observation> {
    let bytes = crate::safe_fs::read_capped(path, MAX_CELL_BYTES).ok()?;
    let obs: Observation = serde_json::from_slice(&bytes).ok()?;
    misfiled(path, &obs).is_none().then_some(obs)
}

/// Why a cell at `path` is not where it says it is, if it is not: its probe must be a probe id
/// (letters, digits, `.`, `_`, `-`, no `..`) named by the file, its version the directory's. Cells are
/// data anyone can commit: a `probe` of `../../x` would name the files written from it.
fn misfiled(path: &Path, obs: &Observation) -> Option<String> {
    let id_ok = !obs.probe.is_empty()
        && obs.probe.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        && !obs.probe.contains("..")
        && !obs.probe.starts_with('.');
    if !id_ok {
        return Some(format!("its probe {:?} is no probe id", obs.probe));
    }
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    if stem != obs.probe {
        return Some(format!("it is the cell of probe {:?}, filed as {stem:?}", obs.probe));
    }
    let dir = path.parent().and_then(Path::file_name).and_then(|s| s.to_str()).unwrap_or_default();
    let version = obs.version.as_deref().unwrap_or_default();
    if obs.version.is_some() && dir != version {
        return Some(format!("it is a cell of version {version:?}, filed under {dir:?}"));
    }
    None
}

/// A cell kept from an earlier run that may stand for a run now: it ran the probe file as it is now
/// (`probe_sha256`, the SHA-256 of the file today), its fingerprint was made by today's normaliser
/// ([`crate::transcript::normalise::stamp`]: another one's fingerprint compares with nothing made now)
/// and it is not an error (an error is no verdict: a failed install or set-up is tried again, never
/// carried into a matrix or a bisection).
pub fn reusable_cell(out: &Path, version: &str, probe: &str, probe_sha256: &str) -> Option<Observation> {
    read_cell(&cell_path(out, version, probe)).filter(|c| {
        c.probe_sha256 == probe_sha256
            && c.normaliser == crate::transcript::normalise::stamp()
            && c.outcome != crate::observe::Outcome::Error
    })
}

pub use crate::observe::DataError;

/// Writes a cell whole or not at all (a temporary file renamed into place).
pub fn write_cell(out: &Path, obs: &Observation) -> Result<PathBuf, DataError> {
    let version = obs.version.as_deref().unwrap_or(&obs.subject);
    let path = cell_path(out, version, &obs.probe);
    let dir = path.parent().unwrap_or(out);
    std::fs::create_dir_all(dir).map_err(|source| DataError::Create { path: dir.to_path_buf(), source })?;
    let tmp = dir.join(format!(".{}.{}.tmp", obs.probe, std::process::id()));
    let text = serde_json::to_string_pretty(obs).map_err(DataError::Json)? + "\n";
    std::fs::write(&tmp, text).map_err(|source| DataError::Write { path: tmp.clone(), source })?;
    std::fs::rename(&tmp, &path).map_err(|source| DataError::Write { path: path.clone(), source })?;
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
                            &format!("{}: {}", file.display(), crate::exit::chain(&e)),
                        );
                    }
                }
                Err(e) => {
                    return Observation::error(
                        probe,
                        "claude-code",
                        Some(version),
                        &format!("cannot install claude-code@{version}: {}", crate::exit::chain(&e)),
                    )
                }
            }
        }
    }
    let id = match layout.subjects.parse(&subject) {
        Ok(id) => id,
        Err(e) => return Observation::error(probe, "claude-code", Some(version), &crate::exit::chain(&e)),
    };
    match run_probe(probe, &id, layout, false).await {
        Err(e) => Observation::error(probe, "claude-code", Some(version), &crate::exit::chain(&e)),
        Ok(report) => {
            let mut obs = report.observation.clone();
            let bless = goldens == Goldens::Bless;
            obs.golden = match golden_step(&report, layout, bless) {
                Ok(GoldenOutcome::Same) => "same".into(),
                Ok(GoldenOutcome::Blessed) => "blessed".into(),
                Ok(GoldenOutcome::Missing) => "missing".into(),
                Ok(GoldenOutcome::Differs(_)) => "differs".into(),
                Ok(GoldenOutcome::MissingBlobs(_)) => "missing-blobs".into(),
                Err(e) => format!("error: {}", crate::exit::chain(&e)),
            };
            obs
        }
    }
}

/// Cells of one version side by side by default: twice the cores. A Claude Code cell is about a second
/// of the binary's start-up CPU plus waits (its exit, a Bash timeout, a background task), so with one
/// cell a core the cores idle ~20 % of a version: measured on 2 cores, 2.1.333's 114 cells took 69 s at
/// -j 2 and 60 s at -j 4, and 342 cells of 2.1.235, 2.1.300 and 2.1.333 at -j 4 on a loaded machine
/// had the outcome and fingerprint of their -j 2 cells, every one (stop 35).
pub const JOBS_PER_CORE: usize = 2;

/// The matrix's default `-j`: [`JOBS_PER_CORE`] × the cores.
pub fn default_jobs() -> usize {
    crate::suite::default_jobs() * JOBS_PER_CORE
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
    /// With [`Goldens::Bless`]: bless only these versions' goldens, compare the others' (`probelab watch`
    /// runs the newest committed version beside the new ones, and must not rewrite its goldens).
    pub bless_only: Option<Vec<String>>,
}

impl MatrixOptions {
    /// What to do with one version's goldens.
    pub fn goldens_of(&self, version: &str) -> Goldens {
        match (&self.bless_only, self.goldens) {
            (Some(only), Goldens::Bless) if !only.iter().any(|v| v == version) => Goldens::Compare,
            (_, g) => g,
        }
    }
}

/// One cell done: reported as it comes (`probelab matrix` prints a line each).
#[derive(Debug, Clone)]
pub struct CellDone {
    /// The observation.
    pub observation: Observation,
    /// Read from a previous run (resumed), not run now.
    pub resumed: bool,
    /// The cells the matrix makes in all (probes × versions; the re-runs that confirm a change are not
    /// counted): what a progress line counts towards.
    pub total: usize,
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
) -> Result<Vec<Observation>, DataError> {
    use futures_util::stream::StreamExt;
    let probes: Vec<&Probe> =
        probes.iter().filter(|p| p.applies_to(&crate::subject::id::SubjectId::reference())).collect();
    // a cell is kept only when it ran the probe file as it is now
    let shas: Vec<String> = probes.iter().map(|p| crate::observe::probe_sha256(p)).collect();
    let mut out = Vec::new();
    // longest first (as `probelab run` does): each cell's last duration, kept beside the cells, orders the
    // next version's cells so the few that wait on the clock start first and no slot ends the version alone
    let durations_file = opts.out.join("durations.json");
    let mut last = crate::suite::load_durations(&durations_file).unwrap_or_default();
    let total = probes.len() * versions.len();
    // the returned cells stay in probe order, however the runs ended
    let order: std::collections::HashMap<&str, usize> =
        probes.iter().enumerate().map(|(i, p)| (p.id.as_str(), i)).collect();
    for (i, version) in versions.iter().enumerate() {
        // each version's changes are confirmed once it has run, against the version before it, while
        // both are still installed (under a small cache cap no version is downloaded twice)
        if i >= 2 {
            confirm_changes(&probes, &versions[i - 2..i], layout, opts, &mut out, done).await?;
        }
        let from = out.len();
        let mut todo = Vec::new();
        for (p, sha) in probes.iter().zip(&shas) {
            match reusable_cell(&opts.out, version, &p.id, sha).filter(|_| !opts.fresh) {
                Some(obs) => {
                    done(&CellDone { observation: obs.clone(), resumed: true, total });
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
                    &format!("cannot install claude-code@{version}: {}", crate::exit::chain(&e)),
                );
                write_cell(&opts.out, &obs)?;
                done(&CellDone { observation: obs.clone(), resumed: false, total });
                out.push(obs);
            }
            continue;
        }
        // cells are taken up as slots free, whatever order they end in: in probe order (`buffered`), one
        // cell that waits on the clock (a Bash timeout, a background task's 7 s) held every slot that had
        // ended behind it idle (2.1.333, -j 2: 80 s a version before, see the closing note of stop 35)
        let ms = |p: &Probe| last.get(&p.id).copied().unwrap_or(0.0);
        todo.sort_by(|a, b| ms(b).total_cmp(&ms(a)));
        let runs = futures_util::stream::iter(todo.into_iter().map(|p| async move {
            let t0 = std::time::Instant::now();
            let obs = run_cell(p, version, layout, opts.goldens_of(version)).await;
            (obs, t0.elapsed().as_secs_f64() * 1000.0)
        }))
        .buffer_unordered(opts.jobs.max(1));
        futures_util::pin_mut!(runs);
        while let Some((obs, took)) = runs.next().await {
            if obs.outcome != Outcome::Error {
                last.insert(obs.probe.clone(), took);
            }
            write_cell(&opts.out, &obs)?;
            done(&CellDone { observation: obs.clone(), resumed: false, total });
            out.push(obs);
        }
        out[from..].sort_by_key(|o| order.get(o.probe.as_str()).copied().unwrap_or(usize::MAX));
        crate::suite::save_durations(&durations_file, &last);
    }
    let last = versions.len().saturating_sub(2);
    confirm_changes(&probes, &versions[last..], layout, opts, &mut out, done).await?;
    Ok(out)
}

/// A change counts only when it reproduces: for every probe whose outcome or fingerprint differs between
/// two neighbouring versions of the matrix, each side is run once more (unless it already was) and must
/// agree with itself. A side that does not is marked [`Observation::unstable`] with what varied (the
/// report then lists the probe as unstable there, never as changed); one that does counts
/// [`Observation::reproduced`]. An error on the second run is no verdict and leaves the cell as it was.
async fn confirm_changes(
    probes: &[&Probe],
    versions: &[String],
    layout: &Layout,
    opts: &MatrixOptions,
    out: &mut [Observation],
    done: &mut dyn FnMut(&CellDone),
) -> Result<(), DataError> {
    use futures_util::stream::StreamExt;
    let again = to_confirm(probes, versions, out);
    let runs = futures_util::stream::iter(
        again
            .into_iter()
            .map(|(i, p, version)| async move { (i, run_cell(p, &version, layout, Goldens::Compare).await) }),
    )
    .buffer_unordered(opts.jobs.max(1));
    futures_util::pin_mut!(runs);
    while let Some((i, again)) = runs.next().await {
        if again.outcome == Outcome::Error {
            continue;
        }
        let cell = &mut out[i];
        judge_again(cell, &again);
        write_cell(&opts.out, cell)?;
        done(&CellDone { observation: cell.clone(), resumed: false, total: 0 });
    }
    Ok(())
}

/// The cells [`confirm_changes`] runs again (index in `out`, probe, version): both sides of every pair
/// of neighbouring `versions` whose outcome or fingerprint differ (neither an error), each cell once
/// even when it is the side of two pairs, none already run again. They run side by side.
fn to_confirm<'p>(probes: &[&'p Probe], versions: &[String], out: &[Observation]) -> Vec<(usize, &'p Probe, String)> {
    use std::collections::BTreeMap;
    let mut at: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (i, o) in out.iter().enumerate() {
        at.insert((o.probe.as_str(), o.version.as_deref().unwrap_or_default()), i);
    }
    let mut again: Vec<(usize, &Probe, String)> = Vec::new();
    for p in probes {
        let row: Vec<usize> = versions.iter().filter_map(|v| at.get(&(p.id.as_str(), v.as_str())).copied()).collect();
        for pair in row.windows(2) {
            let (a, b) = (&out[pair[0]], &out[pair[1]]);
            // an error or a broken run is no verdict: nothing to confirm
            let errored = !a.outcome.is_verdict() || !b.outcome.is_verdict();
            if errored || (a.outcome == b.outcome && a.fingerprint == b.fingerprint) {
                continue;
            }
            for &i in pair {
                let ran = out[i].reproduced > 0 || !out[i].unstable.is_empty();
                if !ran && !again.iter().any(|&(j, ..)| j == i) {
                    again.push((i, *p, out[i].version.clone().unwrap_or_default()));
                }
            }
        }
    }
    again
}

/// A cell's second run (no error) judged: the same outcome and fingerprint reproduce it, anything else
/// makes it unstable with what varied.
fn judge_again(cell: &mut Observation, again: &Observation) {
    if again.outcome == cell.outcome && again.fingerprint == cell.fingerprint {
        cell.reproduced += 1;
    } else {
        let mut varies = cell.behaviour.differences(&again.behaviour);
        if again.outcome != cell.outcome {
            varies.insert(0, format!("outcome {} / {}", cell.outcome.word(), again.outcome.word()));
        }
        cell.unstable = varies.join("; ");
    }
}

/// Every cell under these directories (each `<dir>/<version>/<probe>.json`), in no particular order;
/// files that are not observations are named in the error.
pub fn read_cells(dirs: &[PathBuf]) -> Result<Vec<Observation>, DataError> {
    let read = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DataError::Read { path, source }
    };
    let mut out = Vec::new();
    for dir in dirs {
        let before = out.len();
        // an entry that cannot be read is an error too: a cell left out would be a matrix short of it
        for v in std::fs::read_dir(dir).map_err(read(dir))? {
            let v = v.map_err(read(dir))?.path();
            if !v.is_dir() {
                continue;
            }
            for f in std::fs::read_dir(&v).map_err(read(&v))? {
                let f = f.map_err(read(&v))?;
                let path = f.path();
                if path.extension().is_none_or(|x| x != "json") || f.file_name().to_string_lossy().starts_with('.') {
                    continue;
                }
                // a FIFO or a huge file named like a cell is an error, not a hang
                let bytes = crate::safe_fs::read_capped(&path, MAX_CELL_BYTES).map_err(read(&path))?;
                let obs: Observation = serde_json::from_slice(&bytes)
                    .map_err(|source| DataError::NotAnObservation { path: path.clone(), source })?;
                if let Some(why) = misfiled(&path, &obs) {
                    return Err(DataError::Misfiled { path, why });
                }
                out.push(obs);
            }
        }
        // a directory without cells is a mistake (a wrong path, a shard that never ran, `docs/matrix`
        // whose report files are not cells), never an empty matrix that passes
        if out.len() == before {
            return Err(DataError::NoCells { dir: dir.clone() });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::Outcome;

    fn cell(probe: &str, version: &str, outcome: Outcome, sha: &str) -> Observation {
        Observation {
            probe_sha256: sha.into(),
            normaliser: crate::transcript::normalise::stamp().into(),
            ..Observation::for_test(probe, version, outcome, "f")
        }
    }

    #[test]
    fn cells_are_untrusted_data_a_misfiled_or_odd_one_is_an_error_never_a_path_or_a_hang() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = d.path().join("cells");
        let put = |version: &str, file: &str, obs: &Observation| {
            let v = dir.join(version);
            std::fs::create_dir_all(&v).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(v.join(file), serde_json::to_string(obs).unwrap_or_default())
                .unwrap_or_else(|e| panic!("{e}"));
        };
        let good = cell("read.basics", "2.1.1", Outcome::Pass, "s");
        put("2.1.1", "read.basics.json", &good);
        assert_eq!(read_cells(std::slice::from_ref(&dir)).map(|c| c.len()).ok(), Some(1));
        assert!(read_cell(&dir.join("2.1.1/read.basics.json")).is_some());
        // a probe that would name a path outside, a cell filed under another name or version
        for (version, file, probe, said) in [
            ("2.1.1", "x.json", "../../x", "is no probe id"),
            ("2.1.1", "other.json", "read.basics", "filed as \"other\""),
            ("2.1.2", "read.basics.json", "read.basics", "filed under \"2.1.2\""),
        ] {
            let bad = Observation { probe: probe.into(), ..good.clone() };
            put(version, file, &bad);
            let e = crate::exit::chain(&read_cells(std::slice::from_ref(&dir)).map(|c| c.len()).unwrap_err());
            assert!(e.contains(said), "{e}");
            assert!(read_cell(&dir.join(version).join(file)).is_none());
            std::fs::remove_file(dir.join(version).join(file)).unwrap_or_else(|e| panic!("{e}"));
        }
        // a FIFO named like a cell: an error at once, not a read that never ends
        let fifo = dir.join("2.1.1/stuck.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().map(|s| s.success()).unwrap_or(false);
        if made {
            let e = crate::exit::chain(&read_cells(std::slice::from_ref(&dir)).map(|c| c.len()).unwrap_err());
            assert!(e.contains("not a regular file"), "{e}");
            assert!(read_cell(&fifo).is_none());
        }
    }

    #[test]
    fn a_kept_cell_stands_for_a_run_only_when_it_ran_this_probe_file_and_is_no_error() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let out = d.path();
        for (probe, outcome) in [("a", Outcome::Pass), ("b", Outcome::Error), ("c", Outcome::Changed)] {
            write_cell(out, &cell(probe, "2.1.235", outcome, "sha-now")).unwrap_or_else(|e| panic!("{e}"));
        }
        assert!(reusable_cell(out, "2.1.235", "a", "sha-now").is_some());
        assert!(reusable_cell(out, "2.1.235", "c", "sha-now").is_some(), "a changed cell is a verdict");
        assert!(reusable_cell(out, "2.1.235", "b", "sha-now").is_none(), "an error cell is run again");
        assert!(reusable_cell(out, "2.1.235", "a", "sha-edited").is_none(), "the probe file changed since");
        assert!(reusable_cell(out, "2.1.236", "a", "sha-now").is_none());
        // a fingerprint another normaliser made (or one made before stamps) is run again
        for stamp in ["", "0123456789ab"] {
            write_cell(
                out,
                &Observation { normaliser: stamp.into(), ..cell("d", "2.1.235", Outcome::Pass, "sha-now") },
            )
            .unwrap_or_else(|e| panic!("{e}"));
            assert!(reusable_cell(out, "2.1.235", "d", "sha-now").is_none(), "normaliser {stamp:?}");
        }
    }

    #[test]
    fn both_sides_of_each_differing_pair_run_again_once_and_are_judged() {
        let probes: Vec<Probe> = ["a", "b"]
            .iter()
            .map(|id| {
                let text = format!("id = \"{id}\"\nclaims = [\"READ-1\"]\nabout = \"x\"\n[[turn]]\ntext = \"done\"\n");
                crate::probe::parse(Path::new("t.toml"), &text).unwrap_or_else(|e| panic!("{e}"))
            })
            .collect();
        let refs: Vec<&Probe> = probes.iter().collect();
        let versions: Vec<String> = ["2.1.1", "2.1.2", "2.1.3"].iter().map(|v| v.to_string()).collect();
        let c = |p: &str, v: &str, o: Outcome, f: &str| Observation::for_test(p, v, o, f);
        let mut out = vec![
            // a: 1 → 2 differs, 2 → 3 differs again (a flip-flop): 2.1.2 is the side of both pairs
            c("a", "2.1.1", Outcome::Pass, "x"),
            c("a", "2.1.2", Outcome::Changed, "y"),
            c("a", "2.1.3", Outcome::Pass, "x"),
            // b: the same throughout, then an error (no verdict): nothing runs again
            c("b", "2.1.1", Outcome::Pass, "x"),
            c("b", "2.1.2", Outcome::Pass, "x"),
            c("b", "2.1.3", Outcome::Error, "e"),
        ];
        let again: Vec<(usize, String)> =
            to_confirm(&refs, &versions, &out).into_iter().map(|(i, p, v)| (i, format!("{}@{v}", p.id))).collect();
        assert_eq!(again, [(0, "a@2.1.1".into()), (1, "a@2.1.2".into()), (2, "a@2.1.3".into())]);
        // a cell already run again is not run a third time
        out[1].reproduced = 1;
        assert_eq!(to_confirm(&refs, &versions, &out).iter().map(|a| a.0).collect::<Vec<_>>(), [0, 2]);
        // the same again reproduces; another outcome is unstable, saying so
        let mut cell = c("a", "2.1.1", Outcome::Pass, "x");
        judge_again(&mut cell, &c("a", "2.1.1", Outcome::Pass, "x"));
        assert_eq!((cell.reproduced, cell.unstable.as_str()), (1, ""));
        judge_again(&mut cell, &c("a", "2.1.1", Outcome::Changed, "z"));
        assert!(cell.unstable.starts_with("outcome pass / changed"), "{}", cell.unstable);
    }

    #[test]
    fn a_directory_without_cells_is_an_error_not_an_empty_matrix() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let empty = d.path().join("empty");
        std::fs::create_dir_all(empty.join("2.1.235")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.path().join("matrix.json"), "{}").unwrap_or_else(|e| panic!("{e}"));
        let e = read_cells(std::slice::from_ref(&empty)).unwrap_err();
        assert!(matches!(&e, DataError::NoCells { dir } if *dir == empty), "{e:?}");
        assert!(e.to_string().ends_with("empty holds no cells (<dir>/<version>/<probe>.json, as `probelab matrix --out DIR` or a matrix test shard writes them)"), "{e}");
        let full = d.path().join("full");
        write_cell(&full, &cell("a", "2.1.235", Outcome::Pass, "s")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_cells(std::slice::from_ref(&full)).map(|c| c.len()).ok(), Some(1));
        let e = read_cells(&[full.clone(), empty.clone()]).unwrap_err();
        assert!(matches!(&e, DataError::NoCells { dir } if *dir == empty), "one shard without cells among others: {e}");
        // a report's own files are not cells
        let e = read_cells(&[d.path().to_path_buf()]).unwrap_err();
        assert!(matches!(e, DataError::NoCells { .. } | DataError::NotAnObservation { .. }), "{e}");
        // a cell that does not parse is named with the parser's place
        std::fs::write(full.join("2.1.235/b.json"), "{\"probe\": 1}").unwrap();
        let e = read_cells(std::slice::from_ref(&full)).unwrap_err();
        assert!(matches!(&e, DataError::NotAnObservation { path, .. } if path.ends_with("2.1.235/b.json")), "{e:?}");
        assert!(crate::exit::chain(&e).contains("b.json: not an observation of probelab matrix: "), "{e}");
    }
}
