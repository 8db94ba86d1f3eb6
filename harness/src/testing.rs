//! A user's suite in `cargo test`: one trial per probe and subject, the way this repository's
//! `harness/tests/probes.rs` runs its own. In the user's crate:
//!
//! ```toml
//! # Cargo.toml
//! [dev-dependencies]
//! harness = { git = "…/probelab" }      # this crate
//! [[test]]
//! name = "probes"
//! harness = false
//! ```
//!
//! ```no_run
//! // tests/probes.rs: every probe of the project at the crate's root, on each subject named
//! fn main() -> std::process::ExitCode {
//!     harness::testing::main(env!("CARGO_MANIFEST_DIR").as_ref(), &["builtin", "my-agent"])
//! }
//! ```
//!
//! Each trial (`SUBJECT/PROBE-ID`) runs the probe as `probelab run` does, checks it and compares the
//! transcript with the project's golden (`golden/SUBJECT/ID.snap`): a failed check, a missing golden or a
//! golden diff fails the trial with the details. Goldens are written by `probelab run --bless`, never
//! here. A probe whose host parts are missing (`requires`, the subject's own among them), or that is n/a on
//! the subject (a third-party agent's dialect has no counterpart for a call), is an ignored trial; one not
//! for a subject has no trial on it. libtest's arguments work (`cargo test --test probes -- read. --test-threads 2`).

use crate::lab::{golden_step, run_probe_on, GoldenOutcome};
use crate::project::Project;
use libtest_mimic::{Arguments, Failed, Trial};
use std::path::Path;
use std::sync::Arc;

/// The trials of the project at `dir` (its `probelab.toml`, or a `probes/` dir) on `subjects`, each
/// subject set up once: a project or a subject that cannot be used is an error.
pub fn trials(dir: &Path, subjects: &[&str]) -> Result<Vec<Trial>, String> {
    let project = Project::at(dir)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{}: no probelab.toml (or probes/ directory) here", dir.display()))?;
    let layout = project.layout(crate::probe::sandbox::probelab_binary());
    let probes = crate::probe::load_all_with(std::slice::from_ref(&project.probes), &project.known())
        .map_err(|e| e.to_string())?;
    let mut trials = Vec::new();
    for s in subjects {
        let id = layout.subjects.parse(s).map_err(|e| crate::exit::chain(&e))?;
        let subject = layout.subjects.prepare(&id).map_err(|e| crate::exit::chain(&e))?;
        for p in probes.iter().filter(|p| p.applies_to(&id)) {
            let name = format!("{id}/{}", p.id);
            // n/a on the subject (a tool its dialect lacks), or a host part missing: an ignored trial
            let mut needs = p.requires_on(&id);
            needs.extend(subject.requires());
            let missing = subject.unsupported(p).or_else(|| crate::probe::host::missing(&needs));
            let (probe, layout, subject) = (Arc::new(p.clone()), layout.clone(), subject.clone());
            let trial = Trial::test(name, move || {
                let report = crate::suite::run_isolated(run_probe_on(&probe, subject.as_ref(), &layout, false))?
                    .map_err(|e| Failed::from(crate::exit::chain(&e)))?;
                if !report.passed() {
                    return Err(report.failures().join("\n").into());
                }
                match golden_step(&report, &layout, false).map_err(|e| Failed::from(crate::exit::chain(&e)))? {
                    GoldenOutcome::Same | GoldenOutcome::Blessed => Ok(()),
                    GoldenOutcome::Missing => Err("no golden yet: run `probelab run --bless` to write it".into()),
                    GoldenOutcome::Differs(d) => Err(format!("the transcript differs from its golden:\n{d}").into()),
                    GoldenOutcome::MissingBlobs(b) => Err(format!("blobs missing from golden/blobs: {b:?}").into()),
                }
            });
            trials.push(trial.with_ignored_flag(missing.is_some()));
        }
    }
    Ok(trials)
}

/// The `main` of a `harness = false` test target: [`trials`] run with libtest's arguments; exit 101 on
/// a failed trial, 2 when the project or a subject cannot be used.
pub fn main(dir: &Path, subjects: &[&str]) -> std::process::ExitCode {
    let args = Arguments::from_args();
    match trials(dir, subjects) {
        Ok(t) => libtest_mimic::run(&args, t).exit_code(),
        Err(e) => {
            eprintln!("probelab: {e}");
            std::process::ExitCode::from(2)
        }
    }
}
