//! Limits on what a confined subject can take of the host (issue 41, item 5): processes at once and
//! memory, per run, through the kernel's cgroups — the process-count (`pids`) and `memory`
//! controllers of a cgroup-v1 hierarchy (`/sys/fs/cgroup/pids`, `/sys/fs/cgroup/memory`) or of the
//! unified v2 one, where the lab may make groups there (root on most hosts, as the Bash tool's
//! fork-bomb guard needs). A run's group is made before its subject starts; the confinement's launcher
//! joins it first thing ([`probelab_runtime::confine::ns`]'s `--cgroup`), so everything the subject
//! starts is counted. A subject that reaches a limit is stopped there by the kernel (a fork refused,
//! the process the kernel's OOM killer chose killed) and the run fails an invariant that says which
//! limit it reached ([`RunLimits::reached`]); the host never feels it. Where no hierarchy can be
//! written, no limit applies, and nothing says otherwise: the Bash tool keeps its own guard.
//!
//! The largest file the subject may write is a limit of its processes ([`MAX_FILE_BYTES`],
//! `RLIMIT_FSIZE`, needing no cgroup): a file of the sandbox that reached it is the verdict
//! ([`files_at_limit`]). The sandbox's disk as a whole is not bounded: a subject writing many files,
//! each under the limit, fills what the host's disk holds.
//!
//! Decisions: defaults ([`MAX_PROCESSES`], [`MAX_MEMORY_BYTES`]), far above what any probe of the
//! catalogue takes (Claude Code at its busiest: ~40 processes, ~700 MB), which the lab's environment
//! may change for a run ([`PROCESSES_ENV`], [`MEMORY_ENV`]); a probe cannot raise them yet.
//! The built-in runtime's Bash commands join the fork-bomb guard's group of their own instead of the
//! run's pids group (a process is in one group per hierarchy), so for them the guard's 256 is the
//! limit; the memory group holds every process of the run.

use std::path::{Path, PathBuf};

/// The most processes a run's subject may have at once.
pub const MAX_PROCESSES: u64 = 2048;

/// The most memory a run's subject may use (RSS and page cache charged to its group): 6 GiB.
pub const MAX_MEMORY_BYTES: u64 = 6 << 30;

/// The largest file a run's subject may write: 1 GiB (`RLIMIT_FSIZE`, set by the confinement's launcher
/// and inherited by everything the subject starts; a write past it is refused and the writer gets
/// `SIGXFSZ`). A disk filled with one file is the usual way; what it does not bound — many files, each
/// under it — is said in the module's docs.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// The lab's environment may lower or raise the defaults for a whole run of probelab (the limits'
/// own tests; a host with less memory): processes at once.
pub const PROCESSES_ENV: &str = "PROBELAB_LIMIT_PROCESSES";
/// The same for memory, in MiB.
pub const MEMORY_ENV: &str = "PROBELAB_LIMIT_MEMORY_MB";
/// The same for the largest file, in MiB.
pub const FILE_ENV: &str = "PROBELAB_LIMIT_FILE_MB";

/// The largest file in force: [`MAX_FILE_BYTES`], or the environment's ([`FILE_ENV`]).
pub fn file_limit() -> u64 {
    std::env::var(FILE_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|n| *n > 0)
        .map_or(MAX_FILE_BYTES, |m| m << 20)
}

/// The files under `sandbox` that reached the largest-file limit `limit` (a write past it was
/// refused), in words; each path relative to the sandbox. Links are not followed.
pub fn files_at_limit(sandbox: &Path, limit: u64) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![sandbox.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(meta) = std::fs::symlink_metadata(e.path()) else { continue };
            if meta.is_dir() {
                todo.push(e.path());
            } else if meta.is_file() && meta.len() >= limit {
                let rel = e.path().strip_prefix(sandbox).map(Path::to_path_buf).unwrap_or_else(|_| e.path());
                out.push(rel.display().to_string());
            }
        }
    }
    out.sort();
    if out.is_empty() {
        return out;
    }
    vec![format!(
        "the subject reached its largest-file limit of {} MiB (writes past it refused): {}",
        limit >> 20,
        out.join(", ")
    )]
}

/// The limits in force: the defaults, or the environment's ([`PROCESSES_ENV`], [`MEMORY_ENV`]).
pub fn in_force() -> (u64, u64) {
    let read = |k: &str| std::env::var(k).ok().and_then(|v| v.trim().parse::<u64>().ok()).filter(|n| *n > 0);
    (read(PROCESSES_ENV).unwrap_or(MAX_PROCESSES), read(MEMORY_ENV).map(|m| m << 20).unwrap_or(MAX_MEMORY_BYTES))
}

/// A run's cgroups: removed (once empty) when dropped.
#[derive(Debug, Default)]
pub struct RunLimits {
    /// The pids group's directory, when one could be made.
    pids: Option<PathBuf>,
    /// The memory group's directory.
    memory: Option<PathBuf>,
    /// cgroup v2: one directory holds both.
    unified: bool,
    /// The limits set: (processes, memory bytes).
    set: (u64, u64),
}

/// Where groups are made: (pids parent, memory parent, unified).
fn parents() -> Option<(PathBuf, PathBuf, bool)> {
    let v1 = (Path::new("/sys/fs/cgroup/pids"), Path::new("/sys/fs/cgroup/memory"));
    if v1.0.join("cgroup.procs").is_file() || v1.1.join("cgroup.procs").is_file() {
        return Some((v1.0.to_path_buf(), v1.1.to_path_buf(), false));
    }
    let v2 = Path::new("/sys/fs/cgroup");
    let controllers = std::fs::read_to_string(v2.join("cgroup.subtree_control")).unwrap_or_default();
    (controllers.contains("pids") || controllers.contains("memory")).then(|| (v2.to_path_buf(), v2.to_path_buf(), true))
}

/// Removes the groups of runs whose probelab is gone (`probelab-run-PID-N` where no process PID is
/// alive: a lab killed with SIGKILL never dropped its [`RunLimits`]), once empty; the first run of a
/// later probelab does it, so a killed run leaves no group for long. A group that still holds a
/// process is left alone.
pub fn sweep(parent: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("probelab-run-").and_then(|r| r.split('-').next()) else { continue };
        if pid.parse::<u32>().is_err() || Path::new("/proc").join(pid).exists() {
            continue;
        }
        if std::fs::remove_dir(e.path()).is_ok() {
            removed.push(name);
        }
    }
    removed
}

impl RunLimits {
    /// Makes the run's groups with the default limits; a hierarchy that cannot be written is left out.
    pub fn create() -> RunLimits {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let Some((pids_parent, memory_parent, unified)) = parents() else { return RunLimits::default() };
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| {
            sweep(&pids_parent);
            sweep(&memory_parent);
        });
        let (processes, memory) = in_force();
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let name = format!("probelab-run-{}-{n}", std::process::id());
        let make = |parent: &Path, file: &str, value: u64| {
            let dir = parent.join(&name);
            if !dir.is_dir() && std::fs::create_dir(&dir).is_err() {
                return None;
            }
            if std::fs::write(dir.join(file), value.to_string()).is_err() {
                let _ = std::fs::remove_dir(&dir);
                return None;
            }
            Some(dir)
        };
        if unified {
            let dir = make(&pids_parent, "pids.max", processes);
            let with_memory =
                dir.as_ref().is_some_and(|d| std::fs::write(d.join("memory.max"), memory.to_string()).is_ok());
            return RunLimits {
                pids: dir.clone(),
                memory: dir.filter(|_| with_memory),
                unified,
                set: (processes, memory),
            };
        }
        RunLimits {
            pids: make(&pids_parent, "pids.max", processes),
            memory: make(&memory_parent, "memory.limit_in_bytes", memory),
            unified,
            set: (processes, memory),
        }
    }

    /// The `cgroup.procs` files the subject's launcher joins: all of them (`whole`: the launcher holds
    /// the subject), or the memory group's alone (a process joining a session, which may sit in the
    /// Bash tool's guard group of the pids hierarchy).
    pub fn procs_files(&self, whole: bool) -> Vec<PathBuf> {
        let groups = match (self.unified, whole) {
            // v2: one group for both controllers; a session's processes stay where they are
            (true, true) => vec![&self.pids],
            (true, false) => vec![],
            (false, true) => vec![&self.pids, &self.memory],
            (false, false) => vec![&self.memory],
        };
        groups.into_iter().flatten().map(|d| d.join("cgroup.procs")).collect()
    }

    /// The limits the subject reached, in words (none: it stayed within them).
    pub fn reached(&self) -> Vec<String> {
        let count = |dir: &Option<PathBuf>, file: &str, key: &str| -> u64 {
            let Some(d) = dir else { return 0 };
            let text = std::fs::read_to_string(d.join(file)).unwrap_or_default();
            text.lines().filter_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok()).next().unwrap_or(0)
        };
        let mut out = Vec::new();
        let forks = count(&self.pids, "pids.events", "max ");
        if forks > 0 {
            out.push(format!(
                "the subject reached its limit of {} processes at once ({forks} forks refused)",
                self.set.0
            ));
        }
        let oom = if self.unified {
            count(&self.memory, "memory.events", "oom_kill ")
        } else {
            count(&self.memory, "memory.oom_control", "oom_kill ")
        };
        if oom > 0 {
            out.push(format!(
                "the subject reached its memory limit of {} MiB ({oom} processes killed by the kernel)",
                self.set.1 >> 20
            ));
        }
        out
    }
}

impl Drop for RunLimits {
    fn drop(&mut self) {
        for dir in [self.pids.take(), self.memory.take()].into_iter().flatten() {
            // the last processes of the run may still be going (a holder killed a moment ago): a group
            // is removed once empty; a few tries, a millisecond apart, bound it
            for _ in 0..200 {
                if std::fs::remove_dir(&dir).is_ok() || !dir.exists() {
                    break;
                }
                let _ = std::fs::write(dir.join("cgroup.kill"), "1");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_groups_of_a_probelab_that_is_gone_are_swept_and_no_other() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mine = format!("probelab-run-{}-1", std::process::id());
        // a pid above the kernel's pid_max (4194304 at most) is nobody's
        for name in ["probelab-run-4999999-1", "probelab-run-4999999-2", mine.as_str(), "probelab-run-x-1", "other"] {
            std::fs::create_dir(d.path().join(name)).unwrap_or_else(|e| panic!("{e}"));
        }
        // a group that still holds something stays (the kernel refuses to remove it; here: a file)
        std::fs::write(d.path().join("probelab-run-4999999-2").join("x"), "").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(super::sweep(d.path()), vec!["probelab-run-4999999-1".to_string()]);
        for name in ["probelab-run-4999999-2", mine.as_str(), "probelab-run-x-1", "other"] {
            assert!(d.path().join(name).is_dir(), "{name} kept");
        }
    }
}
