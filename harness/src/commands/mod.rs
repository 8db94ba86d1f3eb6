//! The use cases of the `probelab` command line, as library functions: `main.rs` parses the arguments
//! and calls these (and [`crate::conformance::run`], [`crate::subject::dialect_cli::check`], the
//! observatory's and the install cache's own), so that tests and benches reach what the command does.

pub mod diff;
pub mod discover;
pub mod project;
pub mod run;

use std::path::PathBuf;
use std::process::ExitCode;

/// This binary: the built-in engine of exec probes, and the confinement's launcher.
pub fn engine() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("probelab"))
}

/// Runs `f` as the supervised worker: SIGINT / SIGTERM / a SIGKILL of this process leave nothing behind
/// (crate::cleanup), and nothing a probe started outlives the run (orphans come to the worker: it is
/// their subreaper).
pub fn supervised(f: impl FnOnce() -> ExitCode) -> ExitCode {
    if let crate::cleanup::Role::Supervised(code) = crate::cleanup::supervise() {
        return code;
    }
    let code = f();
    // a stop signal ends the run (its subject killed) and exits with 128 + the signal: not this code
    while crate::cleanup::stopping() {
        std::thread::park();
    }
    probelab_runtime::process::kill_own_descendants();
    code
}

/// The probes under `paths`, whose `subjects` may name the project's subjects.
pub fn load_probes(
    project: &crate::project::Project,
    paths: &[PathBuf],
) -> Result<Vec<crate::probe::Probe>, crate::probe::LoadError> {
    crate::probe::load_all_with(paths, &project.known())
}
