//! Every probe under `probes/` is a named test (its id): the built-in subject runs it, its checks and
//! the run invariants must pass, and its normalised transcript is compared with
//! `golden/builtin/<id>.snap` by insta (`cargo insta review` or `probelab run --bless` to accept).
//! Goldens are never written on CI. A golden file without a probe is an error too.

use harness::lab::{run_probe, Layout};
use harness::probe::{load_all, Probe};
use libtest_mimic::{Arguments, Failed, Trial};
use std::sync::Arc;

const SUBJECT: &str = "builtin";

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
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => Arc::new(rt),
        Err(e) => {
            eprintln!("runtime: {e}");
            return std::process::ExitCode::from(101);
        }
    };
    let mut trials: Vec<Trial> = probes
        .iter()
        .filter(|p| p.applies_to(SUBJECT))
        .map(|p| {
            let (probe, rt, layout) = (p.clone(), rt.clone(), layout.clone());
            Trial::test(p.id.clone(), move || run_one(&probe, &rt, &layout))
        })
        .collect();
    let ids: Vec<String> = probes.iter().filter(|p| p.applies_to(SUBJECT)).map(|p| p.id.clone()).collect();
    let golden_dir = layout.golden.join(SUBJECT);
    trials.push(Trial::test("golden_files_all_have_probes", move || {
        let mut orphans = Vec::new();
        for e in std::fs::read_dir(&golden_dir).map_err(|e| Failed::from(format!("{}: {e}", golden_dir.display())))? {
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
    }));
    libtest_mimic::run(&args, trials).exit_code()
}

fn run_one(probe: &Probe, rt: &tokio::runtime::Runtime, layout: &Layout) -> Result<(), Failed> {
    let report = rt.block_on(run_probe(probe, SUBJECT, layout, false)).map_err(Failed::from)?;
    if !report.passed() {
        return Err(format!("{}\n\ntranscript:\n{}", report.failures().join("\n\n"), report.transcript).into());
    }
    let missing = harness::transcript::golden::missing_blobs(&layout.blobs(), &report.blobs);
    if !missing.is_empty() {
        return Err(format!("blobs missing from golden/blobs (run `probelab run --bless`): {missing:?}").into());
    }
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(layout.golden.join(SUBJECT));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_description(report.description.clone());
    let transcript = report.transcript;
    settings.bind(|| insta::assert_snapshot!(probe.id.as_str(), transcript));
    Ok(())
}
