//! The whole built-in suite's wall time: every probe under `probes/` on the built-in subject, checked and
//! compared with its golden, `-j` = the cores, as `probelab run` does it (`harness::suite`). Each sample
//! is one whole run; a failing probe fails the bench. Needs the probelab binary beside the bench
//! (`{probelab}` and exec probes start it): `cargo build --release -p harness` first.

use criterion::{criterion_group, criterion_main, Criterion};
use harness::lab::Layout;
use harness::suite::{default_jobs, run_suite, Options, Status};
use std::path::Path;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let probes = harness::probe::load_all(&[repo.join("probes")]).unwrap_or_else(|e| panic!("{e}"));
    let engine = harness::probe::sandbox::probelab_binary();
    assert!(engine.is_file(), "{} is missing: cargo build --release -p harness first", engine.display());
    let layout =
        Layout { fixtures: repo.join("fixtures"), golden: repo.join("golden"), engine, subjects: Default::default() };
    let jobs = default_jobs();
    let rt = harness::suite::runtime(jobs).unwrap_or_else(|e| panic!("{e}"));
    let opts = Options {
        subject: harness::subject::SubjectId::builtin(),
        jobs,
        bless: false,
        keep: false,
        durations: Some(repo.join("target/probelab/builtin/durations.json")),
    };
    let run = || {
        let mut durations = Vec::new();
        let mut failed = Vec::new();
        rt.block_on(run_suite(probes.clone(), &layout, &opts, |o| match &o.status {
            Status::Skipped(_) => {}
            s if s.ok() => durations.push(o.duration.as_secs_f64() * 1000.0),
            _ => failed.push(format!("{} {}", o.probe.id, o.status.word())),
        }));
        assert!(failed.is_empty(), "probes failed: {failed:?}");
        durations.sort_by(f64::total_cmp);
        durations
    };
    let d = run();
    println!(
        "suite: {} probes on builtin, -j {jobs}; median probe {:.1} ms, slowest {:.1} ms",
        d.len(),
        d[d.len() / 2],
        d.last().copied().unwrap_or_default()
    );
    let mut g = c.benchmark_group("suite");
    g.sample_size(10).measurement_time(Duration::from_secs(60)).warm_up_time(Duration::from_secs(1));
    g.bench_function("builtin_all_probes", |b| b.iter(run));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
