//! The version matrix as test trials: one trial per (version, claude-code probe), named
//! `<version>/<probe id>`, so cargo-nextest spreads a matrix over partitions and machines:
//!
//! ```sh
//! PROBELAB_MATRIX_VERSIONS=2.1.235,2.1.332 PROBELAB_MATRIX_OUT=shard-1 \
//!   cargo nextest run -p harness --test matrix --partition count:1/3
//! probelab report shard-1 shard-2 shard-3          # the matrix one run would give
//! ```
//!
//! - `PROBELAB_MATRIX_VERSIONS`: the versions, a spec of `probelab versions` (`2.1.235,2.1.332`,
//!   `every 10 of >=2.1.235`, …). Unset: no trials (the matrix is not part of a plain `cargo test`; the
//!   reference version's probes are, in `tests/probes.rs`).
//! - `PROBELAB_MATRIX_OUT`: where each trial writes its cell (`<out>/<version>/<probe>.json`); default
//!   `target/probelab/matrix-tests`.
//!
//! A trial fails only when its cell is an error (the version could not be installed, the probe could not
//! run): a changed or n/a outcome is the matrix's data, not a test failure. Goldens are compared (their
//! outcome is in the cell), never written.

use harness::lab::Layout;
use harness::observatory::{run_cell, write_cell, Goldens};
use harness::observe::Outcome;
use harness::probe::load_all;
use libtest_mimic::{Arguments, Failed, Trial};
use std::path::PathBuf;
use std::sync::Arc;

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let mut layout = Layout::repo();
    layout.engine = PathBuf::from(env!("CARGO_BIN_EXE_probelab"));
    let root = layout.golden.join("..");
    let versions: Vec<String> = match std::env::var("PROBELAB_MATRIX_VERSIONS") {
        Ok(spec) if !spec.trim().is_empty() => match harness::observatory::cli::select(&spec) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("PROBELAB_MATRIX_VERSIONS={spec}: {e}");
                return std::process::ExitCode::from(101);
            }
        },
        _ => Vec::new(),
    };
    let out = std::env::var_os("PROBELAB_MATRIX_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target").join("probelab").join("matrix-tests"));
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
    let mut trials = Vec::new();
    for v in &versions {
        for p in probes.iter().filter(|p| p.applies_to(&harness::subject::SubjectId::reference())) {
            let (probe, version, layout, out, rt) = (p.clone(), v.clone(), layout.clone(), out.clone(), rt.clone());
            trials.push(Trial::test(format!("{v}/{}", p.id), move || {
                let obs = rt.block_on(run_cell(&probe, &version, &layout, Goldens::Compare));
                write_cell(&out, &obs).map_err(Failed::from)?;
                if obs.outcome == Outcome::Error {
                    return Err(format!("{} on {version}: {}", probe.id, obs.reason).into());
                }
                Ok(())
            }));
        }
    }
    libtest_mimic::run(&args, trials).exit_code()
}
