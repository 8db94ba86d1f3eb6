//! Where the wall time of one Claude Code probe run goes (issue 5): the binary's start-up (spawn → its
//! first request at the stub), the stub's time (arrival → last byte, summed over the exchanges), the
//! rest of the binary's life (its own work between requests), and the harness's overhead — everything
//! outside the binary's lifetime: sandbox, stub start and stop, checks, normalisation, golden compare.
//! The goal is an overhead under 5% of the run.
//!
//! Not criterion: one run takes seconds and its parts are what matters. `cargo bench -p probelab-benches
//! --bench claude_code_run` runs `probes/claude-code/unknown-tool.toml` (two requests, two tool calls)
//! `PROBELAB_BENCH_RUNS` times (default 5) on Claude Code 2.1.235 (installed by scripts/setup) and prints
//! each run's split and the medians.

use harness::lab::{golden_step, run_probe, Layout};
use std::path::Path;
use std::time::{Duration, Instant};

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // cargo passes --bench (and maybe a filter): nothing to parse
    let runs: usize = std::env::var("PROBELAB_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(5).max(1);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let layout = Layout::repo();
    let probe =
        harness::probe::load(&repo.join("probes/claude-code/unknown-tool.toml")).unwrap_or_else(|e| panic!("{e}"));
    let subject = format!("claude-code@{}", harness::subject::claude_code::REFERENCE_VERSION);
    let id = harness::subject::SubjectId::reference();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    // the install (and the binary's SHA-256) is cached before the first measured run
    harness::subject::claude_code::install(harness::subject::claude_code::REFERENCE_VERSION)
        .unwrap_or_else(|e| panic!("{e}"));
    println!("claude_code_run: {} on {subject}, {runs} runs", probe.id);
    println!(
        "{:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "run", "wall ms", "startup", "stub", "binary", "harness", "overhead"
    );
    let (mut walls, mut startups, mut stubs, mut overheads) = (vec![], vec![], vec![], vec![]);
    for i in 0..runs {
        let t0 = Instant::now();
        let report = rt.block_on(run_probe(&probe, &id, &layout, false)).unwrap_or_else(|e| panic!("{e}"));
        let golden = golden_step(&report, &layout, false).unwrap_or_else(|e| panic!("{e}"));
        let wall = t0.elapsed();
        assert!(report.passed(), "the probe failed: {:?}", report.failures());
        assert_eq!(golden, harness::lab::GoldenOutcome::Same, "the run differs from its golden");
        let t = report.timing.unwrap_or_else(|| panic!("a loop probe reports its timing"));
        let own = t.subject.saturating_sub(t.startup).saturating_sub(t.stub);
        let harness_time = wall.saturating_sub(t.subject);
        let overhead = 100.0 * harness_time.as_secs_f64() / wall.as_secs_f64();
        println!(
            "{:>4} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>8.2}%",
            i + 1,
            ms(wall),
            ms(t.startup),
            ms(t.stub),
            ms(own),
            ms(harness_time),
            overhead
        );
        walls.push(ms(wall));
        startups.push(ms(t.startup));
        stubs.push(ms(t.stub));
        overheads.push(overhead);
    }
    let overhead = median(overheads);
    println!(
        "median: wall {:.1} ms, startup {:.1} ms, stub {:.1} ms, harness overhead {overhead:.2}% (goal < 5%: {})",
        median(walls),
        median(startups),
        median(stubs),
        if overhead < 5.0 { "met" } else { "NOT met" }
    );
}
