//! Many probes at once: `probelab run -j N` and the benchmarks run a suite here.
//!
//! Probes are independent — each has its own sandbox (a fresh temp dir), its own stub on port 0 and its
//! own services — so they run side by side: `jobs` lanes (default: the machine's cores,
//! [`default_jobs`]), each a thread taking the next probe from one queue. Results are handed back in
//! probe order as soon as every earlier probe is done, so the output of `-j 8` is the output of `-j 1`,
//! line for line; only the durations differ.
//!
//! Decisions:
//! - Each probe runs on a tokio runtime of its own, on its lane's thread, with the current-thread
//!   scheduler ([`probe_runtime`], [`run_isolated`]): its stub, its services and the built-in subject
//!   take turns on one thread, so a request and its answer never wake another thread (on a multi-thread
//!   runtime those wake-ups were half of a turn's cost: `benches/lab/benches/turn.rs`, 1.1 → 0.5 ms a
//!   request); the subject's processes, pipes and blocking work go to the runtime's blocking pool as
//!   before. A probe that blocks its thread for a moment (a 64 MiB fixture written) holds back only
//!   itself, never another probe's timers. What the probe leaves running (a task nobody awaited) is
//!   dropped with its runtime at its end, not carried into the next probe.
//! - The subject is set up once before the first probe starts ([`crate::subject::Registry::prepare`]: a
//!   Claude Code version installed — the npm install is not safe to run twice at once into one cache
//!   dir — and held), and every lane's probes share that set-up; a set-up that fails is the error of
//!   every probe that would run on it.
//! - What a probe needs from the host (`requires`, [`crate::probe::host`]) is looked up once per run;
//!   a probe whose part is missing is skipped with the reason and how to get the part.
//! - Longest first: with [`Options::durations`] set (the CLI keeps `target/probelab/<subject>/durations.json`),
//!   probes start in the order of their last run's durations, longest first, so the few that wait on a
//!   timeout overlap the many short ones instead of trailing after them; the file is rewritten after
//!   the run. Without it (or for probes it does not know) probes start in probe order. The order of the
//!   output never changes.

use crate::lab::{golden_step, run_probe_on, GoldenOutcome, Layout, Report};
use crate::probe::Probe;
use crate::subject::{Subject, SubjectId};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What became of one probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Checks, invariants and golden agree.
    Pass,
    /// Passed and its golden was written.
    Blessed,
    /// A check or an invariant failed.
    Fail,
    /// The transcript differs from the golden.
    GoldenDiff,
    /// No golden yet (or blobs missing).
    GoldenMissing,
    /// The run could not be made (sandbox, stub, subject install…).
    Error,
    /// Not run: why ([`Skip`]).
    Skipped(Skip),
}

/// Why a probe did not run on a subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// The kind of reason, what the summary counts.
    pub kind: SkipKind,
    /// In words (`not for builtin`, `needs bubblewrap (scripts/setup installs it)`).
    pub why: String,
}

/// The kinds of [`Skip`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkipKind {
    /// The probe's `subjects` do not name the subject.
    NotFor,
    /// The subject cannot run it (a dialect without its calls, a profile without its tools, an exec
    /// probe on a subject with no search engine).
    NotApplicable,
    /// A host part it needs is missing: the part's name (`confinement`, `curl`, `python3:pylsp`).
    MissingPart(String),
}

impl Skip {
    fn new(kind: SkipKind, why: impl Into<String>) -> Skip {
        Skip { kind, why: why.into() }
    }

    /// The summary's words for `n` probes skipped for this kind of reason (`17 not for builtin`).
    pub fn counted(kind: &SkipKind, n: usize, subject: &SubjectId) -> String {
        match kind {
            SkipKind::NotFor => format!("{n} not for {subject}"),
            SkipKind::NotApplicable => format!("{n} n/a on {subject}"),
            SkipKind::MissingPart(part) => format!("{n} missing {part}"),
        }
    }
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

impl Status {
    /// The word of `--json`'s `status`.
    pub fn word(&self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Blessed => "blessed",
            Status::Fail => "fail",
            Status::GoldenDiff => "golden-diff",
            Status::GoldenMissing => "golden-missing",
            Status::Error => "error",
            Status::Skipped(_) => "skipped",
        }
    }

    /// Counts as passed (pass or blessed).
    pub fn ok(&self) -> bool {
        matches!(self, Status::Pass | Status::Blessed)
    }
}

/// One probe's outcome.
#[derive(Debug)]
pub struct Outcome {
    /// Its place in the suite (probe order).
    pub index: usize,
    /// The probe.
    pub probe: Arc<Probe>,
    /// What became of it.
    pub status: Status,
    /// Failures, the golden diff, or the error.
    pub detail: String,
    /// The run's report (absent when skipped or when the run could not be made).
    pub report: Option<Report>,
    /// Wall time of the probe: run, checks, golden compare (or bless).
    pub duration: Duration,
}

impl Outcome {
    /// A probe whose run could not be made or did not end (no report): an error with `detail`.
    fn unrun(index: usize, probe: Arc<Probe>, detail: String) -> Outcome {
        Outcome { index, probe, status: Status::Error, detail, report: None, duration: Duration::ZERO }
    }
}

/// How to run a suite.
#[derive(Debug, Clone)]
pub struct Options {
    /// The subject (`builtin`, `claude-code@2.1.235`, a command subject), parsed
    /// ([`crate::subject::Registry::parse`]).
    pub subject: SubjectId,
    /// Probes at a time.
    pub jobs: usize,
    /// Write goldens of passing probes.
    pub bless: bool,
    /// Keep each sandbox.
    pub keep: bool,
    /// Where the last run's per-probe durations are kept (read to start the longest first, rewritten).
    pub durations: Option<std::path::PathBuf>,
}

/// The subjects `probelab run` and `cargo test` run when none is named: the bare `builtin` (the newest
/// release's profile, against `golden/builtin/`), then every version profile whose goldens `golden`
/// keeps (`golden/builtin@V/`, oldest first: the repository keeps the reference's, 2.1.235), each against
/// its own.
pub fn default_subjects(golden: &std::path::Path) -> Vec<String> {
    let mut versions: Vec<(probelab_runtime::profile::Version, String)> = std::fs::read_dir(golden)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let v = name.strip_prefix(crate::subject::id::BUILTIN)?.strip_prefix('@')?;
            Some((probelab_runtime::profile::release(v)?, name))
        })
        .collect();
    versions.sort();
    std::iter::once(crate::subject::id::BUILTIN.to_string()).chain(versions.into_iter().map(|(_, n)| n)).collect()
}

/// The machine's cores (at least 1): the default of `-j`.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The most probes at a time (`-j`): each is a thread with a runtime of its own, and more lanes than this
/// only wait on the same cores (`-j 20000` is taken as this, not as 20,000 threads).
pub const MAX_JOBS: usize = 256;

/// A runtime for a suite of `jobs` probes at a time.
pub fn runtime(jobs: usize) -> std::io::Result<tokio::runtime::Runtime> {
    let threads = jobs.min(MAX_JOBS).max(default_jobs()).max(2);
    tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build()
}

/// The runtime one probe runs on: the current-thread scheduler, timers and I/O on (see the module doc).
pub fn probe_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}

/// Runs `fut` (one probe) to its end on a [`probe_runtime`] of its own on this thread, then drops what it
/// left: tasks nobody awaited are cancelled, blocking work still running is not waited for (a reader of
/// a pipe a killed process held ends by itself). Not from inside a runtime (tokio refuses to nest).
pub fn run_isolated<F: std::future::Future>(fut: F) -> Result<F::Output, String> {
    /// Shuts its runtime down without waiting, also when the probe panics (a plain drop would wait for
    /// every blocking task, a pipe reader among them).
    struct Background(Option<tokio::runtime::Runtime>);
    impl Drop for Background {
        fn drop(&mut self) {
            if let Some(rt) = self.0.take() {
                rt.shutdown_background();
            }
        }
    }
    let rt = Background(Some(probe_runtime().map_err(|e| format!("cannot start the probe's runtime: {e}"))?));
    match &rt.0 {
        Some(r) => Ok(r.block_on(fut)),
        None => Err("the probe's runtime is gone".into()),
    }
}

/// Runs one probe on a subject set up for it (or skips it) and compares its golden.
pub async fn run_one(
    index: usize,
    probe: Arc<Probe>,
    subject: &dyn Subject,
    layout: &Layout,
    opts: &Options,
) -> Outcome {
    let started = Instant::now();
    let skip = |why: Skip| Outcome {
        index,
        probe: probe.clone(),
        status: Status::Skipped(why),
        detail: String::new(),
        report: None,
        duration: Duration::ZERO,
    };
    if !probe.applies_to(&opts.subject) {
        return skip(Skip::new(SkipKind::NotFor, format!("not for {}", opts.subject)));
    }
    if let Some(why) = subject.unsupported(&probe) {
        return skip(Skip::new(SkipKind::NotApplicable, format!("n/a on {}: {why}", opts.subject)));
    }
    let mut needs = probe.requires_on(&opts.subject);
    needs.extend(subject.requires());
    if let Some((part, why)) = crate::probe::host::missing_part(&needs) {
        return skip(Skip::new(SkipKind::MissingPart(part), why));
    }
    if !probe.execs.is_empty() && subject.rg_engine(&layout.engine).is_none() {
        let why = format!("an exec probe: {} has no search engine to start as rg", opts.subject);
        return skip(Skip::new(SkipKind::NotApplicable, why));
    }
    let report = match run_probe_on(&probe, subject, layout, opts.keep).await {
        Ok(r) => r,
        Err(e) => {
            return Outcome {
                index,
                probe: probe.clone(),
                status: Status::Error,
                detail: crate::exit::chain(&e),
                report: None,
                duration: started.elapsed(),
            }
        }
    };
    // a version profile is held to what the real version did ([`crate::lab::verdict`])
    let measured = match crate::lab::measured(layout, &opts.subject, &probe) {
        Ok(m) => m,
        Err(e) => {
            let detail = format!("the committed cell {} is held to: {}", opts.subject, crate::exit::chain(&e));
            return Outcome {
                index,
                probe: probe.clone(),
                status: Status::Error,
                detail,
                report: None,
                duration: started.elapsed(),
            };
        }
    };
    let verdict = crate::lab::verdict(&report, measured.as_ref(), &opts.subject);
    if let (Ok(note), true) = (&verdict, crate::lab::not_applicable(&report, &opts.subject)) {
        let why = Skip::new(SkipKind::NotApplicable, note.clone().unwrap_or_default());
        return Outcome {
            index,
            probe,
            status: Status::Skipped(why),
            detail: String::new(),
            report: Some(report),
            duration: started.elapsed(),
        };
    }
    let golden = golden_step(&report, layout, opts.bless && verdict.is_ok());
    let note = verdict.as_ref().ok().cloned().flatten().unwrap_or_default();
    let (status, detail) = match (&golden, &verdict) {
        (Err(e), _) => (Status::Error, crate::exit::chain(e)),
        (Ok(_), Err(failures)) => (Status::Fail, failures.clone()),
        (Ok(GoldenOutcome::Same), Ok(_)) => (Status::Pass, note),
        (Ok(GoldenOutcome::Blessed), Ok(_)) => (Status::Blessed, note),
        (Ok(GoldenOutcome::Missing), Ok(_)) => {
            (Status::GoldenMissing, "no golden file yet: run `probelab run --bless` to write it".to_string())
        }
        (Ok(GoldenOutcome::Differs(d)), Ok(_)) => (Status::GoldenDiff, d.clone()),
        (Ok(GoldenOutcome::MissingBlobs(b)), Ok(_)) => (
            Status::GoldenMissing,
            format!(
                "blobs missing from golden/blobs or corrupt (not their SHA-256): {}; run with --bless",
                b.join(", ")
            ),
        ),
    };
    Outcome { index, probe, status, detail, report: Some(report), duration: started.elapsed() }
}

/// The outcome of a probe that does not run on `subject`.
async fn skipped(index: usize, probe: Arc<Probe>, subject: &SubjectId) -> Outcome {
    let why = Skip::new(SkipKind::NotFor, format!("not for {subject}"));
    Outcome {
        index,
        probe,
        status: Status::Skipped(why),
        detail: String::new(),
        report: None,
        duration: Duration::ZERO,
    }
}

/// Runs `probes` at most `opts.jobs` at a time and calls `each` with every outcome, in probe order.
pub async fn run_suite(probes: Vec<Probe>, layout: &Layout, opts: &Options, mut each: impl FnMut(Outcome)) {
    // set up (installed) once, before the probes start (an error shows on every probe that would run)
    let (registry, id) = (layout.subjects.clone(), opts.subject.clone());
    let prepared: Result<Arc<dyn Subject>, String> =
        match tokio::task::spawn_blocking(move || registry.prepare(&id)).await {
            Ok(p) => p.map_err(|e| crate::exit::chain(&e)),
            Err(e) => Err(format!("setting up {}: {e}", opts.subject)),
        };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Outcome>();
    let probes: Vec<Arc<Probe>> = probes.into_iter().map(Arc::new).collect();
    let n = probes.len();
    // a scheduling hint: one that cannot be read or parsed is said and left (probes start in file order)
    let mut last = match opts.durations.as_deref().map(load_durations) {
        None => Default::default(),
        Some(Ok(d)) => d,
        Some(Err(e)) => {
            eprintln!("probelab: {}; probes start in file order", crate::exit::chain(&e));
            Default::default()
        }
    };
    let mut order: Vec<usize> = (0..n).collect();
    // stable: probes the file does not know keep their place after the known ones' longest-first order
    order.sort_by(|&a, &b| {
        let d = |i: usize| last.get(&probes[i].id).copied().unwrap_or(0.0);
        d(b).total_cmp(&d(a))
    });
    let queue = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::from(order)));
    for lane in 0..opts.jobs.clamp(1, MAX_JOBS).min(n) {
        let (queue, probes, tx, layout, opts, prepared) =
            (queue.clone(), probes.clone(), tx.clone(), layout.clone(), opts.clone(), prepared.clone());
        let spawned = std::thread::Builder::new().name(format!("probelab-lane-{lane}")).spawn(move || loop {
            let Some(index) = queue.lock().ok().and_then(|mut q| q.pop_front()) else { return };
            let probe = probes[index].clone();
            // a panic is the probe's error, in its place; the lane goes on with the next
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &prepared {
                Ok(subject) => run_isolated(run_one(index, probe.clone(), subject.as_ref(), &layout, &opts)),
                Err(e) if probe.applies_to(&opts.subject) => Ok(Outcome::unrun(index, probe.clone(), e.clone())),
                Err(_) => run_isolated(skipped(index, probe.clone(), &opts.subject)),
            }));
            let outcome = match ran {
                Ok(Ok(o)) => o,
                Ok(Err(e)) => Outcome::unrun(index, probe, e),
                Err(_) => Outcome::unrun(index, probe, "the probe's run panicked (see stderr)".into()),
            };
            if tx.send(outcome).is_err() {
                return;
            }
        });
        if let Err(e) = spawned {
            eprintln!("probelab: cannot start lane {lane}: {e}");
        }
    }
    drop(tx);
    let mut done: Vec<Option<Outcome>> = (0..n).map(|_| None).collect();
    let mut next = 0;
    while let Some(o) = rx.recv().await {
        let i = o.index;
        if !matches!(o.status, Status::Skipped(_)) {
            last.insert(o.probe.id.clone(), o.duration.as_secs_f64() * 1000.0);
        }
        done[i] = Some(o);
        while next < n {
            match done[next].take() {
                Some(o) => {
                    each(o);
                    next += 1;
                }
                None => break,
            }
        }
    }
    if let Some(path) = &opts.durations {
        save_durations(path, &last);
    }
    // a probe no lane could run (none started) sent nothing: it is an error, in its place, never left out
    for (index, slot) in done.into_iter().enumerate().skip(next) {
        let o = slot.unwrap_or_else(|| {
            Outcome::unrun(index, probes[index].clone(), "no lane ran the probe (see stderr)".into())
        });
        each(o);
    }
}

/// A durations file ([`Options::durations`]) that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DurationsError {
    /// It is there but cannot be read (not a regular file, too large, no permission).
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not a JSON map of probe ids to milliseconds.
    #[error("{}: not a map of durations", path.display())]
    Parse {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: serde_json::Error,
    },
}

/// The per-probe durations of the last run (probe id → ms): none when the file is missing (the first
/// run); an error naming the file when it cannot be read or is not such a map.
pub fn load_durations(path: &std::path::Path) -> Result<std::collections::BTreeMap<String, f64>, DurationsError> {
    let path_buf = || path.to_path_buf();
    match crate::safe_fs::read_capped(path, crate::safe_fs::MAX_TEXT_BYTES) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Default::default()),
        Err(source) => Err(DurationsError::Read { path: path_buf(), source }),
        Ok(b) => serde_json::from_slice(&b).map_err(|source| DurationsError::Parse { path: path_buf(), source }),
    }
}

pub(crate) fn save_durations(path: &std::path::Path, d: &std::collections::BTreeMap<String, f64>) {
    let rounded: std::collections::BTreeMap<&str, f64> =
        d.iter().map(|(k, v)| (k.as_str(), (v * 10.0).round() / 10.0)).collect();
    // a link in its place (a cloned repository may ship one) is replaced, never written through
    let written = crate::safe_fs::write_no_follow(path, &serde_json::to_vec_pretty(&rounded).unwrap_or_default());
    if let Err(e) = written {
        eprintln!("probelab: cannot write {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_subjects_are_bare_builtin_then_the_profiles_with_goldens() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(default_subjects(&d.path().join("none")), vec!["builtin"]);
        for dir in ["builtin", "builtin@2.1.300", "builtin@2.1.235", "builtin@x", "claude-code@2.1.235", "blobs"] {
            std::fs::create_dir(d.path().join(dir)).unwrap_or_else(|e| panic!("{e}"));
        }
        // a file is no golden directory
        std::fs::write(d.path().join("builtin@2.1.299"), "").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(default_subjects(d.path()), vec!["builtin", "builtin@2.1.235", "builtin@2.1.300"]);
    }

    #[test]
    fn durations_missing_are_none_and_unreadable_or_corrupt_are_said() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let f = d.path().join("durations.json");
        assert!(load_durations(&f).is_ok_and(|m| m.is_empty()));
        std::fs::write(&f, "{\"a.b\": 1.5}").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(load_durations(&f).ok().map(|m| m.get("a.b").copied()), Some(Some(1.5)));
        std::fs::write(&f, "{\"a.b\": ").unwrap_or_else(|e| panic!("{e}"));
        let e = load_durations(&f).err();
        assert!(matches!(&e, Some(DurationsError::Parse { path, .. }) if *path == f), "{e:?}");
        let e = e.map(|e| crate::exit::chain(&e)).unwrap_or_default();
        assert!(e.starts_with(&format!("{}: not a map of durations: EOF", f.display())), "{e}");
        let e = load_durations(d.path()).err();
        assert!(matches!(&e, Some(DurationsError::Read { .. })), "{e:?}");
        let e = e.map(|e| crate::exit::chain(&e)).unwrap_or_default();
        assert!(e.starts_with("cannot read ") && e.ends_with("not a regular file"), "{e}");
    }

    #[test]
    fn a_probe_runtime_gives_its_output_and_drops_the_tasks_it_left() {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(1);
        let out = run_isolated(async move {
            // a task nobody awaits, holding the sender
            tokio::spawn(async move {
                let _keep = tx;
                std::future::pending::<()>().await;
            });
            tokio::task::yield_now().await;
            7
        });
        assert_eq!(out, Ok(7));
        // the task went with the runtime: its sender is dropped
        assert_eq!(rx.try_recv(), Err(tokio::sync::mpsc::error::TryRecvError::Disconnected));
    }

    #[test]
    fn a_probe_that_panics_with_blocking_work_left_does_not_hold_its_lane() {
        let (block_tx, block_rx) = std::sync::mpsc::channel::<()>();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(|| {
                run_isolated(async move {
                    // blocking work that only ends when the test lets it
                    tokio::task::spawn_blocking(move || {
                        let _ = block_rx.recv();
                    });
                    tokio::task::yield_now().await;
                    panic!("a bug in the probe's run");
                })
            });
            let _ = done_tx.send(r.is_err());
        });
        // bounded: a lane that waited for the blocking task would never answer while block_tx lives
        let panicked = done_rx.recv_timeout(Duration::from_secs(60));
        drop(block_tx);
        assert_eq!(panicked, Ok(true), "the lane waited for the blocking work the panicking probe left");
    }
}
