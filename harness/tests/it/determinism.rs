//! Goldens are stable: two consecutive runs of every built-in probe, each blessing into a golden dir of
//! its own, write byte-identical files (transcripts and blobs). A subject-made id that escaped the
//! normaliser, a timing that leaked into a transcript, an order that depends on the schedule: each shows
//! here as the probe whose files differ, with the diff.

use harness::lab::Layout;
use harness::suite::{run_suite, Options, Status};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every file under `dir`, by its path relative to `dir`.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())).flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                out.insert(p.strip_prefix(dir).unwrap_or(&p).to_path_buf(), bytes);
            }
        }
    }
    out
}

/// Blesses every built-in probe (a bare `builtin`: the newest release's profile) into `<dir>/golden`;
/// returns the ids blessed. The committed cells are linked beside it (`<dir>/docs/matrix/cells`, where
/// the layout looks for them): the subject's verdicts are held to them as in the suite.
fn bless_all(rt: &tokio::runtime::Runtime, dir: &Path) -> Vec<String> {
    let mut layout = Layout::repo();
    let cells = layout.cells();
    layout.golden = dir.join("golden");
    std::fs::create_dir_all(dir.join("docs/matrix")).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(&cells, layout.cells()).unwrap_or_else(|e| panic!("{e}"));
    layout.engine = PathBuf::from(env!("CARGO_BIN_EXE_probelab"));
    let probes = harness::probe::load_all(&[layout.fixtures.join("../probes")]).unwrap_or_else(|e| panic!("{e}"));
    let opts = Options {
        subject: harness::subject::SubjectId::builtin(),
        jobs: harness::suite::default_jobs(),
        bless: true,
        keep: false,
        durations: None,
    };
    let (mut blessed, mut failed) = (Vec::new(), Vec::new());
    rt.block_on(run_suite(probes, &layout, &opts, |o| match &o.status {
        Status::Blessed => blessed.push(o.probe.id.clone()),
        Status::Skipped(_) => {}
        other => failed.push(format!("{} {other:?}: {}", o.probe.id, o.detail)),
    }));
    assert!(failed.is_empty(), "probes that did not pass:\n{}", failed.join("\n"));
    blessed
}

#[test]
fn two_consecutive_runs_of_every_builtin_probe_write_byte_identical_goldens() {
    let rt = harness::suite::runtime(harness::suite::default_jobs()).unwrap_or_else(|e| panic!("{e}"));
    let (one, two) =
        (tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")), tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")));
    let first = bless_all(&rt, one.path());
    let second = bless_all(&rt, two.path());
    assert_eq!(first, second, "the same probes ran and passed both times");
    assert!(first.len() >= 50, "only {} probes were blessed", first.len());
    let (a, b) = (files(&one.path().join("golden")), files(&two.path().join("golden")));
    assert!(a.keys().filter(|p| p.extension().is_some_and(|x| x == "snap")).count() == first.len());
    let mut differ = Vec::new();
    for path in a.keys().chain(b.keys()).collect::<std::collections::BTreeSet<_>>() {
        match (a.get(path), b.get(path)) {
            (Some(x), Some(y)) if x == y => {}
            (x, y) => {
                let text = |v: Option<&Vec<u8>>| v.map(|v| String::from_utf8_lossy(v).into_owned()).unwrap_or_default();
                let diff = similar::TextDiff::from_lines(&text(x), &text(y))
                    .unified_diff()
                    .header("run 1", "run 2")
                    .to_string();
                differ.push(format!("{}:\n{diff}", path.display()));
            }
        }
    }
    assert!(differ.is_empty(), "{} golden file(s) differ between two runs:\n{}", differ.len(), differ.join("\n"));
}
