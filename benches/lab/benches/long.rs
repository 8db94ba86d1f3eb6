//! A long conversation's cost per turn (issue 29): the probe `scripts/long-probe N` makes — N turns of a
//! Read of a two-line file, then a text turn — run by the lab on the built-in subject as `probelab run`
//! runs it (`harness::lab::run_probe` on the runtime a probe runs on: sandbox, stub, loop, record,
//! checks, transcript render and normalisation, observation), for N = 10, 100, 1000.
//!
//! Every request carries the whole conversation (the API's rule), so the wire's bytes grow with the
//! square of the turns; the record (requests stored by prefix: `stub_messages::stored`) and the work
//! after the run (on each request's new part) grow with the turns. Criterion reports one run; its
//! throughput is in turns, so `thrpt` is turns per second. The bench prints each N's time per turn and
//! the record's bytes.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use harness::lab::{run_probe, Layout};
use std::time::Duration;

fn probe_text(turns: usize) -> String {
    let mut s = format!(
        "id = \"long.read-{turns}\"\nclaims = [\"READ-1\"]\nabout = \"a long conversation\"\nsubjects = [\"builtin\"]\ndeadline_secs = {}\n\
         [fixture]\nfiles.\"f.txt\" = \"one\\ntwo\\n\"\n[subject.builtin]\nmax_turns = {}\n",
        60 + turns,
        turns + 1
    );
    for _ in 0..turns {
        s.push_str("[[turn]]\ntool_use = [{ name = \"Read\", input = { file_path = \"{cwd}/f.txt\" } }]\n");
    }
    s.push_str("[[turn]]\ntext = \"done\"\n[[check]]\nresult = 1\ncontains = \"two\"\n");
    s.push_str(&format!("[[check]]\nresult = {turns}\nis_error = false\n"));
    s
}

fn bench(c: &mut Criterion) {
    let rt = harness::suite::probe_runtime().unwrap_or_else(|e| panic!("{e}"));
    let layout = Layout::repo();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut g = c.benchmark_group("long");
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(5));
    for turns in [10usize, 100, 1000] {
        let path = dir.path().join(format!("long-{turns}.toml"));
        std::fs::write(&path, probe_text(turns)).unwrap_or_else(|e| panic!("{e}"));
        let probe = harness::probe::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let once = || {
            let report = rt
                .block_on(run_probe(&probe, &harness::subject::SubjectId::builtin(), &layout, false))
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(report.passed(), "{:?}", report.failures());
            report
        };
        // outside criterion's statistics: where a run's time went, per turn
        let runs = if turns >= 1000 { 3 } else { 10 };
        let (mut all, mut run) = (Duration::ZERO, Duration::ZERO);
        for _ in 0..runs {
            let t0 = std::time::Instant::now();
            let r = once();
            all += t0.elapsed();
            run += r.timing.map(|t| t.run).unwrap_or_default();
        }
        let per = |d: Duration| d.as_secs_f64() * 1e6 / (runs * turns) as f64;
        println!(
            "long/{turns}: {:.1} µs per turn ({:.1} µs the run, {:.1} µs after it); transcript {} bytes",
            per(all),
            per(run),
            per(all.saturating_sub(run)),
            once().transcript.len()
        );
        g.throughput(Throughput::Elements(turns as u64));
        g.bench_with_input(BenchmarkId::from_parameter(turns), &turns, |b, _| b.iter(once));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
