//! Every probe under `probes/` is a named test per subject it applies to: `<id>` on the built-in subject
//! (a bare `builtin`: the newest release's profile), `builtin@2.1.235/<id>` on each version profile whose
//! goldens the repository keeps (`harness::suite::default_subjects`, as `probelab run` runs them),
//! `claude-code@2.1.235/<id>` on the real binary (installed by `scripts/setup`; missing is a failure, not a
//! skip). Its checks and the run invariants must pass (a built-in profile's held to the real version's
//! committed cell, `harness::lab::verdict`), and its normalised transcript is compared with
//! `golden/<subject>/<id>.snap` by insta (`cargo insta review` or `probelab run --bless` to accept).
//! Goldens are never written on CI. A golden file without a probe is an error too.
//!
//! Trials run side by side on libtest-mimic's threads (`--test-threads N`, default: the cores), each on
//! a current-thread runtime of its own on its trial's thread (`harness::suite::run_isolated`, as
//! `probelab run` runs a probe), so a trial's stub and services never wait for a thread another trial
//! holds. A probe whose host part is
//! missing (`requires`) fails with what it needs and how to get it: `scripts/test` runs `scripts/setup`
//! first, so a missing part here means the set-up did not work (`probelab run` skips it instead).

use harness::lab::{measured, run_probe, verdict, Layout};
use harness::probe::{load_all, Probe};
use libtest_mimic::{Arguments, Failed, Trial};

fn claude_code() -> String {
    format!("claude-code@{}", harness::subject::claude_code::REFERENCE_VERSION)
}

/// A subject of this repository (the registered kinds).
fn id(subject: &str) -> harness::subject::SubjectId {
    harness::subject::SubjectId::parse_registered(subject).unwrap_or_else(|| panic!("not a subject: {subject}"))
}

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let mut layout = Layout::repo();
    layout.engine = std::path::PathBuf::from(env!("CARGO_BIN_EXE_probelab"));
    let root = layout.golden.join("..");
    let probes = match load_all(&[root.join("probes")]) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::from(101);
        }
    };
    // the built-in subjects `probelab run` runs (bare `builtin` first: its tests keep the probe's id as name)
    let mut subjects = harness::suite::default_subjects(&layout.golden);
    subjects.push(claude_code());
    let mut trials: Vec<Trial> = Vec::new();
    for (i, subject) in subjects.iter().enumerate() {
        for p in probes.iter().filter(|p| p.applies_to(&id(subject))) {
            let (probe, layout, s) = (p.clone(), layout.clone(), subject.clone());
            let name = if i == 0 { p.id.clone() } else { format!("{subject}/{}", p.id) };
            trials.push(Trial::test(name, move || run_on(&probe, &s, &layout)));
        }
    }
    for subject in subjects {
        let ids: Vec<String> = probes.iter().filter(|p| p.applies_to(&id(&subject))).map(|p| p.id.clone()).collect();
        let golden_dir = layout.golden.join(&subject);
        trials.push(Trial::test(format!("golden_files_all_have_probes/{subject}"), move || orphans(&golden_dir, &ids)));
    }
    let golden = layout.golden.clone();
    trials.push(Trial::test("golden_blobs_all_referenced", move || {
        let unused =
            harness::transcript::golden::unreferenced_blobs(&golden).map_err(|e| Failed::from(e.to_string()))?;
        if unused.is_empty() {
            Ok(())
        } else {
            Err(format!("{} blob(s) no golden names (run `probelab gc-blobs`): {unused:?}", unused.len()).into())
        }
    }));
    libtest_mimic::run(&args, trials).exit_code()
}

fn orphans(golden_dir: &std::path::Path, ids: &[String]) -> Result<(), Failed> {
    let mut orphans = Vec::new();
    for e in std::fs::read_dir(golden_dir).map_err(|e| Failed::from(format!("{}: {e}", golden_dir.display())))? {
        let name = e.map_err(|e| Failed::from(e.to_string()))?.file_name().to_string_lossy().into_owned();
        if let Some(id) = name.strip_suffix(".snap") {
            if !ids.iter().any(|i| i == id) {
                orphans.push(name);
            }
        }
    }
    if orphans.is_empty() {
        Ok(())
    } else {
        Err(format!("golden files without a probe: {orphans:?}").into())
    }
}

fn run_on(probe: &Probe, subject: &str, layout: &Layout) -> Result<(), Failed> {
    if let Some(why) = harness::probe::host::missing(&probe.requires_on(&id(subject))) {
        return Err(format!("{}: {why}", probe.id).into());
    }
    // on a runtime of its own, as `probelab run` runs each probe (harness::suite's module doc)
    let report = harness::suite::run_isolated(run_probe(probe, &id(subject), layout, false))?
        .map_err(|e| Failed::from(harness::exit::chain(&e)))?;
    // a built-in profile is held to what the real version did with the probe (`probelab run`'s rule)
    let real = measured(layout, &id(subject), probe).map_err(|e| Failed::from(e.to_string()))?;
    if let Err(why) = verdict(&report, real.as_ref(), &id(subject)) {
        return Err(format!("{why}\n\ntranscript:\n{}", report.transcript).into());
    }
    // not applicable at the profile's release: no golden (`probelab run` skips it too)
    if harness::lab::not_applicable(&report, &id(subject)) {
        return Ok(());
    }
    let missing = harness::transcript::golden::missing_blobs(&layout.blobs(), &report.blobs);
    if !missing.is_empty() {
        return Err(format!("blobs missing from golden/blobs (run `probelab run --bless`): {missing:?}").into());
    }
    // the golden rule of `probelab run` (`lab::golden_step`): a probe's `unordered` results match in any
    // order (Claude Code's embedded rg prints a content search's files as its threads finish); insta
    // below compares bytes, and keeps its review workflow for what differs otherwise
    let golden =
        harness::lab::golden_step(&report, layout, false).map_err(|e| Failed::from(harness::exit::chain(&e)))?;
    if golden == harness::lab::GoldenOutcome::Same {
        return Ok(());
    }
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(layout.golden.join(subject));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_description(report.description.clone());
    let transcript = report.transcript;
    settings.bind(|| insta::assert_snapshot!(probe.id.as_str(), transcript));
    Ok(())
}
