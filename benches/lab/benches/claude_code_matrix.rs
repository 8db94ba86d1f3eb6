//! A Claude Code matrix estimate: how many (probe, version) cells an hour of this machine runs.
//!
//! Not criterion: a cell is a real binary run of about a second, and the figure that matters is the
//! throughput of the whole matrix. `cargo bench -p probelab-lab-benches --bench claude_code_matrix` runs
//! `probelab matrix`'s own loop ([`harness::observatory::matrix`], fresh: every cell, no cell kept) on
//! each version of `$PROBELAB_BENCH_VERSIONS` (comma list; default `2.1.235,2.1.333`, the versions
//! scripts/setup installs) that is already installed in the cache (this bench installs nothing), at the
//! matrix's default `-j` (`$PROBELAB_BENCH_JOBS` overrides), and prints per version the wall time and
//! cells per minute, then the matrix rate and what the whole cache's versions would take at it. The
//! first version's cell durations order the next one's cells, longest first, as in a pass. Outcomes
//! are counted, not required.

use harness::lab::Layout;
use harness::observatory::{matrix, Goldens, MatrixOptions};
use harness::observe::Outcome;
use std::path::Path;
use std::time::Instant;

fn main() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let probes = harness::probe::load_all(&[repo.join("probes")]).unwrap_or_else(|e| panic!("{e}"));
    let cache = harness::subject::claude_code::cache_root().join("claude-code");
    let wanted = std::env::var("PROBELAB_BENCH_VERSIONS").unwrap_or_else(|_| "2.1.235,2.1.333".into());
    let versions: Vec<String> = wanted
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| cache.join(v).join("node_modules").is_dir())
        .collect();
    assert!(
        !versions.is_empty(),
        "none of {wanted} is installed under {}: scripts/setup installs 2.1.235",
        cache.display()
    );
    let installed = std::fs::read_dir(&cache)
        .map(|d| d.filter_map(Result::ok).filter(|e| e.path().join("node_modules").is_dir()).count())
        .unwrap_or(0);
    let layout = Layout {
        fixtures: repo.join("fixtures"),
        golden: repo.join("golden"),
        engine: harness::probe::sandbox::probelab_binary(),
        subjects: Default::default(),
    };
    let jobs = std::env::var("PROBELAB_BENCH_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or_else(harness::observatory::default_jobs);
    let rt = harness::suite::runtime(jobs).unwrap_or_else(|e| panic!("{e}"));
    let out = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let opts =
        MatrixOptions { out: out.path().to_path_buf(), fresh: true, goldens: Goldens::Compare, jobs, bless_only: None };
    println!("claude_code_matrix: -j {jobs}, versions {}", versions.join(", "));
    println!("{:>10} {:>6} {:>8} {:>8} {:>7} {:>10}", "version", "cells", "passed", "error", "wall s", "cells/min");
    let (mut cells, mut secs) = (0usize, 0f64);
    for v in &versions {
        let (mut n, mut passed, mut errors) = (0usize, 0usize, 0usize);
        let t0 = Instant::now();
        let ran = rt.block_on(matrix(&probes, std::slice::from_ref(v), &layout, &opts, &mut |c| {
            n += 1;
            passed += usize::from(c.observation.outcome == Outcome::Pass);
            errors += usize::from(c.observation.outcome == Outcome::Error);
        }));
        if let Err(e) = ran {
            panic!("the matrix on {v}: {e}");
        }
        let wall = t0.elapsed().as_secs_f64();
        println!("{v:>10} {n:>6} {passed:>8} {errors:>8} {wall:>7.1} {:>10.1}", n as f64 * 60.0 / wall);
        cells += n;
        secs += wall;
    }
    let rate = cells as f64 * 60.0 / secs;
    let per_version = cells as f64 / versions.len() as f64;
    println!(
        "claude_code_matrix: {rate:.1} cells (probes x versions) per minute on this machine; the {installed} installed versions x {per_version:.0} probes would take {:.1} min, 1 hour runs {:.0} cells",
        installed as f64 * per_version / rate,
        rate * 60.0
    );
}
